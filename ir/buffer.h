// A buffer: a named, typed, statically shaped n-dimensional array.
//
// Buffers are identified by object identity (the shared pointer), never by
// name: two buffers may share a name, and structural comparison ignores
// names altogether. Shapes are static because tuning specializes a program
// to one shape.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tunedb::ir {

struct BufferNode {
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;
  // "global" for function parameters and intermediates; "local" for small
  // per-thread buffers (e.g. a cache_write accumulator meant for registers).
  std::string scope = "global";
  // Set by lowering on a private buffer whose rows it padded so that a
  // masked vector at a row's end stays in the row (measure/lower.cc,
  // PaddedRow): the lanes past a row's data are read by nothing.
  bool padded_rows = false;

  std::int64_t NumElements() const;
};

using Buffer = std::shared_ptr<BufferNode>;

Buffer MakeBuffer(std::string name, std::vector<std::int64_t> shape,
                  DataType dtype = DataType::kFloat32, std::string scope = "global");

}  // namespace tunedb::ir
