// Fuzz target: schedule primitives chosen by the input's bytes.
//
// The property tests (tests/ir/schedule/property_test.cc) apply random
// primitives from a seed; here the same scheduler draws its choices (the
// workload, the block, the primitive, its loops and factors) from the
// input, so coverage guidance steers towards sequences that reach new code.
// Promise: a primitive either applies or throws ScheduleError and leaves
// the schedule as it was; the schedule computes what the unscheduled
// program computes, and its trace replays to the same program.
#include <cstdint>
#include <limits>
#include <string>

#include "fuzz/fuzz_check.h"
#include "fuzz/small_workloads.h"
#include "ir/mix.h"
#include "tests/ir/schedule/random_scheduler.h"

namespace {

using namespace tunedb;

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto& workloads = fuzz::SmallWorkloads();
  const fuzz::SmallWorkload& w = workloads[data[0] % workloads.size()];
  // The schedule's own samples (tile sizes, compute locations) from the
  // second byte.
  ir::Schedule sch(w.func, data[1]);
  InputBytes bytes(data + 2, size - 2);
  ir::testing::BasicRandomScheduler<InputBytes&> random(sch, bytes);
  constexpr int kMaxSteps = 24;
  std::string steps;
  for (int step = 0; step < kMaxSteps && !bytes.used_up(); ++step) {
    try {
      steps += random.Step() + " ";
    } catch (const ir::ScheduleError&) {
      steps += "(refused) ";
    } catch (const std::exception& e) {
      fuzz::Finding(w.spec + ": not a ScheduleError after " + steps + ": " + e.what());
    }
  }
  fuzz::CheckSchedule(w.func, sch, w.spec + " after " + steps);
  return 0;
}
