// The splitmix64 finalizer (Steele, Lea and Flood): a bijective scramble of
// 64 bits whose every output bit depends on every input bit. The structural
// hash, the schedule's random numbers and the search's design keys use it.
#pragma once

#include <cstdint>

namespace tunedb::ir {

inline std::uint64_t Mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The golden-ratio increment splitmix64 adds before mixing.
inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

}  // namespace tunedb::ir
