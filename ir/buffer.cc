#include "ir/buffer.h"

namespace tunedb::ir {

std::int64_t BufferNode::NumElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

Buffer MakeBuffer(std::string name, std::vector<std::int64_t> shape, DataType dtype,
                  std::string scope) {
  auto b = std::make_shared<BufferNode>();
  b->name = std::move(name);
  b->shape = std::move(shape);
  b->dtype = dtype;
  b->scope = std::move(scope);
  return b;
}

}  // namespace tunedb::ir
