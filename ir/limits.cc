#include "ir/limits.h"

#include <string>

#include "ir/error.h"

namespace tunedb::ir {
namespace {

// a * b, or -1 when the product exceeds `limit` (both factors are positive).
std::int64_t CheckedProduct(std::int64_t a, std::int64_t b, std::int64_t limit) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out > limit) return -1;
  return out;
}

std::string ShapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

void CheckBufferSize(const Buffer& b) {
  std::int64_t bytes = DataTypeBytes(b->dtype);
  for (std::int64_t d : b->shape) {
    bytes = CheckedProduct(bytes, d, kMaxBufferBytes);
    if (bytes < 0) {
      throw IrError("buffer '" + b->name + "' of shape " + ShapeText(b->shape) + " " +
                    std::string(DataTypeName(b->dtype)) + " is larger than tunedb's limit of 2^48 bytes (256 TiB)");
    }
  }
}

void CheckIterationCount(const std::string& block, const std::vector<std::int64_t>& extents) {
  std::int64_t points = 1;
  for (std::int64_t e : extents) {
    points = CheckedProduct(points, e, kMaxBlockIterations);
    if (points < 0) throw IrError("block '" + block + "' iterates more than tunedb's limit of 2^48 times");
  }
}

void CheckProgramSize(const PrimFunc& func) {
  for (const Buffer& b : func.params) CheckBufferSize(b);
  for (const BlockNode* block : CollectBlocks(func)) {
    for (const Buffer& b : block->alloc_buffers) CheckBufferSize(b);
    std::vector<std::int64_t> extents;
    for (const IterVar& iv : block->iter_vars) extents.push_back(iv.extent);
    CheckIterationCount(block->name, extents);
  }
}

}  // namespace tunedb::ir
