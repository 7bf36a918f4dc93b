// The splitmix64 finalizer (Steele, Lea and Flood): a bijective scramble of
// 64 bits whose every output bit depends on every input bit. The structural
// hash, the schedule's random numbers and the search's design keys use it.
#pragma once

#include <cstdint>
#include <string_view>

namespace tunedb::ir {

inline std::uint64_t Mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The golden-ratio increment splitmix64 adds before mixing.
inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// FNV-1a 64 of the bytes, finalized by Mix64, which spreads FNV's weak
// low-bit mixing over all bits: the structural hash of an encoding, and the
// checksum of a saved cost model. Not for adversaries: it catches damage.
inline std::uint64_t HashBytes(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (char c : bytes) {
    h ^= static_cast<std::uint8_t>(c);
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return Mix64(h);
}

}  // namespace tunedb::ir
