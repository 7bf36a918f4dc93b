#include "ir/verify.h"

#include <set>
#include <string>

#include "ir/error.h"
#include "ir/limits.h"

namespace tunedb::ir {
namespace {

// One walk over the tree, carrying what is in scope: the buffers allocated
// by the enclosing blocks (and the parameters), the variables bound by the
// enclosing loops and blocks.
class Verifier {
 public:
  explicit Verifier(const PrimFunc& func) {
    for (const Buffer& p : func.params) buffers_.insert(p.get());
  }

  void Check(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        const auto& n = static_cast<const ForNode&>(*s);
        if (!n.loop_var || n.loop_var->kind != ExprKind::kVar) Fail("a loop variable is not a variable");
        if (!IsInt(n.loop_var->dtype)) {
          Fail("loop variable " + n.loop_var->name + " is " + std::string(DataTypeName(n.loop_var->dtype)) +
               ", not an integer");
        }
        Bind(n.loop_var, "loop", n.extent);
        Check(n.body);
        vars_.erase(n.loop_var.get());
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) Check(c);
        return;
      case StmtKind::kIf: {
        const auto& n = static_cast<const IfNode&>(*s);
        CheckExpr(n.condition, "an if condition");
        Check(n.then_case);
        Check(n.else_case);
        return;
      }
      case StmtKind::kStore: {
        // Its types and rank are checked where it is made (MakeStore).
        const auto& n = static_cast<const StoreNode&>(*s);
        Access(n.buffer, "stores to");
        for (const Expr& i : n.indices) CheckExpr(i, "a store index");
        CheckExpr(n.value, "a stored value");
        return;
      }
      case StmtKind::kBlock:
        CheckBlock(static_cast<const BlockNode&>(*s));
        return;
    }
  }

 private:
  void CheckBlock(const BlockNode& b) {
    std::string outer = block_;
    block_ = b.name;
    if (b.bindings.size() != b.iter_vars.size()) {
      Fail(std::to_string(b.iter_vars.size()) + " iteration variables but " + std::to_string(b.bindings.size()) +
           " bindings");
    }
    // The bindings and the predicate are evaluated outside the block.
    for (std::size_t k = 0; k < b.bindings.size(); ++k) {
      const IterVar& iv = b.iter_vars[k];
      if (!iv.var || iv.var->kind != ExprKind::kVar) Fail("an iteration variable is not a variable");
      CheckExpr(b.bindings[k], "the binding of " + iv.var->name);
      if (!IsInt(iv.var->dtype)) {
        Fail("iteration variable " + iv.var->name + " is " + std::string(DataTypeName(iv.var->dtype)) +
             ", not an integer");
      }
      if (b.bindings[k]->dtype != iv.var->dtype) {
        Fail("iteration variable " + iv.var->name + " is " + std::string(DataTypeName(iv.var->dtype)) +
             " but its binding is " + std::string(DataTypeName(b.bindings[k]->dtype)));
      }
    }
    if (b.predicate) {
      CheckExpr(b.predicate, "the predicate");
      if (b.predicate->dtype != DataType::kBool) Fail("the predicate is not bool");
    }
    for (const IterVar& iv : b.iter_vars) Bind(iv.var, "block", iv.extent);
    std::vector<const BufferNode*> allocated;
    for (const Buffer& a : b.alloc_buffers) {
      if (buffers_.insert(a.get()).second) allocated.push_back(a.get());
    }
    for (const std::vector<BufferRegion>* regions : {&b.reads, &b.writes}) {
      for (const BufferRegion& r : *regions) {
        Access(r.buffer, regions == &b.reads ? "reads" : "writes");
        const std::string where = "a region of " + r.buffer->name;
        if (r.ranges.size() != r.buffer->shape.size()) {
          Fail(where + " has " + std::to_string(r.ranges.size()) + " ranges for " +
               std::to_string(r.buffer->shape.size()) + " dimensions");
        }
        // Region arithmetic (the printer's min + extent, a schedule's
        // region analysis) needs both ends of a range in one integer type.
        for (const Range& range : r.ranges) {
          CheckExpr(range.min, where);
          CheckExpr(range.extent, where);
          if (!IsInt(range.min->dtype) || range.extent->dtype != range.min->dtype) {
            Fail(where + " has a range whose start is " + std::string(DataTypeName(range.min->dtype)) +
                 " and whose extent is " + std::string(DataTypeName(range.extent->dtype)) +
                 "; both must be one integer type");
          }
        }
      }
    }
    Check(b.init);
    Check(b.body);
    for (const BufferNode* a : allocated) buffers_.erase(a);
    for (const IterVar& iv : b.iter_vars) vars_.erase(iv.var.get());
    block_ = outer;
  }

  void Bind(const Expr& var, const char* binder, std::int64_t extent) {
    if (!vars_.emplace(var.get(), extent).second) {
      Fail("a " + std::string(binder) + " binds " + var->name + ", which an enclosing loop or block already binds");
    }
    if (var->dtype == DataType::kInt32 && extent > kMaxInt32Extent) {
      Fail(std::string(binder) + " variable " + var->name + " is int32 but counts " + std::to_string(extent) +
           " values; make it int64");
    }
  }

  void Access(const Buffer& buffer, const char* how) {
    if (!buffer) Fail(std::string("a block ") + how + " a missing buffer");
    if (!buffers_.count(buffer.get())) {
      Fail(std::string(how) + " buffer " + buffer->name + ", which is neither a parameter nor allocated by an " +
           "enclosing block");
    }
  }

  void CheckExpr(const Expr& e, const std::string& where) {
    if (!e) Fail(where + " is missing");
    VisitExpr(e, [&](const Expr& x) {
      if (x->kind == ExprKind::kVar && !vars_.count(x.get())) {
        Fail(where + " uses variable " + x->name + ", which no enclosing loop or block binds");
      }
      if (x->kind == ExprKind::kLoad) Access(x->buffer, "loads from");
    });
    if (auto escape = FindIntEscape(e, vars_)) {
      std::string type(DataTypeName(escape->part->dtype));
      Fail(where + " has an " + type + " part that ranges over " + escape->range + ", outside " + type +
           (escape->part->dtype == DataType::kInt32 ? "; compute it in int64" : ""));
    }
  }

  [[noreturn]] void Fail(const std::string& what) const { throw IrError("block '" + block_ + "': " + what); }

  std::set<const BufferNode*> buffers_;
  VarRanges vars_;  // the variables in scope and their extents
  std::string block_ = "root";
};

}  // namespace

void VerifyProgram(const PrimFunc& func) {
  if (!func.body || func.body->kind != StmtKind::kBlock) throw IrError("the program's body is not its root block");
  Verifier(func).Check(func.body);
}

}  // namespace tunedb::ir
