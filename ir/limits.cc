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

void CheckBuffer(const Buffer& b) {
  std::int64_t bytes = DataTypeBytes(b->dtype);
  for (std::int64_t d : b->shape) {
    bytes = CheckedProduct(bytes, d, kMaxBufferBytes);
    if (bytes < 0) {
      throw IrError("buffer '" + b->name + "' of shape " + ShapeText(b->shape) + " " +
                    std::string(DataTypeName(b->dtype)) + " is larger than tunedb's limit of 2^48 bytes (256 TiB)");
    }
  }
}

}  // namespace

void CheckProgramSize(const PrimFunc& func) {
  for (const Buffer& b : func.params) CheckBuffer(b);
  for (const BlockNode* block : CollectBlocks(func)) {
    for (const Buffer& b : block->alloc_buffers) CheckBuffer(b);
    std::int64_t points = 1;
    for (const IterVar& iv : block->iter_vars) {
      points = CheckedProduct(points, iv.extent, kMaxBlockIterations);
      if (points < 0) {
        throw IrError("block '" + block->name + "' iterates more than tunedb's limit of 2^48 times");
      }
    }
  }
}

}  // namespace tunedb::ir
