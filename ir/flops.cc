#include "ir/flops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tunedb::ir {
namespace {

std::int64_t ExprFlops(const Expr& e) {
  std::int64_t n = 0;
  VisitExpr(e, [&](const Expr& x) {
    bool is_operation = x->kind != ExprKind::kIntImm && x->kind != ExprKind::kFloatImm &&
                        x->kind != ExprKind::kVar && x->kind != ExprKind::kLoad &&
                        x->kind != ExprKind::kCast;
    bool on_floats = IsFloat(x->dtype) || (IsComparison(x->kind) && IsFloat(x->operands[0]->dtype));
    if (is_operation && on_floats) ++n;
  });
  return n;
}

// Flops of the stores directly in a block body (not inside nested blocks).
std::int64_t StmtFlops(const Stmt& s) {
  if (!s) return 0;
  switch (s->kind) {
    case StmtKind::kFor: {
      const auto& n = static_cast<const ForNode&>(*s);
      return n.extent * StmtFlops(n.body);
    }
    case StmtKind::kSeq: {
      std::int64_t total = 0;
      for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) total += StmtFlops(c);
      return total;
    }
    case StmtKind::kIf: {
      const auto& n = static_cast<const IfNode&>(*s);
      return std::max(StmtFlops(n.then_case), StmtFlops(n.else_case));
    }
    case StmtKind::kStore: return ExprFlops(static_cast<const StoreNode&>(*s).value);
    case StmtKind::kBlock: return 0;  // counted on its own
  }
  return 0;
}

}  // namespace

std::int64_t CountFlops(const PrimFunc& func) {
  std::int64_t total = 0;
  for (const BlockNode* b : CollectBlocks(func)) {
    std::int64_t instances = 1;
    for (const IterVar& iv : b->iter_vars) instances *= iv.extent;
    total += instances * StmtFlops(b->body);
  }
  return total;
}

std::int64_t ParamBytes(const PrimFunc& func) {
  std::int64_t total = 0;
  for (const Buffer& param : func.params) total += param->NumElements() * DataTypeBytes(param->dtype);
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
