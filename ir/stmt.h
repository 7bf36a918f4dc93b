// Statements and primitive functions of the tensor IR, after TVM TensorIR.
//
// A program is a PrimFunc whose body is a root block named "root". Inside
// are loops (ForNode), sequences, conditionals, buffer stores, and blocks:
// a block is a named computation over iteration variables, each spatial or
// reduction with a domain [0, extent), bound to expressions of the enclosing
// loop variables. Scheduling rewrites loops around blocks; a block's
// iteration domain and body keep meaning the same computation.
//
// Statements are mutable nodes shared by pointer (Stmt). The identity of a
// loop or block node is what schedule random variables refer to, so
// transformations edit the tree in place and keep untouched nodes alive.
// Clone() makes an independent deep copy (expressions, being immutable, and
// buffers, being identified by identity, are shared).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/buffer.h"
#include "ir/expr.h"

namespace tunedb::ir {

enum class StmtKind : std::uint8_t { kFor, kSeq, kIf, kStore, kBlock };

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  StmtKind kind;  // never changes; assignable so that nodes can be restored in place
};
using Stmt = std::shared_ptr<StmtNode>;

// Annotation values are integers or strings, as in TVM's loop and block
// annotations (e.g. "pragma_auto_unroll_max_step": 64).
using AnnotationValue = std::variant<std::int64_t, std::string>;
using Annotations = std::map<std::string, AnnotationValue>;

enum class ForKind : std::uint8_t { kSerial, kParallel, kVectorized, kUnrolled };
std::string_view ForKindName(ForKind kind);  // "serial", "parallel", ...

// for loop_var in range(extent): body. Loops always start at 0.
struct ForNode : StmtNode {
  ForNode() : StmtNode(StmtKind::kFor) {}
  Expr loop_var;
  std::int64_t extent = 1;
  ForKind for_kind = ForKind::kSerial;
  Annotations annotations;
  Stmt body;
};

struct SeqNode : StmtNode {
  SeqNode() : StmtNode(StmtKind::kSeq) {}
  std::vector<Stmt> stmts;
};

struct IfNode : StmtNode {
  IfNode() : StmtNode(StmtKind::kIf) {}
  Expr condition;
  Stmt then_case;
  Stmt else_case;  // may be null
};

struct StoreNode : StmtNode {
  StoreNode() : StmtNode(StmtKind::kStore) {}
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
};

enum class IterKind : std::uint8_t { kSpatial, kReduce };

struct IterVar {
  Expr var;
  std::int64_t extent = 1;  // domain [0, extent)
  IterKind kind = IterKind::kSpatial;
};

// A rectangular region of a buffer: per dimension [min, min + extent).
struct Range {
  Expr min;
  Expr extent;
};
struct BufferRegion {
  Buffer buffer;
  std::vector<Range> ranges;
};

struct BlockNode : StmtNode {
  BlockNode() : StmtNode(StmtKind::kBlock) {}
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<Expr> bindings;  // one per iter var, over enclosing loop vars
  Expr predicate;              // null means true; false skips this instance
  std::vector<BufferRegion> reads;
  std::vector<BufferRegion> writes;
  // Runs before the body when every reduction iter var is 0.
  Stmt init;  // may be null
  Stmt body;
  std::vector<Buffer> alloc_buffers;
  Annotations annotations;
  // A new field must be copied by CloneWithoutRegions (stmt.cc) too.
};

// A primitive function: buffer parameters (inputs first, then outputs, as
// TVM's te.create_prim_func orders them) and a root block body.
struct PrimFunc {
  std::string name = "main";
  std::vector<Buffer> params;
  Stmt body;

  const BlockNode& root() const;
};

// ---- construction helpers ---------------------------------------------------

Stmt MakeFor(Expr loop_var, std::int64_t extent, Stmt body,
             ForKind kind = ForKind::kSerial);
Stmt MakeSeq(std::vector<Stmt> stmts);
Stmt MakeStore(Buffer buffer, std::vector<Expr> indices, Expr value);
Stmt MakeIf(Expr condition, Stmt then_case, Stmt else_case = nullptr);

// Deep copy of a statement tree (see the file comment).
Stmt Clone(const Stmt& stmt);
PrimFunc Clone(const PrimFunc& func);
// The same with every block's reads and writes left empty, for passes that
// find the accesses in the statements themselves (lowering): the regions
// are most of what a copy of a block costs.
PrimFunc CloneWithoutRegions(const PrimFunc& func);

// Replaces variables through `map` in every expression of the tree, in
// place (bindings, predicates, regions, indices, values, conditions).
void SubstituteInPlace(const Stmt& stmt, const VarMap& map);
// The same on a deep copy.
Stmt SubstituteStmt(const Stmt& stmt, const VarMap& map);

// Replaces every expression of the tree's stores and if-conditions (not
// block bindings or predicates) by fn(expression), in place.
void RewriteExprs(const Stmt& stmt, const std::function<Expr(const Expr&)>& fn);

// Calls fn on every statement in pre-order.
template <typename Fn>
void VisitStmt(const Stmt& s, Fn&& fn) {
  if (!s) return;
  fn(s);
  switch (s->kind) {
    case StmtKind::kFor: VisitStmt(static_cast<ForNode&>(*s).body, fn); break;
    case StmtKind::kSeq:
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) VisitStmt(c, fn);
      break;
    case StmtKind::kIf:
      VisitStmt(static_cast<IfNode&>(*s).then_case, fn);
      VisitStmt(static_cast<IfNode&>(*s).else_case, fn);
      break;
    case StmtKind::kStore: break;
    case StmtKind::kBlock:
      VisitStmt(static_cast<BlockNode&>(*s).init, fn);
      VisitStmt(static_cast<BlockNode&>(*s).body, fn);
      break;
  }
}

// Calls fn on every expression of the tree's stores (indices, then the
// value) and if-conditions: those RewriteExprs rewrites, only read.
template <typename Fn>
void VisitStmtExprs(const Stmt& s, Fn&& fn) {
  VisitStmt(s, [&](const Stmt& st) {
    if (st->kind == StmtKind::kStore) {
      const auto& store = static_cast<const StoreNode&>(*st);
      for (const Expr& index : store.indices) fn(index);
      fn(store.value);
    } else if (st->kind == StmtKind::kIf) {
      fn(static_cast<const IfNode&>(*st).condition);
    }
  });
}

// Blocks of the function in pre-order, the root block first.
std::vector<BlockNode*> CollectBlocks(const PrimFunc& func);

}  // namespace tunedb::ir
