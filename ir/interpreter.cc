#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/simplify.h"

namespace tunedb::ir {
namespace {

// A scalar: floats in f, integers and bools in i.
struct Value {
  double f = 0;
  std::int64_t i = 0;
};

double RoundTo(DataType t, double v) {
  return t == DataType::kFloat32 ? static_cast<double>(static_cast<float>(v)) : v;
}

std::int64_t WrapInt(DataType t, std::int64_t v) {
  return t == DataType::kInt32 ? static_cast<std::int32_t>(static_cast<std::uint32_t>(v)) : v;
}

// Division by -1 is negation, wrapping like + - *: the most negative value
// divided by -1 is itself, where C++ (and x86's idiv) would trap.
std::int64_t FloorDivInt(std::int64_t a, std::int64_t b) {
  if (b == -1) return static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(a));
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

class Interpreter {
 public:
  explicit Interpreter(const PrimFunc& f) : func_(f) {}

  void Run(std::vector<NDArray>& args) {
    if (args.size() != func_.params.size()) {
      throw IrError("interpreter: " + std::to_string(args.size()) + " arguments for " +
                    std::to_string(func_.params.size()) + " parameters");
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Buffer& p = func_.params[i];
      if (args[i].dtype() != p->dtype || args[i].shape() != p->shape) {
        throw IrError("interpreter: argument " + std::to_string(i) + " does not match parameter " +
                      p->name + " in shape or dtype");
      }
      arrays_[p.get()] = &args[i];
    }
    Exec(func_.body);
  }

 private:
  NDArray& ArrayOf(const Buffer& b) {
    auto it = arrays_.find(b.get());
    if (it == arrays_.end()) throw IrError("interpreter: buffer " + b->name + " is not allocated here");
    return *it->second;
  }

  std::int64_t FlatIndex(const Buffer& b, const std::vector<Expr>& indices) {
    std::int64_t flat = 0;
    for (std::size_t d = 0; d < indices.size(); ++d) {
      std::int64_t i = Eval(indices[d]).i;
      if (i < 0 || i >= b->shape[d]) {
        std::string where;
        for (std::size_t k = 0; k < indices.size(); ++k) {
          where += (k ? ", " : "") + std::to_string(Eval(indices[k]).i);
        }
        throw IrError("out-of-bounds access " + b->name + "[" + where + "] in block " + *current_block_ +
                      " (dimension " + std::to_string(d) + " has extent " + std::to_string(b->shape[d]) + ")");
      }
      flat = flat * b->shape[d] + i;
    }
    return flat;
  }

  Value Eval(const Expr& e) {
    Value r;
    DataType t = e->dtype;
    switch (e->kind) {
      case ExprKind::kIntImm: r.i = e->int_value; return r;
      case ExprKind::kFloatImm: r.f = e->float_value; return r;
      case ExprKind::kVar: {
        auto it = vars_.find(e.get());
        if (it == vars_.end() || !it->second.bound) {
          throw IrError("interpreter: variable " + e->name + " is not bound in block " + *current_block_);
        }
        r.i = it->second.value;
        return r;
      }
      case ExprKind::kLoad: {
        NDArray& a = ArrayOf(e->buffer);
        std::int64_t flat = FlatIndex(e->buffer, e->operands);
        if (IsFloat(t)) r.f = a.GetFloat(flat); else r.i = a.GetInt(flat);
        return r;
      }
      case ExprKind::kSelect:
        return Eval(e->operands[0]).i ? Eval(e->operands[1]) : Eval(e->operands[2]);
      case ExprKind::kNot: r.i = !Eval(e->operands[0]).i; return r;
      case ExprKind::kCast: {
        const Expr& a = e->operands[0];
        Value v = Eval(a);
        if (IsFloat(t)) {
          r.f = RoundTo(t, IsFloat(a->dtype) ? v.f : static_cast<double>(v.i));
        } else if (t == DataType::kBool) {
          r.i = IsFloat(a->dtype) ? v.f != 0 : v.i != 0;
        } else if (IsFloat(a->dtype)) {
          if (!std::isfinite(v.f) || std::fabs(v.f) > 9.2e18) {
            throw IrError("interpreter: cast of " + std::to_string(v.f) + " to an integer in block " + *current_block_);
          }
          r.i = WrapInt(t, static_cast<std::int64_t>(v.f));
        } else {
          r.i = WrapInt(t, v.i);
        }
        return r;
      }
      case ExprKind::kCall: {
        double x = Eval(e->operands[0]).f;
        const std::string& f = e->name;
        double y = f == "exp" ? std::exp(x)
                   : f == "log" ? std::log(x)
                   : f == "sqrt" ? std::sqrt(x)
                   : f == "rsqrt" ? 1.0 / std::sqrt(x)
                   : f == "tanh" ? std::tanh(x)
                   : f == "sigmoid" ? 1.0 / (1.0 + std::exp(-x))
                   : f == "abs" ? std::fabs(x)
                   : f == "floor" ? std::floor(x)
                   : f == "ceil" ? std::ceil(x)
                   : f == "pow" ? std::pow(x, Eval(e->operands[1]).f)
                                 : throw IrError("interpreter: unknown function " + f);
        r.f = RoundTo(t, y);
        return r;
      }
      default: break;
    }
    // Binary operators. And/Or short-circuit like C.
    if (e->kind == ExprKind::kAnd) {
      r.i = Eval(e->operands[0]).i && Eval(e->operands[1]).i;
      return r;
    }
    if (e->kind == ExprKind::kOr) {
      r.i = Eval(e->operands[0]).i || Eval(e->operands[1]).i;
      return r;
    }
    const DataType ot = e->operands[0]->dtype;
    Value a = Eval(e->operands[0]), b = Eval(e->operands[1]);
    if (IsComparison(e->kind)) {
      int c = IsFloat(ot) ? (a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2)
                          : (a.i < b.i ? -1 : a.i > b.i ? 1 : 0);
      switch (e->kind) {
        case ExprKind::kEq: r.i = c == 0; break;
        case ExprKind::kNe: r.i = c != 0; break;
        case ExprKind::kLt: r.i = c == -1; break;
        case ExprKind::kLe: r.i = c == -1 || c == 0; break;
        case ExprKind::kGt: r.i = c == 1; break;
        default: r.i = c == 1 || c == 0; break;
      }
      return r;
    }
    if (IsFloat(t)) {
      double v = 0;
      switch (e->kind) {
        case ExprKind::kAdd: v = a.f + b.f; break;
        case ExprKind::kSub: v = a.f - b.f; break;
        case ExprKind::kMul: v = a.f * b.f; break;
        case ExprKind::kDiv: v = a.f / b.f; break;
        case ExprKind::kMin: v = std::fmin(a.f, b.f); break;
        case ExprKind::kMax: v = std::fmax(a.f, b.f); break;
        default: throw IrError("interpreter: bad float operator");
      }
      r.f = RoundTo(t, v);
      return r;
    }
    std::int64_t v = 0;
    switch (e->kind) {
      case ExprKind::kAdd: v = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.i) + static_cast<std::uint64_t>(b.i)); break;
      case ExprKind::kSub: v = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.i) - static_cast<std::uint64_t>(b.i)); break;
      case ExprKind::kMul: v = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.i) * static_cast<std::uint64_t>(b.i)); break;
      case ExprKind::kMin: v = std::min(a.i, b.i); break;
      case ExprKind::kMax: v = std::max(a.i, b.i); break;
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
        if (b.i == 0) throw IrError("interpreter: division by zero in block " + *current_block_ + ": " + PrintExpr(e));
        v = FloorDivInt(a.i, b.i);
        if (e->kind == ExprKind::kFloorMod) {
          v = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.i) -
                                        static_cast<std::uint64_t>(v) * static_cast<std::uint64_t>(b.i));
        }
        break;
      default: throw IrError("interpreter: bad integer operator");
    }
    r.i = WrapInt(t, v);
    return r;
  }

  void Exec(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto& n = static_cast<const ForNode&>(*s);
        Slot& var = vars_[n.loop_var.get()];
        var.bound = true;
        for (std::int64_t i = 0; i < n.extent; ++i) {
          var.value = i;
          Exec(n.body);
        }
        var.bound = false;
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) Exec(c);
        return;
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        if (Eval(n.condition).i) Exec(n.then_case); else Exec(n.else_case);
        return;
      }
      case StmtKind::kStore: {
        const auto& n = static_cast<const StoreNode&>(*s);
        Value v = Eval(n.value);
        NDArray& a = ArrayOf(n.buffer);
        std::int64_t flat = FlatIndex(n.buffer, n.indices);
        if (IsFloat(n.buffer->dtype)) a.SetFloat(flat, v.f); else a.SetInt(flat, v.i);
        return;
      }
      case StmtKind::kBlock: ExecBlock(static_cast<const BlockNode&>(*s)); return;
    }
  }

  void ExecBlock(const BlockNode& b) {
    const std::string* outer_block = current_block_;
    current_block_ = &b.name;
    if (b.predicate && !Eval(b.predicate).i) {
      current_block_ = outer_block;
      return;
    }
    // Every binding is evaluated before any iteration variable is bound.
    const std::size_t base = values_.size();
    bool first_reduction_step = true;
    for (std::size_t k = 0; k < b.iter_vars.size(); ++k) {
      std::int64_t v = Eval(b.bindings[k]).i;
      const IterVar& iv = b.iter_vars[k];
      if (v < 0 || v >= iv.extent) {
        throw IrError("block " + b.name + ": iteration variable " + iv.var->name + " is bound to " +
                      std::to_string(v) + ", outside its domain [0, " + std::to_string(iv.extent) + ")");
      }
      if (iv.kind == IterKind::kReduce && v != 0) first_reduction_step = false;
      values_.push_back(v);
    }
    for (std::size_t k = 0; k < b.iter_vars.size(); ++k) vars_[b.iter_vars[k].var.get()] = {values_[base + k], true};
    values_.resize(base);

    std::vector<std::unique_ptr<NDArray>> local;
    for (const Buffer& buf : b.alloc_buffers) {
      local.push_back(std::make_unique<NDArray>(buf->dtype, buf->shape));
      local.back()->Poison();
      arrays_[buf.get()] = local.back().get();
    }
    if (b.init && first_reduction_step) Exec(b.init);
    Exec(b.body);
    for (const Buffer& buf : b.alloc_buffers) arrays_.erase(buf.get());
    for (const IterVar& iv : b.iter_vars) vars_[iv.var.get()].bound = false;
    current_block_ = outer_block;
  }

  // A variable's slot stays once made (unbound outside its loop or
  // block): inserting and erasing a map node per block instance was most
  // of the interpreter's time.
  struct Slot {
    std::int64_t value = 0;
    bool bound = false;
  };

  static inline const std::string kRoot = "root";
  const PrimFunc& func_;
  std::unordered_map<const BufferNode*, NDArray*> arrays_;
  std::unordered_map<const ExprNode*, Slot> vars_;
  std::vector<std::int64_t> values_;  // a block's binding values, stacked by nesting
  const std::string* current_block_ = &kRoot;  // for error messages
};

}  // namespace

void Interpret(const PrimFunc& func, std::vector<NDArray>& args) { Interpreter(func).Run(args); }

std::vector<int> OutputParams(const PrimFunc& func) {
  std::set<const BufferNode*> written;
  for (const BlockNode* b : CollectBlocks(func)) {
    for (const BufferRegion& r : b->writes) written.insert(r.buffer.get());
  }
  std::vector<int> out;
  for (std::size_t i = 0; i < func.params.size(); ++i) {
    if (written.count(func.params[i].get())) out.push_back(static_cast<int>(i));
  }
  return out;
}

namespace {

// Values v of an integer input, lo..hi inclusive.
struct IndexValues {
  std::int64_t lo, hi;
};

// Whether an index is a * v + c of one integer load v (casts allowed, a and
// c constants), in the simplifier's linear form: E[I[i], j], E[I[i] + 1, j],
// E[2 * I[i] - 1, j]. The load is held, not pointed to: the simplifier
// may build it anew (B[0] * 1431655766 + 1 did), and the linear form, its
// only owner then, ends here.
bool AffineInALoad(const Expr& index, Expr* load, std::int64_t* a, std::int64_t* c) {
  bool reads_a_tensor = false;
  VisitExpr(index, [&](const Expr& e) { reads_a_tensor |= e->kind == ExprKind::kLoad; });
  if (!reads_a_tensor) return false;  // a plain index: no need to simplify it
  LinearForm form = ToLinearForm(index, {});
  if (form.terms.size() != 1) return false;
  Expr v = form.terms[0].first;
  while (v->kind == ExprKind::kCast) v = v->operands[0];
  if (v->kind != ExprKind::kLoad || !IsInt(v->dtype)) return false;
  *load = v;
  *a = form.terms[0].second;
  *c = form.constant;
  return true;
}

// Floor and ceiling of x / y, in 128 bits: -c and extent - 1 - c of any
// int64 c fit.
__int128 FloorDivide(__int128 x, __int128 y) { return x / y - ((x % y != 0) && ((x < 0) != (y < 0))); }
__int128 CeilDivide(__int128 x, __int128 y) { return -FloorDivide(-x, y); }

// Of the integer tensors read inside an index of another as a * v + c
// (only integers index), the values that keep every such index inside its
// dimension. An input whose uses leave no such value keeps the first use's
// (its program reads outside a tensor whatever the inputs; the check names
// the read).
std::map<const BufferNode*, IndexValues> GatherBounds(const PrimFunc& func) {
  std::map<const BufferNode*, IndexValues> bounds;
  auto note_gathers = [&](const Expr& e) {
    VisitExpr(e, [&](const Expr& load) {
      if (load->kind != ExprKind::kLoad) return;
      for (std::size_t d = 0; d < load->operands.size(); ++d) {
        Expr index;
        std::int64_t a = 0, c = 0;
        if (!AffineInALoad(load->operands[d], &index, &a, &c) || a == 0) continue;
        // 0 <= a v + c <= extent - 1, and v inside its own type.
        const __int128 top = load->buffer->shape[d] - 1;
        __int128 lo = a > 0 ? CeilDivide(-__int128{c}, a) : CeilDivide(top - c, a);
        __int128 hi = a > 0 ? FloorDivide(top - c, a) : FloorDivide(-__int128{c}, a);
        const bool int32 = index->dtype == DataType::kInt32;
        lo = std::max<__int128>(lo, int32 ? INT32_MIN : INT64_MIN);
        hi = std::min<__int128>(hi, int32 ? INT32_MAX : INT64_MAX);
        if (lo > hi) continue;
        IndexValues v{static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)};
        auto [it, fresh] = bounds.emplace(index->buffer.get(), v);
        if (fresh) continue;
        IndexValues both{std::max(it->second.lo, v.lo), std::min(it->second.hi, v.hi)};
        if (both.lo <= both.hi) it->second = both;
      }
    });
  };
  VisitStmtExprs(func.body, note_gathers);
  return bounds;
}

}  // namespace

std::vector<NDArray> MakeArguments(const PrimFunc& func, std::uint64_t seed) {
  std::vector<int> outputs = OutputParams(func);
  std::map<const BufferNode*, IndexValues> gather_bounds = GatherBounds(func);
  std::vector<NDArray> args;
  for (std::size_t i = 0; i < func.params.size(); ++i) {
    const Buffer& p = func.params[i];
    bool is_output = std::find(outputs.begin(), outputs.end(), static_cast<int>(i)) != outputs.end();
    std::uint64_t own_seed = seed * 1000003 + i;
    if (is_output) {
      args.emplace_back(p->dtype, p->shape);
    } else if (auto bound = gather_bounds.find(p.get()); bound != gather_bounds.end()) {
      args.push_back(NDArray::RandomIndices(p->dtype, p->shape, own_seed, bound->second.lo, bound->second.hi));
    } else {
      args.push_back(NDArray::Random(p->dtype, p->shape, own_seed));
    }
  }
  return args;
}

}  // namespace tunedb::ir
