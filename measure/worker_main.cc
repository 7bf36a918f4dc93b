// tunedb-worker: builds, verifies and times candidates for a Runner in
// another process (see runner.h). Not meant to be run by hand.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "measure/worker.h"

namespace {

// The process that started this worker holds the only write end of its
// stdin. When that process is gone (ended by `timeout`, killed, crashed),
// the pipe hangs up, and the worker must go too: a request still running
// (a long timing, a kernel that never ends) would otherwise run on with
// no one to read its answer. A worker of `tunedb run --repeat 100000000`
// under `timeout 20` ran on alone for ten minutes before it was killed.
// Asked for no events, poll returns only on hang-up or error, so pending
// requests do not wake it.
void ExitWhenTheRunnerIsGone() {
  std::thread([] {
    pollfd in{STDIN_FILENO, 0, 0};
    while (::poll(&in, 1, -1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }).detach();
}

// The runner starts this process with SIGINT and SIGTERM blocked: one
// sent to the tuner's process group before the worker had a group of its
// own is the tuner's, not this worker's. Ignoring a signal discards it
// while pending; then both go back to their defaults, so the worker can
// still be stopped by its own pid.
void DropSignalsMeantForTheTuner() {
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGINT);
  sigaddset(&both, SIGTERM);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM}) {
    ::sigaction(sig, &ignore, nullptr);
    ::sigaction(sig, &fallback, nullptr);
  }
  ::sigprocmask(SIG_UNBLOCK, &both, nullptr);
}

}  // namespace

int main() {
  DropSignalsMeantForTheTuner();
  ExitWhenTheRunnerIsGone();
  return tunedb::measure::RunWorker(stdin, stdout);
}
