// split, fuse and reorder.
#include <algorithm>

#include "ir/schedule/schedule_internal.h"

namespace tunedb::ir {

using sched::Apply;
using sched::Fail;
using sched::In;
using sched::MaxIterations;
using sched::Record;
using sched::Ref;
using sched::Refs;

std::vector<LoopRV> Schedule::Split(LoopRV loop_rv, const std::vector<SplitFactor>& factors,
                                    bool preserve_unit_iters, bool disable_predication) {
  State& s = *state_;
  const char* p = "split";
  std::vector<InstInput> inputs{In(loop_rv)};
  std::vector<LoopRV> out = Apply(s, p, [&] {
    auto loop = s.LoopOf(loop_rv, p);
    const std::string& name = loop->loop_var->name;
    if (factors.size() < 2) Fail(p, "loop " + name + ": at least two factors are needed");
    std::vector<std::int64_t> values(factors.size(), 0);
    int inferred = -1;
    std::int64_t product = 1;
    auto too_many = [&] {
      Fail(p, "loop " + name + ": the factors multiply to more iterations than its " +
                  std::string(DataTypeName(loop->loop_var->dtype)) + " variable can count");
    };
    for (std::size_t i = 0; i < factors.size(); ++i) {
      if (std::holds_alternative<std::monostate>(factors[i])) {
        if (inferred >= 0) Fail(p, "loop " + name + ": at most one factor may be None");
        inferred = static_cast<int>(i);
        continue;
      }
      values[i] = std::holds_alternative<std::int64_t>(factors[i]) ? std::get<std::int64_t>(factors[i])
                                                                   : s.ExprOf(std::get<ExprRV>(factors[i]), p);
      if (values[i] < 1) Fail(p, "loop " + name + ": factor " + std::to_string(values[i]) + " is not positive");
      if (__builtin_mul_overflow(product, values[i], &product) || product > MaxIterations(loop->loop_var->dtype)) {
        too_many();
      }
    }
    if (inferred >= 0) {
      values[inferred] = (loop->extent + product - 1) / product;
      product *= values[inferred];  // below extent + product: no int64 overflow
      if (product > MaxIterations(loop->loop_var->dtype)) too_many();
    } else if (product < loop->extent) {
      Fail(p, "loop " + name + ": the factors multiply to " + std::to_string(product) +
                  ", less than the loop extent " + std::to_string(loop->extent));
    }
    // Without its predicate, an imperfect split would run the body at
    // iterations past the extent, outside the blocks' domains.
    if (product > loop->extent && disable_predication) {
      Fail(p, "loop " + name + ": the factors multiply to " + std::to_string(product) + ", more than the extent " +
                  std::to_string(loop->extent) + ", which needs the predicate that disable_predication leaves out");
    }

    // New loops, outermost first, around the old body; the old variable
    // becomes ((l0 * f1 + l1) * f2 + l2) ...
    std::vector<std::shared_ptr<ForNode>> loops;
    Expr fused;
    for (std::size_t i = 0; i < values.size(); ++i) {
      auto l = std::make_shared<ForNode>();
      l->loop_var = MakeVar(name + "_" + std::to_string(i), loop->loop_var->dtype);
      l->extent = values[i];
      loops.push_back(l);
      fused = fused ? fused * IntImm(l->loop_var->dtype, values[i]) + l->loop_var : l->loop_var;
    }
    for (std::size_t i = 0; i + 1 < loops.size(); ++i) loops[i]->body = loops[i + 1];
    loops.back()->body = loop->body;
    SubstituteInPlace(loop->body, {{loop->loop_var.get(), fused}});
    if (product > loop->extent) {
      Expr in_range = Binary(ExprKind::kLt, fused, IntImm(fused->dtype, loop->extent));
      for (BlockNode* b : sched::BlocksIn(loop->body)) b->predicate = sched::AndPredicate(b->predicate, in_range);
    }
    sched::ReplaceStmt(s.func, loop.get(), loops[0]);
    std::vector<LoopRV> rvs;
    for (const auto& l : loops) rvs.push_back(s.AddLoop(l));
    return rvs;
  });
  for (const SplitFactor& f : factors) {
    if (std::holds_alternative<std::monostate>(f)) {
      inputs.emplace_back();
    } else if (std::holds_alternative<std::int64_t>(f)) {
      inputs.emplace_back(std::in_place_type<std::int64_t>, std::get<std::int64_t>(f));
    } else {
      inputs.emplace_back(std::in_place_type<RVRef>, Ref(std::get<ExprRV>(f)));
    }
  }
  Record(s, "Split", inputs, {preserve_unit_iters ? 1 : 0, disable_predication ? 1 : 0}, Refs(out));
  return out;
}

LoopRV Schedule::Fuse(const std::vector<LoopRV>& loop_rvs, bool preserve_unit_iters) {
  State& s = *state_;
  const char* p = "fuse";
  LoopRV out = Apply(s, p, [&] {
    if (loop_rvs.empty()) Fail(p, "no loops given");
    std::vector<std::shared_ptr<ForNode>> loops;
    for (LoopRV rv : loop_rvs) loops.push_back(s.LoopOf(rv, p));
    for (std::size_t i = 0; i + 1 < loops.size(); ++i) {
      if (loops[i]->body != loops[i + 1]) {
        Fail(p, "loop " + loops[i + 1]->loop_var->name + " is not the only child of loop " +
                    loops[i]->loop_var->name + " (fused loops must be directly nested)");
      }
    }
    // A loop that mixes spatial and reduction iterations would let the
    // reduction of one element start somewhere other than its first step.
    for (BlockNode* b : sched::BlocksIn(loops[0])) {
      bool spatial = false, reduce = false;
      for (std::size_t k = 0; k < b->iter_vars.size(); ++k) {
        for (const auto& l : loops) {
          bool uses = false;
          VisitExpr(b->bindings[k], [&](const Expr& x) { uses |= x.get() == l->loop_var.get(); });
          if (uses) (b->iter_vars[k].kind == IterKind::kSpatial ? spatial : reduce) = true;
        }
      }
      if (spatial && reduce) {
        Fail(p, "the loops drive both spatial and reduction variables of block '" + b->name + "'");
      }
    }
    std::string name;
    std::int64_t extent = 1;
    for (const auto& l : loops) {
      name += l->loop_var->name + "_";
      if (__builtin_mul_overflow(extent, l->extent, &extent) || extent > MaxIterations(loops[0]->loop_var->dtype)) {
        Fail(p, "the fused loop would have more iterations than its " +
                    std::string(DataTypeName(loops[0]->loop_var->dtype)) + " variable can count");
      }
    }
    auto fused = std::make_shared<ForNode>();
    fused->loop_var = MakeVar(loops.size() == 1 ? loops[0]->loop_var->name + "_fused" : name + "fused",
                              loops[0]->loop_var->dtype);
    fused->extent = extent;
    fused->body = loops.back()->body;
    // Loop k's variable is (fused // product of inner extents) % extent_k.
    VarMap map;
    std::int64_t inner = 1;
    DataType t = fused->loop_var->dtype;
    for (std::size_t k = loops.size(); k-- > 0;) {
      Expr v = inner == 1 ? fused->loop_var : FloorDiv(fused->loop_var, IntImm(t, inner));
      if (k > 0) v = FloorMod(v, IntImm(t, loops[k]->extent));
      map[loops[k]->loop_var.get()] = v;
      inner *= loops[k]->extent;
    }
    SubstituteInPlace(fused->body, map);
    sched::ReplaceStmt(s.func, loops[0].get(), fused);
    return s.AddLoop(fused);
  });
  Record(s, "Fuse", [&] {
    std::vector<InstInput> in;
    for (LoopRV rv : loop_rvs) in.push_back(In(rv));
    return in;
  }(), {preserve_unit_iters ? 1 : 0}, {Ref(out)});
  return out;
}

void Schedule::Reorder(const std::vector<LoopRV>& loop_rvs) {
  State& s = *state_;
  const char* p = "reorder";
  Apply(s, p, [&] {
    if (loop_rvs.empty()) Fail(p, "no loops given");
    std::vector<std::shared_ptr<ForNode>> loops;
    for (LoopRV rv : loop_rvs) {
      auto l = s.LoopOf(rv, p);
      for (const auto& seen : loops) {
        if (seen == l) Fail(p, "loop " + l->loop_var->name + " is given twice");
      }
      loops.push_back(l);
    }
    // The chain from the outermost given loop down to the innermost one.
    auto depth = [&](const std::shared_ptr<ForNode>& l) { return sched::PathTo(s.func, l.get()).size(); };
    std::shared_ptr<ForNode> outer = *std::min_element(loops.begin(), loops.end(),
                                                       [&](const auto& a, const auto& b) { return depth(a) < depth(b); });
    std::vector<std::shared_ptr<ForNode>> chain{outer};
    std::size_t found = 1;
    while (found < loops.size()) {
      const Stmt& body = chain.back()->body;
      if (!body || body->kind != StmtKind::kFor) {
        Fail(p, "the loops are not nested in one chain: loop " + chain.back()->loop_var->name +
                    " has a body that is not a single loop");
      }
      chain.push_back(std::static_pointer_cast<ForNode>(body));
      if (std::find(loops.begin(), loops.end(), chain.back()) != loops.end()) ++found;
    }
    // Positions of the given loops in the chain, filled in the new order.
    std::vector<std::shared_ptr<ForNode>> order = chain;
    std::size_t next = 0;
    for (auto& slot : order) {
      if (std::find(loops.begin(), loops.end(), slot) != loops.end()) slot = loops[next++];
    }
    Stmt innermost_body = chain.back()->body;
    sched::ReplaceStmt(s.func, chain[0].get(), order[0]);
    for (std::size_t i = 0; i + 1 < order.size(); ++i) order[i]->body = order[i + 1];
    order.back()->body = innermost_body;
    return 0;
  });
  std::vector<InstInput> in;
  for (LoopRV rv : loop_rvs) in.push_back(In(rv));
  Record(s, "Reorder", in, nlohmann::json::array(), {});
}

}  // namespace tunedb::ir
