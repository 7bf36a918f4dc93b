// A tensor-expression builder in the spirit of TVM's te.compute.
//
// Users describe stages (placeholders, element-wise computes, reductions);
// Build() turns them into the canonical unscheduled program: one block per
// stage, in definition order, each under its own loop nest with the spatial
// axes outermost and the reduction axes innermost, in the order given.
//
//   te::Builder b;
//   auto A = b.Placeholder("A", {M, K});
//   auto B = b.Placeholder("B", {K, N});
//   auto C = b.Reduce("C", {{"i", M}, {"j", N}}, te::ReduceOp::kSum, {{"k", K}},
//                     [&](const te::Vars& s, const te::Vars& r) {
//                       return A(s[0], r[0]) * B(r[0], s[1]);
//                     });
//   PrimFunc f = b.Build({A, B, C});
//
// Naming follows TE: loops take the axis names (i, j, k), block iteration
// variables are "v_" + axis name, blocks take the stage name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/stmt.h"

namespace tunedb::ir::te {

using Vars = std::vector<Expr>;

struct Axis {
  std::string name;
  std::int64_t extent;
};

enum class ReduceOp : std::uint8_t { kSum, kMax, kMin };

class Builder;

// Tensor indices may be expressions or plain integers.
inline Expr AsIndex(const Expr& e) { return e; }
inline Expr AsIndex(std::int64_t v) { return IntImm(DataType::kInt32, v); }

// A tensor is a buffer; indexing it yields a load expression.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Buffer buffer) : buffer_(std::move(buffer)) {}

  Expr operator()(std::vector<Expr> indices) const { return Load(buffer_, std::move(indices)); }
  template <typename... Ts>
  Expr operator()(Ts... indices) const {
    return Load(buffer_, std::vector<Expr>{AsIndex(indices)...});
  }
  const Buffer& buffer() const { return buffer_; }

 private:
  Buffer buffer_;
};

// Placeholder, Compute and Reduce throw IrError when the new tensor, or the
// stage's iteration domain, is over a size limit of ir/limits.h.
class Builder {
 public:
  Tensor Placeholder(std::string name, std::vector<std::int64_t> shape,
                     DataType dtype = DataType::kFloat32);

  // out[axes] = fn(axes)
  Tensor Compute(std::string name, std::vector<Axis> axes,
                 const std::function<Expr(const Vars&)>& fn);

  // out[axes] = op over reduce_axes of fn(axes, reduce_axes)
  Tensor Reduce(std::string name, std::vector<Axis> axes, ReduceOp op,
                std::vector<Axis> reduce_axes,
                const std::function<Expr(const Vars&, const Vars&)>& fn);

  // The program whose parameters are `params` (inputs, then outputs). Every
  // computed stage that an output depends on becomes a block; the ones that
  // are not parameters are allocated in the root block. Throws IrError when
  // an output depends on a placeholder that is not a parameter. (Sizes were
  // checked as each tensor was added: every buffer and block comes from one.)
  PrimFunc Build(const std::vector<Tensor>& params) const;

 private:
  struct Stage {
    Buffer output;
    std::vector<Axis> axes;
    std::vector<Axis> reduce_axes;
    Vars axis_vars;
    Vars reduce_vars;
    ReduceOp op = ReduceOp::kSum;
    bool is_reduce = false;
    Expr body;  // over axis_vars and reduce_vars
  };
  std::vector<Stage> stages_;       // in definition order
  std::vector<Buffer> placeholders_;
};

// The identity element of a reduction (0, -inf, +inf).
Expr ReduceIdentity(ReduceOp op, DataType dtype);

}  // namespace tunedb::ir::te
