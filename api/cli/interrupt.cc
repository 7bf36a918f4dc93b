#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>

#include "api/cli/commands.h"

namespace tunedb::cli {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<std::int64_t> g_first_signal_ns{0};

// One request to stop often arrives twice: coreutils `timeout` signals the
// tuner and then its whole process group, and a script may do the same.
// Only a signal this long after the first is a second request.
constexpr std::int64_t kRepeatWindowNs = 1'000'000'000;

// clock_gettime is async-signal-safe (POSIX), as are lock-free atomics.
std::int64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

extern "C" void OnInterrupt(int sig) {
  const std::int64_t now = MonotonicNs();
  if (!g_interrupted.exchange(true)) {
    g_first_signal_ns.store(now);
    return;
  }
  if (now - g_first_signal_ns.load() < kRepeatWindowNs) return;
  // The signal is blocked while this runs: it is delivered, with its default
  // action, as soon as the handler returns, so the process ends by it.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

InterruptHandler::InterruptHandler() {
  g_interrupted.store(false);
  g_first_signal_ns.store(0);
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
}

InterruptHandler::~InterruptHandler() {
  // After a request to stop, the handler stays: the same request may still
  // be on its way (`timeout`'s second delivery), and with the default
  // action back it killed a tuner that had stopped and was printing its
  // report. A signal a second or more after the first still ends the
  // process.
  if (g_interrupted.load()) return;
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
}

const std::atomic<bool>* InterruptHandler::flag() const { return &g_interrupted; }

}  // namespace tunedb::cli
