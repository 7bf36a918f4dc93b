// A schedule chosen by the input's bytes: the property tests' random
// scheduler (tests/ir/schedule/random_scheduler.h) with the input as its
// choices, for the fuzz targets schedule_steps and compiled_steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "fuzz/fuzz_check.h"
#include "fuzz/small_workloads.h"
#include "ir/mix.h"
#include "tests/ir/schedule/random_scheduler.h"

namespace tunedb::fuzz {

// A UniformRandomBitGenerator that hands out the input a byte a draw: the
// scheduler's choices are small (a block of four, a loop of six, one of
// fourteen primitives), so each byte of the input is one decision the
// fuzzer can change. Once the input is used up it goes on with a fixed
// sequence of mixed bytes: a constant would never end std::shuffle's
// rejection loop.
class InputBytes {
 public:
  using result_type = std::uint8_t;
  InputBytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() {
    if (at_ < size_) return data_[at_++];
    return static_cast<result_type>(ir::Mix64(++after_ * ir::kGoldenGamma));
  }
  bool used_up() const { return at_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
  std::uint64_t after_ = 0;
};

struct ScheduledByInput {
  const SmallWorkload& workload;
  ir::Schedule schedule;
  std::string steps;  // what was tried, for a finding's message
};

// The first byte picks the workload, the second seeds the schedule's own
// samples (tile sizes, compute locations), and the rest are the
// scheduler's choices, up to 24 primitives. nullopt for an input too short.
// A primitive that throws anything but ScheduleError is a finding.
inline std::optional<ScheduledByInput> ScheduleByInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return std::nullopt;
  const SmallWorkload& workload = SmallWorkloads()[data[0] % SmallWorkloads().size()];
  ScheduledByInput s{workload, ir::Schedule(workload.func, data[1]), ""};
  InputBytes bytes(data + 2, size - 2);
  ir::testing::BasicRandomScheduler<InputBytes&> random(s.schedule, bytes);
  constexpr int kMaxSteps = 24;
  for (int step = 0; step < kMaxSteps && !bytes.used_up(); ++step) {
    try {
      s.steps += random.Step() + " ";
    } catch (const ir::ScheduleError&) {
      s.steps += "(refused) ";
    } catch (const std::exception& e) {
      Finding(s.workload.spec + ": not a ScheduleError after " + s.steps + ": " + e.what());
    }
  }
  return s;
}

}  // namespace tunedb::fuzz
