// Does a scheduled program compute what its reference computes? Run both in
// the reference interpreter on the same random inputs. Free of GoogleTest,
// so that the fuzz targets (fuzz/) share the oracle with the tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/stmt.h"

namespace tunedb::ir::testing {

// Empty when `scheduled` computes what `reference` computes on inputs from
// `seed`; otherwise the reason.
inline std::string SameResult(const PrimFunc& reference, const PrimFunc& scheduled, std::uint64_t seed = 1) {
  std::vector<NDArray> expected = MakeArguments(reference, seed);
  std::vector<NDArray> actual = MakeArguments(scheduled, seed);
  try {
    Interpret(reference, expected);
    Interpret(scheduled, actual);
  } catch (const IrError& e) {
    return std::string("interpreter: ") + e.what();
  }
  for (int i : OutputParams(reference)) {
    std::string why;
    if (!AllClose(actual[i], expected[i], 1e-4, 1e-4, &why)) return "output " + std::to_string(i) + ": " + why;
  }
  return "";
}

// The largest buffer of the program (a parameter or an allocation), in
// bytes. A padding far past the shape makes a valid program too large to
// interpret (within limits.h, but terabytes).
inline std::int64_t LargestBufferBytes(const PrimFunc& func) {
  std::int64_t largest = 0;
  auto see = [&](const Buffer& b) { largest = std::max(largest, b->NumElements() * DataTypeBytes(b->dtype)); };
  for (const Buffer& b : func.params) see(b);
  for (const BlockNode* block : CollectBlocks(func)) {
    for (const Buffer& b : block->alloc_buffers) see(b);
  }
  return largest;
}

}  // namespace tunedb::ir::testing
