#include "ir/flops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tunedb::ir {
namespace {

// The operations of e, and whether it reads a tensor. An operation counts
// when it computes on data: on floats, or on integers that come from a
// tensor (an int32 matmul counts 2 per multiply-add, as TVM's estimate
// does). Integer arithmetic on loop variables alone is index arithmetic,
// and a load's indices are not looked into: neither is the program's work.
struct Operations {
  std::int64_t count = 0;
  bool reads_data = false;
};

Operations ExprOperations(const Expr& e) {
  if (e->kind == ExprKind::kLoad) return {0, true};
  if (e->kind == ExprKind::kSelect) {
    // One side runs, so the larger counts, and the choice itself is no
    // arithmetic: a zero border's `c ? A[i] * B[i] : 0` is 1 operation,
    // not 3 (which made a padded convolution read 498 GFLOP/s on cores
    // whose peak is 425), and a concatenation's copy is 0. As TVM counts.
    Operations condition = ExprOperations(e->operands[0]);
    Operations taken = ExprOperations(e->operands[1]), other = ExprOperations(e->operands[2]);
    return {condition.count + std::max(taken.count, other.count),
            condition.reads_data || taken.reads_data || other.reads_data};
  }
  Operations total;
  bool on_floats = IsFloat(e->dtype);
  for (const Expr& operand : e->operands) {
    Operations o = ExprOperations(operand);
    total.count += o.count;
    total.reads_data = total.reads_data || o.reads_data;
    on_floats = on_floats || IsFloat(operand->dtype);  // a comparison of floats
  }
  bool is_operation = e->kind != ExprKind::kIntImm && e->kind != ExprKind::kFloatImm &&
                      e->kind != ExprKind::kVar && e->kind != ExprKind::kCast;
  if (is_operation && (on_floats || total.reads_data)) ++total.count;
  return total;
}

// The sum of store_cost over the stores directly in a block body (not
// inside nested blocks), each as often as its loops run it.
template <typename StoreCost>
std::int64_t SumOverStores(const Stmt& s, const StoreCost& store_cost) {
  if (!s) return 0;
  switch (s->kind) {
    case StmtKind::kFor: {
      const auto& n = static_cast<const ForNode&>(*s);
      return n.extent * SumOverStores(n.body, store_cost);
    }
    case StmtKind::kSeq: {
      std::int64_t total = 0;
      for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) total += SumOverStores(c, store_cost);
      return total;
    }
    case StmtKind::kIf: {
      const auto& n = static_cast<const IfNode&>(*s);
      return std::max(SumOverStores(n.then_case, store_cost), SumOverStores(n.else_case, store_cost));
    }
    case StmtKind::kStore: return store_cost(static_cast<const StoreNode&>(*s));
    case StmtKind::kBlock: return 0;  // counted on its own
  }
  return 0;
}

template <typename StoreCost>
std::int64_t SumOverBlocks(const PrimFunc& func, const StoreCost& store_cost) {
  std::int64_t total = 0;
  for (const BlockNode* b : CollectBlocks(func)) {
    std::int64_t instances = 1;
    for (const IterVar& iv : b->iter_vars) instances *= iv.extent;
    total += instances * SumOverStores(b->body, store_cost);
  }
  return total;
}

}  // namespace

std::int64_t CountFlops(const PrimFunc& func) {
  return SumOverBlocks(func, [](const StoreNode& store) { return ExprOperations(store.value).count; });
}

std::int64_t CountBlockInstances(const PrimFunc& func) {
  return SumOverBlocks(func, [](const StoreNode&) -> std::int64_t { return 1; });
}

std::int64_t ParamBytes(const PrimFunc& func) {
  std::int64_t total = 0;
  for (const Buffer& param : func.params) {
    // At most the elements its reads and writes can touch: a gather reads
    // a few rows of a large table, which counted whole made 1 MB moved in
    // 4.75 us read as 2.2 TB/s.
    std::int64_t accesses = SumOverBlocks(func, [&](const StoreNode& store) {
      std::int64_t n = store.buffer == param ? 1 : 0;
      auto count_loads = [&](const Expr& e) {
        VisitExpr(e, [&](const Expr& x) { n += x->kind == ExprKind::kLoad && x->buffer == param; });
      };
      count_loads(store.value);
      for (const Expr& index : store.indices) count_loads(index);
      return n;
    });
    total += std::min(param->NumElements(), accesses) * DataTypeBytes(param->dtype);
  }
  return total;
}

Rate RateOf(std::int64_t flops, std::int64_t param_bytes, double secs) {
  Rate r;
  if (flops <= 0) r.unit = "GB/s";
  if (!std::isfinite(secs) || secs <= 0) return r;
  r.value = static_cast<double>(flops > 0 ? flops : param_bytes) / secs / 1e9;
  return r;
}

std::string DurationText(double secs) {
  if (!std::isfinite(secs)) return "-";
  auto print = [](const char* format, double value) {
    std::string text(static_cast<std::size_t>(std::snprintf(nullptr, 0, format, value)), '\0');
    std::snprintf(text.data(), text.size() + 1, format, value);
    return text;
  };
  if (secs < 1e-6) return print("%.1f ns", secs * 1e9);
  if (secs < 1e-4) return print("%.2f us", secs * 1e6);
  return print("%.4f ms", secs * 1e3);
}

}  // namespace tunedb::ir
