#include "ir/te.h"

#include <algorithm>
#include <limits>
#include <set>

#include "ir/error.h"
#include "ir/limits.h"

namespace tunedb::ir::te {
namespace {

Vars MakeAxisVars(const std::vector<Axis>& axes) {
  Vars vars;
  for (const Axis& a : axes) {
    if (a.extent < 1) {
      throw IrError("axis '" + a.name + "' has extent " + std::to_string(a.extent) +
                    " (must be at least 1)");
    }
    // Indices are int32 where they fit, as in TVM: an int32 variable
    // cannot count further (ir/limits.h).
    vars.push_back(MakeVar(a.name, a.extent > kMaxInt32Extent ? DataType::kInt64 : DataType::kInt32));
  }
  return vars;
}

// The loads of a block body, one region per distinct (buffer, indices) pair,
// in order of first appearance. Reads of `exclude` are left out: a
// reduction's read of its own output is implied by the update, as in TVM.
std::vector<BufferRegion> CollectReads(const Expr& body, const BufferNode* exclude) {
  std::vector<BufferRegion> reads;
  std::vector<const ExprNode*> seen;
  VisitExpr(body, [&](const Expr& e) {
    if (e->kind != ExprKind::kLoad || e->buffer.get() == exclude) return;
    for (const ExprNode* s : seen) {
      if (s->buffer == e->buffer && s->operands == e->operands) return;
    }
    seen.push_back(e.get());
    BufferRegion region{e->buffer, {}};
    for (const Expr& index : e->operands) region.ranges.push_back({index, IntImm(index->dtype, 1)});
    reads.push_back(std::move(region));
  });
  return reads;
}

}  // namespace

Expr ReduceIdentity(ReduceOp op, DataType dtype) {
  switch (op) {
    case ReduceOp::kSum: return MakeConst(dtype, 0);
    case ReduceOp::kMax:
      if (IsFloat(dtype)) return FloatImm(dtype, -std::numeric_limits<double>::infinity());
      return IntImm(dtype, dtype == DataType::kInt32 ? std::numeric_limits<std::int32_t>::min()
                                                     : std::numeric_limits<std::int64_t>::min());
    case ReduceOp::kMin:
      if (IsFloat(dtype)) return FloatImm(dtype, std::numeric_limits<double>::infinity());
      return IntImm(dtype, dtype == DataType::kInt32 ? std::numeric_limits<std::int32_t>::max()
                                                     : std::numeric_limits<std::int64_t>::max());
  }
  return nullptr;
}

Tensor Builder::Placeholder(std::string name, std::vector<std::int64_t> shape, DataType dtype) {
  for (std::int64_t d : shape) {
    if (d < 1) throw IrError("placeholder '" + name + "' has a dimension of " + std::to_string(d));
  }
  Buffer b = MakeBuffer(std::move(name), std::move(shape), dtype);
  CheckBufferSize(b);
  placeholders_.push_back(b);
  return Tensor(b);
}

Tensor Builder::Compute(std::string name, std::vector<Axis> axes,
                        const std::function<Expr(const Vars&)>& fn) {
  Stage s;
  s.axis_vars = MakeAxisVars(axes);
  s.body = fn(s.axis_vars);
  if (!s.body) throw IrError("compute '" + name + "': the body is empty");
  std::vector<std::int64_t> shape;
  for (const Axis& a : axes) shape.push_back(a.extent);
  CheckIterationCount(name, shape);
  s.axes = std::move(axes);
  s.output = MakeBuffer(std::move(name), std::move(shape), s.body->dtype);
  CheckBufferSize(s.output);
  stages_.push_back(s);
  return Tensor(s.output);
}

Tensor Builder::Reduce(std::string name, std::vector<Axis> axes, ReduceOp op,
                       std::vector<Axis> reduce_axes,
                       const std::function<Expr(const Vars&, const Vars&)>& fn) {
  if (reduce_axes.empty()) throw IrError("reduction '" + name + "' has no reduction axis");
  Stage s;
  s.is_reduce = true;
  s.op = op;
  s.axis_vars = MakeAxisVars(axes);
  s.reduce_vars = MakeAxisVars(reduce_axes);
  s.body = fn(s.axis_vars, s.reduce_vars);
  if (!s.body) throw IrError("reduction '" + name + "': the body is empty");
  if (s.body->dtype == DataType::kBool) throw IrError("reduction '" + name + "' over bool values");
  std::vector<std::int64_t> shape;
  for (const Axis& a : axes) shape.push_back(a.extent);
  std::vector<std::int64_t> domain = shape;
  for (const Axis& a : reduce_axes) domain.push_back(a.extent);
  CheckIterationCount(name, domain);
  s.axes = std::move(axes);
  s.reduce_axes = std::move(reduce_axes);
  s.output = MakeBuffer(std::move(name), std::move(shape), s.body->dtype);
  CheckBufferSize(s.output);
  stages_.push_back(s);
  return Tensor(s.output);
}

PrimFunc Builder::Build(const std::vector<Tensor>& params) const {
  std::set<const BufferNode*> param_set;
  for (const Tensor& t : params) {
    if (!param_set.insert(t.buffer().get()).second) {
      throw IrError("parameter '" + t.buffer()->name + "' is listed twice");
    }
  }
  // Walk stages backwards from the outputs to find the ones needed.
  std::set<const BufferNode*> needed;
  for (const Tensor& t : params) needed.insert(t.buffer().get());
  for (auto it = stages_.rbegin(); it != stages_.rend(); ++it) {
    if (!needed.count(it->output.get())) continue;
    VisitExpr(it->body, [&](const Expr& e) {
      if (e->kind == ExprKind::kLoad) needed.insert(e->buffer.get());
    });
  }
  for (const Buffer& p : placeholders_) {
    if (needed.count(p.get()) && !param_set.count(p.get())) {
      throw IrError("input '" + p->name + "' is used but not a parameter of the function");
    }
  }

  auto root = std::make_shared<BlockNode>();
  root->name = "root";
  std::vector<Stmt> nests;
  for (const Stage& s : stages_) {
    if (!needed.count(s.output.get())) continue;
    if (!param_set.count(s.output.get())) root->alloc_buffers.push_back(s.output);

    auto block = std::make_shared<BlockNode>();
    block->name = s.output->name;
    VarMap to_iter;
    std::vector<Expr> loop_vars;
    auto add_iter = [&](const Axis& axis, const Expr& var, IterKind kind) {
      Expr iv = MakeVar("v_" + axis.name, var->dtype);
      Expr loop_var = MakeVar(axis.name, var->dtype);
      block->iter_vars.push_back({iv, axis.extent, kind});
      block->bindings.push_back(loop_var);
      loop_vars.push_back(loop_var);
      to_iter[var.get()] = iv;
    };
    for (std::size_t i = 0; i < s.axes.size(); ++i) add_iter(s.axes[i], s.axis_vars[i], IterKind::kSpatial);
    for (std::size_t i = 0; i < s.reduce_axes.size(); ++i) {
      add_iter(s.reduce_axes[i], s.reduce_vars[i], IterKind::kReduce);
    }
    Expr value = Substitute(s.body, to_iter);
    std::vector<Expr> out_indices;
    for (std::size_t i = 0; i < s.axes.size(); ++i) out_indices.push_back(block->iter_vars[i].var);

    if (s.is_reduce) {
      Expr current = Load(s.output, out_indices);
      Expr combined = s.op == ReduceOp::kSum   ? current + value
                      : s.op == ReduceOp::kMax ? Max(current, value)
                                               : Min(current, value);
      block->init = MakeStore(s.output, out_indices, ReduceIdentity(s.op, s.output->dtype));
      block->body = MakeStore(s.output, out_indices, combined);
    } else {
      block->body = MakeStore(s.output, out_indices, value);
    }
    block->reads = CollectReads(value, s.is_reduce ? s.output.get() : nullptr);
    BufferRegion write{s.output, {}};
    for (const Expr& i : out_indices) write.ranges.push_back({i, IntImm(i->dtype, 1)});
    block->writes.push_back(std::move(write));

    Stmt nest = block;
    for (std::size_t i = loop_vars.size(); i-- > 0;) {
      nest = MakeFor(loop_vars[i], block->iter_vars[i].extent, nest);
    }
    nests.push_back(nest);
  }
  if (nests.empty()) throw IrError("the function computes nothing (no parameter is a computed stage)");
  root->body = nests.size() == 1 ? nests[0] : MakeSeq(std::move(nests));

  PrimFunc f;
  for (const Tensor& t : params) f.params.push_back(t.buffer());
  f.body = root;
  return f;
}

}  // namespace tunedb::ir::te
