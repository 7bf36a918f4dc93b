#include "measure/codegen.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "ir/simplify.h"
#include "measure/versioning.h"

namespace tunedb::measure {
namespace {

using namespace tunedb::ir;

constexpr std::int64_t kMaxUnrolledStatements = 4096;
constexpr std::int64_t kMaxStackBytes = 1 << 20;
// The widest vectorized loop emitted as vector operations.
constexpr std::int64_t kMaxLanes = 64;
// The most vectors that lanes at constant offsets load their elements in
// before a shuffle (EmitLoadOfRuns): four covers every fourth element
// (strides up to 4); lanes spread wider are loaded lane by lane.
constexpr std::int64_t kMaxRunVectors = 4;

// A generated value: scalar, or a vector of the current lanes.
struct Val {
  llvm::Value* v = nullptr;
  bool vec = false;
};

// An immediate whose bits are all zero (so not -0.0).
bool IsZero(const Expr& e) {
  if (e->kind == ExprKind::kIntImm) return e->int_value == 0;
  return e->kind == ExprKind::kFloatImm && e->float_value == 0.0 && !std::signbit(e->float_value);
}

std::int64_t StatementCount(const Stmt& s) {
  if (!s) return 0;
  switch (s->kind) {
    case StmtKind::kFor: return static_cast<ForNode&>(*s).extent * StatementCount(static_cast<ForNode&>(*s).body);
    case StmtKind::kSeq: {
      std::int64_t n = 0;
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) n += StatementCount(c);
      return n;
    }
    case StmtKind::kIf: return 1 + StatementCount(static_cast<IfNode&>(*s).then_case) + StatementCount(static_cast<IfNode&>(*s).else_case);
    case StmtKind::kStore: return 1;
    case StmtKind::kBlock: return StatementCount(static_cast<BlockNode&>(*s).body);
  }
  return 0;
}

// Whether `s` holds a loop that code generation emits as a loop, not as
// straight code (an unrolled loop) or lanes (a vectorized one).
bool EmitsALoop(const Stmt& s) {
  bool found = false;
  VisitStmt(s, [&](const Stmt& st) {
    if (found || st->kind != StmtKind::kFor) return;
    const auto& loop = static_cast<const ForNode&>(*st);
    if (loop.extent <= 1) return;
    switch (loop.for_kind) {
      case ForKind::kSerial:
      case ForKind::kParallel: found = true; break;
      case ForKind::kUnrolled: found = loop.extent * StatementCount(loop.body) > kMaxUnrolledStatements; break;
      case ForKind::kVectorized: break;
    }
  });
  return found;
}

// Calls fn(buffer, flat index) for each store under `s` and each load in
// a stored value.
template <typename Fn>
void VisitAccesses(const Stmt& s, Fn&& fn) {
  VisitStmt(s, [&](const Stmt& st) {
    if (st->kind != StmtKind::kStore) return;
    const auto& store = static_cast<const StoreNode&>(*st);
    fn(store.buffer, store.indices[0]);
    VisitExpr(store.value, [&](const Expr& e) {
      if (e->kind == ExprKind::kLoad) fn(e->buffer, e->operands[0]);
    });
  });
}

// Whether some element `loop` stores or loads moves with its variable by
// more than one element a step (a row apart, or through a division): the
// loop that LLVM's loop vectorizer, once O3 has unrolled the loops inside
// it, vectorizes with gathers and scatters (interleaved groups are off,
// see jit.cc).
bool AccessesStrideAcross(const ForNode& loop) {
  const ExprNode* var = loop.loop_var.get();
  bool strided = false;
  VisitAccesses(loop.body, [&](const Buffer&, const Expr& index) {
    if (strided || !UsesVar(index, var)) return;
    auto coefficients = LinearCoefficients(index, {var}, {});
    strided = !coefficients || coefficients->size() != 1 || (*coefficients)[0].second > 1 ||
              (*coefficients)[0].second < -1;
  });
  return strided;
}

// Whether LLVM's loop vectorizer may take `loop`. It only takes innermost
// loops, but O3 first unrolls short inner loops fully, and then it took the
// loop around them even where that loop moves across rows, with gathers and
// scatters: an unscheduled 3 x 37 x 32 x 32 multiply by 2 ran 95 us so,
// against 9.2 us with that loop left alone and each row's unrolled
// elements vectorized by the SLP vectorizer. Where the loop moves its
// elements contiguously it stays the vectorizer's: an unscheduled NHWC
// depthwise convolution, its channel loop vectorized around the unrolled
// 3 x 3 window, ran 63 us, and 548 us without (bench/RESULTS.md,
// session 74). A loop emitted innermost is always the vectorizer's.
bool VectorizableByLLVM(const ForNode& loop) { return !EmitsALoop(loop.body) || !AccessesStrideAcross(loop); }

// A nest of loops that only stores constants: a decomposed reduction's
// init, zeroing its accumulator.
bool OnlyStoresConstants(const Stmt& s) {
  if (!s) return true;
  switch (s->kind) {
    case StmtKind::kFor: return OnlyStoresConstants(static_cast<ForNode&>(*s).body);
    case StmtKind::kSeq:
      for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) {
        if (!OnlyStoresConstants(c)) return false;
      }
      return true;
    case StmtKind::kStore: {
      ExprKind k = static_cast<StoreNode&>(*s).value->kind;
      return k == ExprKind::kIntImm || k == ExprKind::kFloatImm;
    }
    case StmtKind::kIf:
    case StmtKind::kBlock: return false;
  }
  return false;
}

// Fills of more elements than this stay loops: LLVM may not unroll them.
// Its loop idiom pass turns each contiguous row of a fill into a memset,
// which its full unroller counts as one cheap call: a conv2d init zeroing
// a 400 KB accumulator became 392 memsets in one block, each expanded back
// into 16 vector stores, and the instruction schedulers, quadratic in a
// block, took 8-10 s over it (other candidates compile in under 0.5 s).
// 1024 floats is twice a register file of 32 zmm: a fill that large is
// never an accumulator kept in registers, which is what unrolling an init
// is for; run as loops, it costs the same.
constexpr std::int64_t kMaxUnrolledFillElements = 1024;

// What a name stands for in the code being emitted (a loop variable's
// value, a buffer's pointer), remembering the order of binding: a parallel
// loop's closure stores the bound values in that order, so the same program
// gives the same IR in every process (an order by address did not).
template <typename Node>
class Bindings {
 public:
  void Bind(const Node* node, llvm::Value* value) { bound_[node] = {value, next_++}; }
  void Unbind(const Node* node) { bound_.erase(node); }
  // nullptr when the node is not bound.
  llvm::Value* Find(const Node* node) const {
    auto it = bound_.find(node);
    return it == bound_.end() ? nullptr : it->second.value;
  }
  std::vector<std::pair<const Node*, llvm::Value*>> InBindingOrder() const {
    std::vector<std::pair<const Node*, Binding>> all(bound_.begin(), bound_.end());
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second.order < b.second.order; });
    std::vector<std::pair<const Node*, llvm::Value*>> out;
    for (const auto& [node, binding] : all) out.emplace_back(node, binding.value);
    return out;
  }

 private:
  struct Binding {
    llvm::Value* value;
    std::uint64_t order;
  };
  std::unordered_map<const Node*, Binding> bound_;
  std::uint64_t next_ = 0;
};

class Codegen {
 public:
  Codegen(llvm::LLVMContext& ctx, llvm::Module& mod, const CodegenOptions& options)
      : ctx_(ctx), mod_(mod), b_(ctx), options_(options) {}

  void Generate(const PrimFunc& f, const std::string& name) {
    // The body takes one noalias pointer per parameter; the entry point
    // unpacks the argument array and calls it (and gets it inlined).
    std::vector<llvm::Type*> param_types(f.params.size(), b_.getPtrTy());
    auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), param_types, false);
    llvm::Function* body = llvm::Function::Create(body_type, llvm::Function::InternalLinkage, name + "_body", mod_);
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      body->getArg(i)->addAttr(llvm::Attribute::NoAlias);
      body->getArg(i)->setName(f.params[i]->name);
    }
    SetAttributes(body);
    StartFunction(body);
    for (std::size_t i = 0; i < f.params.size(); ++i) buffers_.Bind(f.params[i].get(), body->getArg(i));
    if (options_.fault_crash) {
      b_.CreateStore(b_.getInt32(0), llvm::ConstantPointerNull::get(b_.getPtrTy()), /*isVolatile=*/true);
    }
    if (options_.fault_hang) {
      llvm::BasicBlock* spin = llvm::BasicBlock::Create(ctx_, "hang", fn_);
      b_.CreateBr(spin);
      b_.SetInsertPoint(spin);
      b_.CreateLoad(b_.getInt32Ty(), entry_alloca_slot_, /*isVolatile=*/true);
      b_.CreateBr(spin);
      b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "unreachable", fn_));
    }
    EmitStmt(f.body);
    b_.CreateRetVoid();

    auto* entry_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false);
    llvm::Function* entry = llvm::Function::Create(entry_type, llvm::Function::ExternalLinkage, name, mod_);
    SetAttributes(entry);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> args;
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      llvm::Value* slot = b_.CreateConstGEP1_64(b_.getPtrTy(), entry->getArg(0), i);
      args.push_back(b_.CreateLoad(b_.getPtrTy(), slot));
    }
    b_.CreateCall(body, args);
    b_.CreateRetVoid();
  }

 private:
  // ---- functions ----

  void SetAttributes(llvm::Function* fn) {
    if (!options_.cpu.empty()) fn->addFnAttr("target-cpu", options_.cpu);
    if (!options_.features.empty()) fn->addFnAttr("target-features", options_.features);
    fn->addFnAttr("prefer-vector-width", std::to_string(options_.vector_bits));
    fn->addFnAttr(llvm::Attribute::NoUnwind);
  }

  void StartFunction(llvm::Function* fn) {
    fn_ = fn;
    alloca_block_ = llvm::BasicBlock::Create(ctx_, "allocas", fn);
    llvm::BasicBlock* start = llvm::BasicBlock::Create(ctx_, "start", fn);
    b_.SetInsertPoint(alloca_block_);
    entry_alloca_slot_ = b_.CreateAlloca(b_.getInt32Ty());
    b_.CreateBr(start);
    b_.SetInsertPoint(start);
  }

  llvm::Value* EntryAlloca(llvm::Type* type, std::int64_t count, const std::string& name) {
    llvm::IRBuilder<> entry(alloca_block_, alloca_block_->getFirstInsertionPt());
    llvm::AllocaInst* a = entry.CreateAlloca(type, entry.getInt64(count), name);
    a->setAlignment(llvm::Align(64));
    return a;
  }

  // ---- types ----

  llvm::Type* ScalarType(DataType t) {
    switch (t) {
      case DataType::kFloat32: return b_.getFloatTy();
      case DataType::kFloat64: return b_.getDoubleTy();
      case DataType::kBool: return b_.getInt1Ty();
      default: return b_.getInt64Ty();
    }
  }
  llvm::Type* StorageType(DataType t) {
    switch (t) {
      case DataType::kFloat32: return b_.getFloatTy();
      case DataType::kFloat64: return b_.getDoubleTy();
      case DataType::kInt32: return b_.getInt32Ty();
      case DataType::kInt64: return b_.getInt64Ty();
      case DataType::kBool: return b_.getInt8Ty();
    }
    return nullptr;
  }
  llvm::Type* TypeOf(DataType t, bool vec) {
    llvm::Type* s = ScalarType(t);
    return vec ? llvm::FixedVectorType::get(s, lanes_) : s;
  }

  // ---- vectorization support ----

  bool DependsOnLane(const Expr& e) {
    if (!lane_var_) return false;
    bool found = false;
    VisitExpr(e, [&](const Expr& x) { found |= x.get() == lane_var_; });
    return found;
  }

  llvm::Value* Broadcast(llvm::Value* v) { return b_.CreateVectorSplat(lanes_, v); }
  Val AsVec(Val x) { return x.vec ? x : Val{Broadcast(x.v), true}; }

  // Whether a vectorized loop's body can be emitted as vector operations.
  bool CanVectorize(const Stmt& s) {
    if (!s) return true;
    switch (s->kind) {
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) {
          if (!CanVectorize(c)) return false;
        }
        return true;
      case StmtKind::kIf: {
        // A condition that differs between lanes becomes a mask on the
        // loads and stores of each side (EmitIf); every other operation of
        // both sides runs on all lanes, so none may trap.
        auto& n = static_cast<IfNode&>(*s);
        if (DependsOnLane(n.condition) && (MayTrap(n.then_case) || MayTrap(n.else_case))) return false;
        return MasksSafely(n.condition) && CanVectorize(n.then_case) && CanVectorize(n.else_case);
      }
      case StmtKind::kStore: {
        auto& n = static_cast<StoreNode&>(*s);
        if (!MasksSafely(n.value)) return false;
        if (DependsOnLane(n.value) && !DependsOnLane(n.indices[0])) return false;  // lanes racing on one element
        return true;
      }
      default: return false;  // nested loops and scopes stay scalar
    }
  }

  // A select or short-circuit over loads must not read where its condition
  // rules the load out. When the condition is the same for all lanes and
  // each load is a broadcast or contiguous (a padding check), the select is
  // guarded (CanGuard, EmitGuardedSelect); otherwise its loads are masked
  // (EmitMaskedSelect), and the side a lane does not choose still computes
  // on that lane, so it must not divide integers by a non-constant.
  bool MasksSafely(const Expr& e) {
    bool ok = true;
    VisitExpr(e, [&](const Expr& x) {
      bool branches = x->kind == ExprKind::kSelect || x->kind == ExprKind::kAnd || x->kind == ExprKind::kOr;
      if (!branches || !HasLoad(x) || !DependsOnLane(x)) return;
      if (x->kind == ExprKind::kSelect && CanGuard(x)) return;
      for (std::size_t side = 1; side < x->operands.size(); ++side) ok &= !MayTrap(x->operands[side]);
    });
    return ok;
  }

  // An integer division or modulo by a non-constant, which traps on zero.
  static bool MayTrap(const Expr& e) {
    bool found = false;
    VisitExpr(e, [&](const Expr& x) {
      bool division = x->kind == ExprKind::kDiv || x->kind == ExprKind::kFloorDiv || x->kind == ExprKind::kFloorMod;
      found |= division && !IsFloat(x->dtype) && x->operands[1]->kind != ExprKind::kIntImm;
    });
    return found;
  }
  static bool MayTrap(const Stmt& s) {
    bool found = false;
    VisitStmt(s, [&](const Stmt& x) {
      if (x->kind == StmtKind::kIf) found |= MayTrap(static_cast<IfNode&>(*x).condition);
      if (x->kind != StmtKind::kStore) return;
      auto& n = static_cast<StoreNode&>(*x);
      found |= MayTrap(n.value);
      for (const Expr& i : n.indices) found |= MayTrap(i);
    });
    return found;
  }

  // ---- expressions ----

  Val Emit(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm:
        if (e->dtype == DataType::kBool) return {b_.getInt1(e->int_value != 0), false};
        return {b_.getInt64(e->int_value), false};
      case ExprKind::kFloatImm: return {llvm::ConstantFP::get(ScalarType(e->dtype), e->float_value), false};
      case ExprKind::kVar: {
        llvm::Value* value = vars_.Find(e.get());
        if (!value) throw std::runtime_error("codegen: unbound variable " + e->name);
        if (e.get() == lane_var_) {
          std::vector<llvm::Constant*> steps;
          for (int i = 0; i < lanes_; ++i) steps.push_back(b_.getInt64(i));
          return {b_.CreateAdd(Broadcast(value), llvm::ConstantVector::get(steps)), true};
        }
        return {value, false};
      }
      case ExprKind::kLoad: return EmitLoad(e);
      case ExprKind::kCall: return EmitCall(e);
      case ExprKind::kCast: return EmitCast(e);
      case ExprKind::kNot: {
        Val a = Emit(e->operands[0]);
        return {b_.CreateNot(a.v), a.vec};
      }
      case ExprKind::kSelect: return EmitSelect(e);
      default: return EmitBinary(e);
    }
  }

  Val EmitBinary(const Expr& e) {
    DataType t = e->operands[0]->dtype;
    if ((e->kind == ExprKind::kAnd || e->kind == ExprKind::kOr) && HasLoad(e->operands[1])) {
      if (!DependsOnLane(e)) return EmitShortCircuit(e);
      // Lanes decide apart: the right side's loads run on the lanes whose
      // left side does not decide alone.
      Val a = Emit(e->operands[0]);
      llvm::Value* lanes = a.vec ? a.v : Broadcast(a.v);
      Val b = UnderMask(e->kind == ExprKind::kAnd ? lanes : b_.CreateNot(lanes), e->operands[1]);
      llvm::Value* y = AsVec(b).v;
      return {e->kind == ExprKind::kAnd ? b_.CreateAnd(lanes, y) : b_.CreateOr(lanes, y), true};
    }
    Val a = Emit(e->operands[0]), b = Emit(e->operands[1]);
    bool vec = a.vec || b.vec;
    if (vec) {
      a = AsVec(a);
      b = AsVec(b);
    }
    llvm::Value* x = a.v;
    llvm::Value* y = b.v;
    bool fp = IsFloat(t);
    // Integers are held in 64 bits, where an int32 sum or product may have
    // left the int32 range. Add, subtract and multiply keep the low 32 bits
    // right regardless; every other operation must see the value it wraps
    // to, as the interpreter does. Only values computed from loaded data are
    // wrapped: a program's int32 arithmetic without loads cannot leave int32
    // (FindIntEscape, ir/limits.h), and is left as it is for LLVM's
    // analysis of addresses (found by fuzz/compiled_text.cc).
    bool modular = e->kind == ExprKind::kAdd || e->kind == ExprKind::kSub || e->kind == ExprKind::kMul;
    if (t == DataType::kInt32 && !modular) {
      if (HasLoad(e->operands[0])) x = WrapInt32(x);
      if (HasLoad(e->operands[1])) y = WrapInt32(y);
    }
    llvm::FastMathFlags contract;
    contract.setAllowContract(options_.contract_fma);
    switch (e->kind) {
      case ExprKind::kAdd:
        if (fp) {
          auto* r = b_.CreateFAdd(x, y);
          llvm::cast<llvm::Instruction>(r)->setFastMathFlags(contract);
          return {r, vec};
        }
        return {b_.CreateAdd(x, y), vec};
      case ExprKind::kSub:
        if (fp) {
          auto* r = b_.CreateFSub(x, y);
          llvm::cast<llvm::Instruction>(r)->setFastMathFlags(contract);
          return {r, vec};
        }
        return {b_.CreateSub(x, y), vec};
      case ExprKind::kMul:
        if (fp) {
          auto* r = b_.CreateFMul(x, y);
          llvm::cast<llvm::Instruction>(r)->setFastMathFlags(contract);
          return {r, vec};
        }
        return {b_.CreateMul(x, y), vec};
      case ExprKind::kDiv: return {b_.CreateFDiv(x, y), vec};
      case ExprKind::kFloorDiv: case ExprKind::kFloorMod: {
        // Rounding toward -infinity: adjust C's truncating division.
        llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
        // The most negative value over -1 overflows, and idiv traps on it:
        // divide by 1 instead and negate (wrapping), as the interpreter does.
        // A constant divisor other than -1 needs no guard.
        llvm::Value* by_minus_one = nullptr;
        std::int64_t divisor = 0;
        if (!AsConstInt(e->operands[1], &divisor) || divisor == -1) {
          by_minus_one = b_.CreateICmpEQ(y, llvm::Constant::getAllOnesValue(y->getType()));
          y = b_.CreateSelect(by_minus_one, llvm::ConstantInt::get(y->getType(), 1), y);
        }
        llvm::Value* q = b_.CreateSDiv(x, y);
        llvm::Value* r = b_.CreateSRem(x, y);
        llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                                           b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(y, zero)));
        if (e->kind == ExprKind::kFloorDiv) {
          q = b_.CreateSub(q, b_.CreateZExt(adjust, q->getType()));
          if (by_minus_one) q = b_.CreateSelect(by_minus_one, b_.CreateSub(zero, x), q);
          return {q, vec};
        }
        return {b_.CreateAdd(r, b_.CreateSelect(adjust, y, zero)), vec};
      }
      case ExprKind::kMin: case ExprKind::kMax: {
        bool is_min = e->kind == ExprKind::kMin;
        if (fp) {
          return {b_.CreateBinaryIntrinsic(is_min ? llvm::Intrinsic::minnum : llvm::Intrinsic::maxnum, x, y), vec};
        }
        return {b_.CreateSelect(is_min ? b_.CreateICmpSLT(x, y) : b_.CreateICmpSGT(x, y), x, y), vec};
      }
      case ExprKind::kEq: return {fp ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y), vec};
      case ExprKind::kNe: return {fp ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y), vec};
      case ExprKind::kLt: return {fp ? b_.CreateFCmpOLT(x, y) : b_.CreateICmpSLT(x, y), vec};
      case ExprKind::kLe: return {fp ? b_.CreateFCmpOLE(x, y) : b_.CreateICmpSLE(x, y), vec};
      case ExprKind::kGt: return {fp ? b_.CreateFCmpOGT(x, y) : b_.CreateICmpSGT(x, y), vec};
      case ExprKind::kGe: return {fp ? b_.CreateFCmpOGE(x, y) : b_.CreateICmpSGE(x, y), vec};
      case ExprKind::kAnd: return {b_.CreateAnd(x, y), vec};
      case ExprKind::kOr: return {b_.CreateOr(x, y), vec};
      default: throw std::runtime_error("codegen: unexpected expression");
    }
  }

  // An integer held in 64 bits (a scalar or a vector of lanes), as the
  // int32 it wraps to.
  llvm::Value* WrapInt32(llvm::Value* v) {
    llvm::Type* i32 = b_.getInt32Ty();
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
      i32 = llvm::FixedVectorType::get(i32, vt->getNumElements());
    }
    return b_.CreateSExt(b_.CreateTrunc(v, i32), v->getType());
  }

  // a && b / a || b evaluating b only when needed (b may load out of bounds).
  Val EmitShortCircuit(const Expr& e) {
    bool is_and = e->kind == ExprKind::kAnd;
    Val a = Emit(e->operands[0]);
    llvm::BasicBlock* from = b_.GetInsertBlock();
    llvm::BasicBlock* rhs = llvm::BasicBlock::Create(ctx_, "sc.rhs", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "sc.done", fn_);
    if (is_and) b_.CreateCondBr(a.v, rhs, done); else b_.CreateCondBr(a.v, done, rhs);
    b_.SetInsertPoint(rhs);
    Val r = Emit(e->operands[1]);
    llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getInt1(!is_and), from);
    phi->addIncoming(r.v, rhs_end);
    return {phi, false};
  }

  // Whether a select over loads is emitted as a guarded select: inside a
  // vectorized loop, with a condition the same for all lanes; both sides
  // can be evaluated whatever the condition, as every load reads one element
  // for all lanes or one contiguous run of them, one element per lane (so the
  // guard can redirect it to the zero cell), and no integer division has a
  // divisor that could be 0. A scalar loop keeps its branch: LLVM's loop
  // vectorizer turns it into masked vector loads, where a selected address
  // would be a gather (depthwise conv2d designs ran 3-13x slower that way).
  bool CanGuard(const Expr& e) {
    if (!lane_var_ || DependsOnLane(e->operands[0])) return false;
    bool ok = true;
    for (int side : {1, 2}) {
      const Expr& operand = e->operands[static_cast<std::size_t>(side)];
      VisitExpr(operand, [&](const Expr& x) {
        if (x->kind == ExprKind::kLoad) {
          std::int64_t stride = LaneStride(x->operands[0]);
          if (stride != 0 && stride != 1) ok = false;
        }
      });
      if (MayTrap(operand)) ok = false;
    }
    return ok;
  }

  Val EmitSelect(const Expr& e) {
    if (!HasLoad(e->operands[1]) && !HasLoad(e->operands[2])) {
      Val c = Emit(e->operands[0]), t = Emit(e->operands[1]), f = Emit(e->operands[2]);
      bool vec = c.vec || t.vec || f.vec;
      if (vec) {
        t = AsVec(t);
        f = AsVec(f);
      }
      return {b_.CreateSelect(c.v, t.v, f.v), vec};
    }
    if (CanGuard(e)) return EmitGuardedSelect(e);
    if (lane_var_ && DependsOnLane(e)) return EmitMaskedSelect(e);
    // Only the chosen branch runs: a load never reads out of bounds.
    Val c = Emit(e->operands[0]);
    return {EmitBranches(c.v, "sel", [&] { return Emit(e->operands[1]).v; }, [&] { return Emit(e->operands[2]).v; }),
            false};
  }

  // `chosen` ? then() : otherwise(), with only the chosen side run: a
  // branch to each, joined by a phi.
  template <typename Then, typename Otherwise>
  llvm::Value* EmitBranches(llvm::Value* chosen, const std::string& name, Then then, Otherwise otherwise) {
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, name + ".then", fn_);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, name + ".else", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, name + ".done", fn_);
    b_.CreateCondBr(chosen, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* t = then();
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(else_bb);
    llvm::Value* f = otherwise();
    llvm::BasicBlock* else_end = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
    phi->addIncoming(t, then_end);
    phi->addIncoming(f, else_end);
    return phi;
  }

  // A select whose loads all run, without a branch: under the guard (the
  // side's condition), each load reads its element when the guard holds and
  // a zero cell otherwise, so no read leaves its buffer (the padding check
  // of a convolution reads X[h - 1] only for h >= 1). A branch there sits in
  // the innermost loop of every padded convolution and kept LLVM from
  // holding the accumulators in registers across the reduction: register
  // blocks ran at half speed unless the whole reduction was unrolled
  // (bench/RESULTS.md, session 21). The guard selects the address, not the
  // value, so the load stays a broadcast or one vector load from memory: a
  // depthwise convolution's padded input, read along its channels, is one.
  Val EmitGuardedSelect(const Expr& e) {
    Val c = Emit(e->operands[0]);
    llvm::Value* outer = guard_;
    auto under = [&](llvm::Value* condition, const Expr& side) {
      guard_ = outer ? b_.CreateAnd(outer, condition) : condition;
      Val v = Emit(side);
      guard_ = outer;
      return v;
    };
    // select(c, X[i], 0) is the guarded load itself.
    if (e->operands[1]->kind == ExprKind::kLoad && IsZero(e->operands[2])) return under(c.v, e->operands[1]);
    Val t = under(c.v, e->operands[1]);
    Val f = under(b_.CreateNot(c.v), e->operands[2]);
    bool vec = t.vec || f.vec;
    if (vec) {
      t = AsVec(t);
      f = AsVec(f);
    }
    return {b_.CreateSelect(c.v, t.v, f.v), vec};
  }

  // A select over loads whose lanes may choose differently: both sides are
  // computed on every lane, each side's loads and stores masked to the
  // lanes that choose it (llvm.masked.load and gather, which touch no
  // masked-off element). Emitted lane by lane with a branch each, a padded
  // register block of 200 two-lane statements became 600 tiny loops and
  // 5400 blocks, and LLVM's loop passes took 38 s over them
  // (bench/RESULTS.md, session 43).
  Val EmitMaskedSelect(const Expr& e) {
    Val c = Emit(e->operands[0]);
    llvm::Value* lanes = c.vec ? c.v : Broadcast(c.v);
    Val t = UnderMask(lanes, e->operands[1]);
    Val f = UnderMask(b_.CreateNot(lanes), e->operands[2]);
    return {b_.CreateSelect(lanes, AsVec(t).v, AsVec(f).v), true};
  }

  Val UnderMask(llvm::Value* lanes, const Expr& e) {
    llvm::Value* outer = mask_;
    mask_ = Within(lanes);
    Val v = Emit(e);
    mask_ = outer;
    return v;
  }

  // `lanes` among the lanes that are on (all of them with no mask).
  llvm::Value* Within(llvm::Value* lanes) { return mask_ ? b_.CreateAnd(mask_, lanes) : lanes; }

  Val EmitCast(const Expr& e) {
    const Expr& a = e->operands[0];
    Val x = Emit(a);
    DataType from = a->dtype, to = e->dtype;
    if (from == to) return x;
    llvm::Type* ty = TypeOf(to, x.vec);
    if (to == DataType::kBool) {
      llvm::Value* zero = llvm::Constant::getNullValue(x.v->getType());
      return {IsFloat(from) ? b_.CreateFCmpUNE(x.v, zero) : b_.CreateICmpNE(x.v, zero), x.vec};
    }
    if (from == DataType::kBool) return {IsFloat(to) ? b_.CreateUIToFP(x.v, ty) : b_.CreateZExt(x.v, ty), x.vec};
    // An int32 sum or product is held in 64 bits and may have left the
    // int32 range; converted, it must be the value it wraps to (see
    // EmitBinary).
    if (from == DataType::kInt32) x.v = WrapInt32(x.v);
    if (IsFloat(from) && IsFloat(to)) return {b_.CreateFPCast(x.v, ty), x.vec};
    if (IsFloat(from)) {
      llvm::Value* i = b_.CreateFPToSI(x.v, ty);
      return {to == DataType::kInt32 ? WrapInt32(i) : i, x.vec};
    }
    if (IsFloat(to)) return {b_.CreateSIToFP(x.v, ty), x.vec};
    return {to == DataType::kInt32 ? WrapInt32(x.v) : x.v, x.vec};
  }

  Val EmitCall(const Expr& e) {
    std::vector<Val> args;
    bool vec = false;
    for (const Expr& a : e->operands) {
      args.push_back(Emit(a));
      vec |= args.back().vec;
    }
    if (vec) {
      for (Val& a : args) a = AsVec(a);
    }
    llvm::Type* ty = args[0].v->getType();
    const std::string& f = e->name;
    auto unary = [&](llvm::Intrinsic::ID id) { return Val{b_.CreateUnaryIntrinsic(id, args[0].v), vec}; };
    llvm::Value* one = llvm::ConstantFP::get(ty, 1.0);
    bool f32 = ty->getScalarType()->isFloatTy();
    if (f == "exp") return f32 ? Val{EmitExpF32(args[0].v), vec} : unary(llvm::Intrinsic::exp);
    if (f == "log") return f32 ? Val{EmitLogF32(args[0].v), vec} : unary(llvm::Intrinsic::log);
    if (f == "sqrt") return unary(llvm::Intrinsic::sqrt);
    if (f == "abs") return unary(llvm::Intrinsic::fabs);
    if (f == "floor") return unary(llvm::Intrinsic::floor);
    if (f == "ceil") return unary(llvm::Intrinsic::ceil);
    if (f == "rsqrt") return {b_.CreateFDiv(one, b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, args[0].v)), vec};
    if (f == "pow") return {b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0].v, args[1].v), vec};
    if (f == "sigmoid") {
      llvm::Value* minus = b_.CreateFNeg(args[0].v);
      llvm::Value* ex = f32 ? EmitExpF32(minus) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, minus);
      return {b_.CreateFDiv(one, b_.CreateFAdd(one, ex)), vec};
    }
    if (f == "tanh") {
      if (f32) return {EmitTanhF32(args[0].v), vec};
      // libm's tanh, lane by lane for vectors.
      llvm::Type* st = ty->getScalarType();
      llvm::FunctionCallee fn = mod_.getOrInsertFunction("tanh", st, st);
      if (!vec) return {b_.CreateCall(fn, {args[0].v}), false};
      llvm::Value* out = llvm::UndefValue::get(ty);
      for (int i = 0; i < lanes_; ++i) {
        llvm::Value* lane = b_.CreateExtractElement(args[0].v, b_.getInt64(i));
        out = b_.CreateInsertElement(out, b_.CreateCall(fn, {lane}), b_.getInt64(i));
      }
      return {out, true};
    }
    throw std::runtime_error("codegen: unsupported function " + f);
  }

  // ---- float math inline (exp, log, tanh) ----

  llvm::Value* Fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, b, c});
  }
  // The polynomial with these coefficients, highest power first, at x
  // (Horner's rule, one FMA per coefficient after the first).
  llvm::Value* Polynomial(llvm::Value* x, std::initializer_list<double> coefficients) {
    llvm::Value* p = nullptr;
    for (double k : coefficients) {
      llvm::Value* kv = llvm::ConstantFP::get(x->getType(), k);
      p = p ? Fma(p, x, kv) : kv;
    }
    return p;
  }
  // i32, or a vector of i32 as long as the float vector `ty`: for the bits
  // of a float.
  llvm::Type* Int32Like(llvm::Type* ty) {
    if (auto* v = llvm::dyn_cast<llvm::VectorType>(ty)) return llvm::VectorType::getInteger(v);
    return b_.getInt32Ty();
  }

  // exp of a float or a vector of floats, inline. LLVM lowers its exp
  // intrinsic to a call of libm's expf per lane, which bounds softmax at
  // about 2 ns an element; inline, it vectorizes with the rest of the loop.
  // Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2, e^r by a polynomial
  // (1 + r + r^2 p(r)), then times 2^n; within 2 ulp of the exact value
  // where that is a normal float. Above 88.72 it is +inf, NaN stays NaN,
  // and far below 0 it underflows through the subnormals to 0.
  llvm::Value* EmitExpF32(llvm::Value* x) {
    llvm::Type* ty = x->getType();
    auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
    // e^-104 rounds to 0 as a float; e^88.73 is above the largest float.
    const double lo = -104.0, hi = 88.72283905206835;
    llvm::Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(lo));
    xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, xc, c(hi));
    llvm::Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, Fma(xc, c(1.44269504088896341), c(0.5)));
    // ln 2 in two parts: n * 0.693359375 is exact for the n here.
    llvm::Value* r = Fma(n, c(-0.693359375), xc);
    r = Fma(n, c(2.12194440e-4), r);
    llvm::Value* p = Polynomial(r, {1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                    1.6666665459e-1, 5.0000001201e-1});
    llvm::Value* y = Fma(b_.CreateFMul(r, r), p, b_.CreateFAdd(r, c(1.0)));
    llvm::Value* out = ScaleByPowerOfTwo(y, n);
    out = b_.CreateSelect(b_.CreateFCmpOGT(x, c(hi)), llvm::ConstantFP::getInfinity(ty), out);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, out);
  }

  // y * 2^n for an integral n from -150 to 128, beyond the normal
  // exponents; the product rounds into the subnormals as the exact one
  // would. With AVX-512 and whole 16-lane vectors, one vscalefps per 16
  // lanes does it. Otherwise 2^n is built from exponent bits in two halves,
  // 2^(n/2) * 2^(n - n/2), each a normal power of two: eight operations
  // where scalef is one. exp of 2048 x 256 floats, the same kernel: 74.2 us
  // with the bits, 60.5 with scalef (bench/RESULTS.md, session 79).
  llvm::Value* ScaleByPowerOfTwo(llvm::Value* y, llvm::Value* n) {
    llvm::Type* ty = y->getType();
    auto* vty = llvm::dyn_cast<llvm::FixedVectorType>(ty);
    constexpr int kZmmLanes = 16;
    if (options_.vector_bits >= 512 && vty && vty->getNumElements() % kZmmLanes == 0) {
      const int parts = static_cast<int>(vty->getNumElements()) / kZmmLanes;
      auto* zmm = llvm::FixedVectorType::get(b_.getFloatTy(), kZmmLanes);
      llvm::Function* scalef =
          llvm::Intrinsic::getDeclaration(&mod_, llvm::Intrinsic::x86_avx512_mask_scalef_ps_512);
      std::vector<llvm::Value*> scaled;
      for (int k = 0; k < parts; ++k) {
        auto part = [&](llvm::Value* v) {
          return parts == 1 ? v : b_.CreateShuffleVector(v, llvm::createSequentialMask(k * kZmmLanes, kZmmLanes, 0));
        };
        // All lanes, the current rounding mode (4).
        scaled.push_back(b_.CreateCall(scalef, {part(y), part(n), llvm::UndefValue::get(zmm),
                                                b_.getInt16(0xFFFF), b_.getInt32(4)}));
      }
      return parts == 1 ? scaled[0] : llvm::concatenateVectors(b_, scaled);
    }
    llvm::Type* ity = Int32Like(ty);
    llvm::Value* ni = b_.CreateFPToSI(n, ity);
    llvm::Value* n1 = b_.CreateAShr(ni, 1);
    auto pow2 = [&](llvm::Value* k) {
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, llvm::ConstantInt::get(ity, 127)), 23), ty);
    };
    return b_.CreateFMul(b_.CreateFMul(y, pow2(n1)), pow2(b_.CreateSub(ni, n1)));
  }

  // log of a float or a vector of floats, inline for the same reason as exp.
  // Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a
  // polynomial in m - 1, plus e ln2 in two parts; within 2 ulp. Subnormal x
  // is scaled by 2^23 first (the exponent field would not hold e); log(0)
  // is -inf, log(x < 0) NaN, log(inf) inf, NaN stays NaN.
  llvm::Value* EmitLogF32(llvm::Value* x) {
    llvm::Type* ty = x->getType();
    auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
    llvm::Type* ity = Int32Like(ty);
    auto ic = [&](std::int64_t v) { return llvm::ConstantInt::get(ity, static_cast<std::uint64_t>(v), true); };
    llvm::Value* subnormal = b_.CreateFCmpOLT(x, c(1.17549435e-38));
    llvm::Value* xs = b_.CreateSelect(subnormal, b_.CreateFMul(x, c(8388608.0)), x);
    llvm::Value* bits = b_.CreateBitCast(xs, ity);
    // m in [0.5, 1) from the mantissa bits, e from the exponent field.
    llvm::Value* e = b_.CreateSub(b_.CreateLShr(bits, 23), ic(126));
    e = b_.CreateSub(e, b_.CreateSelect(subnormal, ic(23), ic(0)));
    llvm::Value* m = b_.CreateBitCast(b_.CreateOr(b_.CreateAnd(bits, ic(0x007fffff)), ic(0x3f000000)), ty);
    llvm::Value* ef = b_.CreateSIToFP(e, ty);
    llvm::Value* low = b_.CreateFCmpOLT(m, c(0.707106781186547524));
    ef = b_.CreateSelect(low, b_.CreateFSub(ef, c(1.0)), ef);
    llvm::Value* t = b_.CreateSelect(low, b_.CreateFSub(b_.CreateFAdd(m, m), c(1.0)), b_.CreateFSub(m, c(1.0)));
    llvm::Value* z = b_.CreateFMul(t, t);
    llvm::Value* p = Polynomial(t, {7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                    1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                    3.3333331174e-1});
    llvm::Value* y = b_.CreateFMul(b_.CreateFMul(p, t), z);
    y = Fma(ef, c(-2.12194440e-4), y);
    y = Fma(z, c(-0.5), y);
    llvm::Value* out = Fma(ef, c(0.693359375), b_.CreateFAdd(t, y));
    out = b_.CreateSelect(b_.CreateFCmpOEQ(x, c(0.0)), llvm::ConstantFP::getInfinity(ty, true), out);
    out = b_.CreateSelect(b_.CreateFCmpOEQ(x, llvm::ConstantFP::getInfinity(ty)), x, out);
    // Negative x and NaN: NaN.
    return b_.CreateSelect(b_.CreateFCmpULT(x, c(0.0)), llvm::ConstantFP::getNaN(ty), out);
  }

  // tanh of a float or a vector of floats, inline for the same reason as
  // exp (LLVM has no tanh intrinsic; libm's tanhf ran lane by lane). Cephes'
  // tanhf for |x|: an odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1)
  // above, both computed and one selected, then x's sign; e^2|x|
  // overflowing to inf gives +-1, NaN stays NaN.
  llvm::Value* EmitTanhF32(llvm::Value* x) {
    llvm::Type* ty = x->getType();
    auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* e = EmitExpF32(b_.CreateFAdd(ax, ax));
    llvm::Value* big = b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(e, c(1.0))));
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* p =
        Polynomial(x2, {-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1});
    llvm::Value* small = Fma(b_.CreateFMul(p, x2), ax, ax);
    // Both sides for |x|, then x's sign (which keeps tanh(-0) = -0).
    llvm::Value* out = b_.CreateSelect(b_.CreateFCmpOGE(ax, c(0.625)), big, small);
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, out, x);
  }

  llvm::Value* Address(const Buffer& buf, llvm::Value* index) {
    llvm::Value* base = buffers_.Find(buf.get());
    if (!base) throw std::runtime_error("codegen: buffer " + buf->name + " is not allocated here");
    return b_.CreateGEP(StorageType(buf->dtype), base, index);
  }

  // Where a load reads: its element, or under a guard that is false
  // (EmitGuardedSelect) the zero cell.
  llvm::Value* LoadAddress(const Buffer& buf, llvm::Value* index) {
    llvm::Value* address = Address(buf, index);
    return guard_ ? b_.CreateSelect(guard_, address, ZeroCell()) : address;
  }

  // Zeros that a guarded load reads instead of its elements
  // (EmitGuardedSelect): wide enough for a vector load of the widest element
  // type at the most lanes, constant, one per module.
  llvm::Value* ZeroCell() {
    if (!zero_cell_) {
      auto* type = llvm::ArrayType::get(b_.getInt64Ty(), kMaxLanes);
      zero_cell_ = new llvm::GlobalVariable(mod_, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                            llvm::ConstantAggregateZero::get(type), "tunedb.zero_cell");
      zero_cell_->setAlignment(llvm::Align(16));
    }
    return zero_cell_;
  }

  llvm::Value* FromStorage(llvm::Value* v, DataType t) {
    if (t == DataType::kInt32) return b_.CreateSExt(v, v->getType()->isVectorTy() ? TypeOf(t, true) : b_.getInt64Ty());
    if (t == DataType::kBool) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    return v;
  }
  llvm::Value* ToStorage(llvm::Value* v, DataType t) {
    llvm::Type* st = StorageType(t);
    if (v->getType()->isVectorTy()) st = llvm::FixedVectorType::get(st, lanes_);
    if (t == DataType::kInt32) return b_.CreateTrunc(v, st);
    if (t == DataType::kBool) return b_.CreateZExt(v, st);
    return v;
  }

  // Coefficient of the lane variable in an index (0: invariant, 1:
  // contiguous, -1: contiguous backwards), or kUnknownStride when it is not
  // a known constant.
  static constexpr std::int64_t kUnknownStride = std::numeric_limits<std::int64_t>::min();
  std::int64_t LaneStride(const Expr& index) {
    if (!DependsOnLane(index)) return 0;
    auto coeffs = LinearCoefficients(index, {lane_var_}, {});
    if (!coeffs || coeffs->size() != 1) return kUnknownStride;
    return (*coeffs)[0].second;
  }
  Val EmitLoad(const Expr& e) {
    const Buffer& buf = e->buffer;
    for (const auto& [load, row] : transposed_rows_) {
      if (load == e.get()) return {FromStorage(row, buf->dtype), true};
    }
    const Expr& index = e->operands[0];
    llvm::Type* st = StorageType(buf->dtype);
    std::int64_t stride = LaneStride(index);
    if (mask_ && mask_ == tail_mask_ && (stride == 0 || stride == 1)) {
      return {FromStorage(EmitTailLoad(buf, index, stride), buf->dtype), stride != 0};
    }
    if (mask_) return {FromStorage(EmitMaskedLoad(buf, index, stride), buf->dtype), stride != 0};
    if (stride == 0) {
      return {FromStorage(b_.CreateLoad(st, LoadAddress(buf, EmitIndex(index).v)), buf->dtype), false};
    }
    if (stride == 1) {
      auto* vt = llvm::FixedVectorType::get(st, lanes_);
      llvm::Value* address = LoadAddress(buf, EmitIndexAtLane0(index));
      llvm::LoadInst* load = b_.CreateAlignedLoad(vt, address, llvm::Align(st->getPrimitiveSizeInBits() / 8));
      return {FromStorage(load, buf->dtype), true};
    }
    if (!guard_) {
      const LinearForm form = ToLinearForm(index, {});
      if (auto offsets = LaneOffsets(form)) {
        const std::vector<bool> every_lane(static_cast<std::size_t>(lanes_), true);
        if (llvm::Value* v = EmitLoadOfRuns(buf, index, *offsets, every_lane)) return {FromStorage(v, buf->dtype), true};
      }
      if (Expr wrap = WrappingLanes(form)) {
        return {FromStorage(EmitWrappingLoad(buf, index, wrap), buf->dtype), true};
      }
    }
    return {FromStorage(EmitGather(buf, index), buf->dtype), true};
  }

  // Lane by lane (LLVM makes a gather of it).
  llvm::Value* EmitGather(const Buffer& buf, const Expr& index) {
    llvm::Type* st = StorageType(buf->dtype);
    Val idx = EmitIndex(index);
    llvm::Value* out = llvm::UndefValue::get(llvm::FixedVectorType::get(st, lanes_));
    for (int i = 0; i < lanes_; ++i) {
      llvm::Value* lane_index = b_.CreateExtractElement(idx.v, b_.getInt64(i));
      out = b_.CreateInsertElement(out, b_.CreateLoad(st, Address(buf, lane_index)), b_.getInt64(i));
    }
    return out;
  }

  // The part floormod(e + lane, N) of an index c + floormod(e + lane, N)
  // (given as its linear form), e free of the lane variable, N at least a
  // vector's lanes: a row read from a rotated start (X[(j + 509) % 512], a
  // roll; circular padding). nullptr for any other index.
  Expr WrappingLanes(const LinearForm& index) {
    Expr wrap;
    for (const auto& [atom, coefficient] : index.terms) {
      if (!DependsOnLane(atom)) continue;
      if (wrap || coefficient != 1 || atom->kind != ExprKind::kFloorMod) return nullptr;
      wrap = atom;
    }
    // Over data (I[b] + lane), e could wrap in int32 where it is held in 64 bits here.
    if (!wrap || HasLoad(wrap) || wrap->operands[1]->kind != ExprKind::kIntImm || wrap->operands[1]->int_value < lanes_) {
      return nullptr;
    }
    const PartialCoefficients by_var = LinearCoefficientsByVar(wrap->operands[0], {lane_var_}, {});
    if (!by_var.nonlinear.empty() || by_var.linear.size() != 1 || by_var.linear[0].second != 1) return nullptr;
    return wrap;
  }

  // Such lanes' elements are contiguous unless the row wraps inside this
  // vector: one vector load when lane 0 sits at most N - lanes into the
  // row, else a gather. Gathered throughout, a roll of 1024 rows of 512
  // ran 5x slower than a copy (bench/RESULTS.md, session 75); branched, all
  // but one vector of a row's N / lanes take the load.
  llvm::Value* EmitWrappingLoad(const Buffer& buf, const Expr& index, const Expr& wrap) {
    llvm::Type* st = StorageType(buf->dtype);
    llvm::Value* position = EmitIndexAtLane0(wrap);
    llvm::Value* fits = b_.CreateICmpSLE(
        position, llvm::ConstantInt::get(position->getType(), wrap->operands[1]->int_value - lanes_));
    return EmitBranches(
        fits, "wrap",
        [&]() -> llvm::Value* {
          return b_.CreateAlignedLoad(llvm::FixedVectorType::get(st, lanes_), Address(buf, EmitIndexAtLane0(index)),
                                      llvm::Align(st->getPrimitiveSizeInBits() / 8));
        },
        [&] { return EmitGather(buf, index); });
  }

  // The offset of each lane's element from lane 0's, when every one is a
  // constant: the lane variable is bound to where the emitted vector starts
  // (a constant), so each part of the index that moves with it and with no
  // other variable (w, w / 2, w % 2, (q % 9) / 3) is evaluated lane by
  // lane. nullopt when some part also moves with another variable or with
  // loaded data, or an offset would overflow. `index` is the index's
  // linear form.
  std::optional<std::vector<std::int64_t>> LaneOffsets(const LinearForm& index) {
    const auto* start = llvm::dyn_cast_or_null<llvm::ConstantInt>(lane_var_ ? vars_.Find(lane_var_) : nullptr);
    if (!start || lanes_ < 2) return std::nullopt;
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(lanes_), 0);
    for (const auto& [atom, coefficient] : index.terms) {
      if (!DependsOnLane(atom)) continue;
      std::int64_t at_lane0 = 0;
      for (int i = 0; i < lanes_; ++i) {
        const Expr lane = IntImm(lane_var_->dtype, start->getSExtValue() + i);
        std::int64_t value = 0;
        if (!AsConstInt(Simplify(Substitute(atom, {{lane_var_, lane}})), &value)) return std::nullopt;
        if (i == 0) at_lane0 = value;
        std::int64_t moved = 0;
        if (__builtin_sub_overflow(value, at_lane0, &moved) || __builtin_mul_overflow(moved, coefficient, &moved) ||
            __builtin_add_overflow(offsets[i], moved, &offsets[i])) {
          return std::nullopt;
        }
      }
    }
    return offsets;
  }

  // Lanes whose elements lie at constant offsets from lane 0's, in a few
  // runs (a 2 x 2 pooling window along a row: every second element; a row
  // read backwards; 2x upsampling, X[w / 2]: each element twice; a pixel
  // shuffle, X[c * 4 + w % 2, w / 2]: two rows interleaved): each run
  // loaded as contiguous vectors, the last of them masked at the run's end
  // (or as long as the rest of the run when that is a power of two, which
  // LLVM keeps a plain load), and one shuffle that puts each lane's
  // element in place. Only the lanes marked in `reads` read (under a
  // constant mask, the lanes that are on: one side of
  // `k % 2 == 0 ? A[k / 2] : B[k / 2]`); the others get zero. A run spans
  // the reading lanes' elements with gaps of at most a vector, so nothing
  // outside the buffer is read: every element loaded lies between two
  // that such lanes read. Loaded lane by lane, LLVM made gathers of them: a
  // vectorized 2 x 2 max pooling and 2x upsampling ran no faster than the
  // scalar loops (bench/RESULTS.md, sessions 64 and 65), a row reversal 4x
  // slower than a copy (session 67), a pixel shuffle 4x and an interleave
  // 9x slower than a copy (session 75). nullptr (gather them) when the
  // runs take more than kMaxRunVectors vectors.
  llvm::Value* EmitLoadOfRuns(const Buffer& buf, const Expr& index, const std::vector<std::int64_t>& offsets,
                              const std::vector<bool>& reads) {
    struct Run {
      std::int64_t first, last;
      std::int64_t position = 0;  // where its first element lands among the loaded vectors
    };
    llvm::Type* st = StorageType(buf->dtype);
    auto* vt = llvm::FixedVectorType::get(st, lanes_);
    std::vector<std::int64_t> sorted;
    for (int i = 0; i < lanes_; ++i) {
      if (reads[i]) sorted.push_back(offsets[i]);
    }
    if (sorted.empty()) return llvm::Constant::getNullValue(vt);
    std::sort(sorted.begin(), sorted.end());
    std::int64_t spread = 0;  // bounds every difference taken below
    if (__builtin_sub_overflow(sorted.back(), sorted.front(), &spread)) return nullptr;
    std::vector<Run> runs;
    std::int64_t vectors = 0;
    for (std::int64_t offset : sorted) {
      if (runs.empty() || offset - runs.back().last > lanes_) {
        if (!runs.empty()) vectors += (runs.back().last - runs.back().first) / lanes_ + 1;
        runs.push_back({offset, offset, vectors * lanes_});
      }
      runs.back().last = offset;
    }
    vectors += (runs.back().last - runs.back().first) / lanes_ + 1;
    if (vectors > kMaxRunVectors) return nullptr;

    llvm::Align align(st->getPrimitiveSizeInBits() / 8);
    llvm::Value* lane0 = EmitIndexAtLane0(index);
    std::vector<llvm::Value*> parts;
    for (const Run& run : runs) {
      for (std::int64_t from = run.first; from <= run.last; from += lanes_) {
        llvm::Value* address = LoadAddress(buf, b_.CreateAdd(lane0, b_.getInt64(from)));
        const std::int64_t in_run = run.last - from + 1;
        if (in_run >= lanes_) {
          parts.push_back(b_.CreateAlignedLoad(vt, address, align));
        } else if (std::has_single_bit(static_cast<std::uint64_t>(in_run))) {
          // Exactly the run's elements, widened for the shuffle.
          auto* narrow = llvm::FixedVectorType::get(st, static_cast<unsigned>(in_run));
          std::vector<int> widened;
          for (int i = 0; i < lanes_; ++i) widened.push_back(i < in_run ? i : -1);
          parts.push_back(b_.CreateShuffleVector(b_.CreateAlignedLoad(narrow, address, align), widened));
        } else {
          std::vector<llvm::Constant*> on;
          for (int i = 0; i < lanes_; ++i) on.push_back(b_.getInt1(i < in_run));
          parts.push_back(
              b_.CreateMaskedLoad(vt, address, align, llvm::ConstantVector::get(on), llvm::PoisonValue::get(vt)));
        }
      }
    }
    // The lanes that do not read take a zero from a vector after the runs.
    const auto zero_position = static_cast<int>(parts.size()) * lanes_;
    if (static_cast<std::int64_t>(sorted.size()) < lanes_) parts.push_back(llvm::Constant::getNullValue(vt));
    std::vector<int> positions;
    for (int i = 0; i < lanes_; ++i) {
      if (!reads[i]) {
        positions.push_back(zero_position);
        continue;
      }
      const Run& run = *std::prev(std::upper_bound(runs.begin(), runs.end(), offsets[i],
                                                   [](std::int64_t o, const Run& r) { return o < r.first; }));
      positions.push_back(static_cast<int>(run.position + offsets[i] - run.first));
    }
    return b_.CreateShuffleVector(llvm::concatenateVectors(b_, parts), positions);
  }

  // A load in a masked tail (EmitMaskedTail), under no lane condition: a
  // broadcast or a run of lanes whose mask is a constant. A guard selects
  // the address as it does without a mask (LoadAddress), so that a load of
  // a private buffer stays a whole-vector load under a guard too.
  llvm::Value* EmitTailLoad(const Buffer& buf, const Expr& index, std::int64_t stride) {
    llvm::Type* st = StorageType(buf->dtype);
    llvm::Align align(st->getPrimitiveSizeInBits() / 8);
    if (stride == 0) return b_.CreateLoad(st, LoadAddress(buf, EmitIndex(index).v));
    auto* vt = llvm::FixedVectorType::get(st, lanes_);
    llvm::Value* address = LoadAddress(buf, EmitIndexAtLane0(index));
    if (PrivateTail(buf)) return b_.CreateAlignedLoad(vt, address, align);
    return b_.CreateMaskedLoad(vt, address, align, mask_, llvm::Constant::getNullValue(vt));
  }

  // Which lanes a mask turns on, when that is known here: the mask is a
  // constant (a condition on the lane variable alone, `k % 2 == 0`, or a
  // masked tail's).
  std::optional<std::vector<bool>> ConstantLanes(llvm::Value* mask) {
    auto* constant = llvm::dyn_cast<llvm::Constant>(mask);
    if (!constant) return std::nullopt;
    std::vector<bool> on;
    for (int i = 0; i < lanes_; ++i) {
      auto* lane = llvm::dyn_cast_or_null<llvm::ConstantInt>(constant->getAggregateElement(static_cast<unsigned>(i)));
      if (!lane) return std::nullopt;
      on.push_back(!lane->isZero());
    }
    return on;
  }

  // A load under mask_ (and guard_, when a guarded select sits inside a
  // masked one): lanes that are off read nothing and get zero. A broadcast
  // reads its element when any lane is on, else the zero cell. Under a
  // constant mask, lanes at constant offsets load the runs that the lanes
  // that are on read (EmitLoadOfRuns).
  llvm::Value* EmitMaskedLoad(const Buffer& buf, const Expr& index, std::int64_t stride) {
    llvm::Type* st = StorageType(buf->dtype);
    llvm::Align align(st->getPrimitiveSizeInBits() / 8);
    llvm::Value* on = guard_ ? b_.CreateAnd(mask_, Broadcast(guard_)) : mask_;
    if (stride == 0) {
      llvm::Value* address = b_.CreateSelect(b_.CreateOrReduce(on), Address(buf, EmitIndex(index).v), ZeroCell());
      return b_.CreateLoad(st, address);
    }
    auto* vt = llvm::FixedVectorType::get(st, lanes_);
    llvm::Value* zeros = llvm::Constant::getNullValue(vt);
    if (stride == 1) return b_.CreateMaskedLoad(vt, Address(buf, EmitIndexAtLane0(index)), align, on, zeros);
    if (auto reads = ConstantLanes(on)) {
      if (auto offsets = LaneOffsets(ToLinearForm(index, {}))) {
        if (llvm::Value* v = EmitLoadOfRuns(buf, index, *offsets, *reads)) return v;
      }
    }
    return b_.CreateMaskedGather(vt, Address(buf, AsVec(EmitIndex(index)).v), align, on, zeros);
  }

  // The flat index of an access, and its scalar value at lane 0 (the lane
  // variable at its base). Integers are held in 64 bits, and an index
  // computed from loaded data (A[B[i] * 3]) may have left the int32 range
  // where the interpreter, which checked the access, wrapped it. Wrapped,
  // the flat index is the interpreter's element: each dimension's index is
  // the same modulo 2^32, and an int32-indexed buffer has fewer than 2^31
  // elements. Other indices stay in range (FindIntEscape, ir/limits.h)
  // and are left whole for LLVM's analysis of addresses.
  Val EmitIndex(const Expr& index) { return WrapDataIndex(index, Emit(index)); }
  llvm::Value* EmitIndexAtLane0(const Expr& index) {
    const ExprNode* saved = lane_var_;
    lane_var_ = nullptr;
    Val v = EmitIndex(index);
    lane_var_ = saved;
    return v.v;
  }
  Val WrapDataIndex(const Expr& index, Val v) {
    if (index->dtype == DataType::kInt32 && HasLoad(index)) v.v = WrapInt32(v.v);
    return v;
  }

  // ---- statements ----

  void EmitStmt(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: EmitFor(static_cast<ForNode&>(*s)); return;
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<SeqNode&>(*s).stmts) EmitStmt(c);
        return;
      case StmtKind::kIf: EmitIf(static_cast<IfNode&>(*s)); return;
      case StmtKind::kStore: EmitStore(static_cast<StoreNode&>(*s)); return;
      case StmtKind::kBlock: EmitScope(static_cast<BlockNode&>(*s)); return;
    }
  }

  void EmitStore(const StoreNode& n) {
    const Expr& index = n.indices[0];
    Val value = Emit(n.value);
    std::int64_t stride = LaneStride(index);
    if (mask_) {
      EmitMaskedStore(n, value, stride);
      return;
    }
    if (!value.vec && stride == 0) {
      b_.CreateStore(ToStorage(value.v, n.buffer->dtype), Address(n.buffer, EmitIndex(index).v));
      return;
    }
    value = AsVec(value);
    llvm::Value* data = ToStorage(value.v, n.buffer->dtype);
    if (stride == 1) {
      llvm::Type* st = StorageType(n.buffer->dtype);
      llvm::Align align(st->getPrimitiveSizeInBits() / 8);
      b_.CreateAlignedStore(data, Address(n.buffer, EmitIndexAtLane0(index)), align);
      return;
    }
    Val idx = AsVec(EmitIndex(index));
    for (int i = 0; i < lanes_; ++i) {
      llvm::Value* lane_index = b_.CreateExtractElement(idx.v, b_.getInt64(i));
      b_.CreateStore(b_.CreateExtractElement(data, b_.getInt64(i)), Address(n.buffer, lane_index));
    }
  }

  // A store under mask_ writes the lanes that are on. (A lane-invariant
  // value to a lane-invariant element, the only store to one element that
  // CanVectorize lets lanes share, is written when any lane is on.)
  void EmitMaskedStore(const StoreNode& n, Val value, std::int64_t stride) {
    const Expr& index = n.indices[0];
    llvm::Type* st = StorageType(n.buffer->dtype);
    llvm::Align align(st->getPrimitiveSizeInBits() / 8);
    if (!value.vec && stride == 0) {
      llvm::BasicBlock* store_bb = llvm::BasicBlock::Create(ctx_, "mask.store", fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "mask.done", fn_);
      b_.CreateCondBr(b_.CreateOrReduce(mask_), store_bb, done);
      b_.SetInsertPoint(store_bb);
      b_.CreateStore(ToStorage(value.v, n.buffer->dtype), Address(n.buffer, EmitIndex(index).v));
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      return;
    }
    llvm::Value* data = ToStorage(AsVec(value).v, n.buffer->dtype);
    if (stride == 1 && PrivateTail(n.buffer)) {
      // The lanes that are off keep what they held, unless they lie past the
      // buffer's end (a local accumulator of one row) or in the padding at
      // the end of their row (lowering's PaddedRow): a blend in each step
      // of an accumulation lengthens the chain that bounds its speed.
      llvm::Value* first = EmitIndexAtLane0(index);
      llvm::Value* address = Address(n.buffer, first);
      const auto* at = llvm::dyn_cast<llvm::ConstantInt>(first);
      const bool past_the_end = at && at->getSExtValue() + tail_lanes_ >= n.buffer->NumElements();
      if (!past_the_end && !n.buffer->padded_rows) {
        data = b_.CreateSelect(mask_, data, b_.CreateAlignedLoad(data->getType(), address, align));
      }
      b_.CreateAlignedStore(data, address, align);
      return;
    }
    if (stride == 1) {
      b_.CreateMaskedStore(data, Address(n.buffer, EmitIndexAtLane0(index)), align, mask_);
      return;
    }
    b_.CreateMaskedScatter(data, Address(n.buffer, AsVec(EmitIndex(index)).v), align, mask_);
  }

  void EmitIf(const IfNode& n) {
    Val c = Emit(n.condition);
    if (c.vec) {
      // Lanes that differ (CanVectorize): each side under its lanes' mask.
      llvm::Value* outer = mask_;
      auto under = [&](llvm::Value* lanes, const Stmt& side) {
        mask_ = Within(lanes);
        EmitStmt(side);
        mask_ = outer;
      };
      under(c.v, n.then_case);
      if (n.else_case) under(b_.CreateNot(c.v), n.else_case);
      return;
    }
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
    llvm::BasicBlock* else_bb = n.else_case ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : nullptr;
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "if.done", fn_);
    b_.CreateCondBr(c.v, then_bb, else_bb ? else_bb : done);
    b_.SetInsertPoint(then_bb);
    EmitStmt(n.then_case);
    b_.CreateBr(done);
    if (else_bb) {
      b_.SetInsertPoint(else_bb);
      EmitStmt(n.else_case);
      b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
  }

  void EmitScope(const BlockNode& n) {
    std::vector<llvm::Value*> heap;
    for (const Buffer& buf : n.alloc_buffers) {
      std::int64_t count = buf->NumElements();
      std::int64_t bytes = count * static_cast<std::int64_t>(StorageType(buf->dtype)->getPrimitiveSizeInBits() / 8);
      if (bytes <= kMaxStackBytes) {
        // Room past the end for a masked tail's whole vector (PrivateTail).
        buffers_.Bind(buf.get(), EntryAlloca(StorageType(buf->dtype), count + kMaxLanes, buf->name));
      } else {
        // From the thread's workspace cache (measure/workspace.h): a run
        // reuses the pages the run before it touched.
        llvm::FunctionCallee alloc = mod_.getOrInsertFunction("tunedb_workspace_alloc", b_.getPtrTy(), b_.getInt64Ty());
        llvm::Value* p = b_.CreateCall(alloc, {b_.getInt64(bytes)}, buf->name);
        buffers_.Bind(buf.get(), p);
        heap.push_back(p);
      }
    }
    EmitStmt(n.body);
    llvm::FunctionCallee free_fn = mod_.getOrInsertFunction("tunedb_workspace_free", b_.getVoidTy(), b_.getPtrTy());
    for (llvm::Value* p : heap) b_.CreateCall(free_fn, {p});
  }

  // A counted loop [begin, end) calling body(var) for each iteration.
  // `keep_loop`: LLVM may not unroll it (llvm.loop.unroll.disable).
  // `no_vectorize`: LLVM's loop vectorizer may not take it
  // (llvm.loop.vectorize.enable false); see VectorizableByLLVM.
  void EmitCountedLoop(const Expr& var, llvm::Value* begin, llvm::Value* end, const std::function<void()>& body,
                       bool keep_loop = false, bool no_vectorize = false) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "for." + var->name, fn_);
    llvm::BasicBlock* loop_body = llvm::BasicBlock::Create(ctx_, "body." + var->name, fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "end." + var->name, fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2, var->name);
    i->addIncoming(begin, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, end), loop_body, exit);
    b_.SetInsertPoint(loop_body);
    vars_.Bind(var.get(), i);
    body();
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    llvm::BranchInst* latch = b_.CreateBr(header);
    if (keep_loop || no_vectorize) {
      // A loop ID is a distinct node whose first operand is itself.
      std::vector<llvm::Metadata*> properties = {nullptr};
      if (keep_loop) properties.push_back(llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")));
      if (no_vectorize) {
        properties.push_back(llvm::MDNode::get(
            ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"), llvm::ConstantAsMetadata::get(b_.getFalse())}));
      }
      llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, properties);
      id->replaceOperandWith(0, id);
      latch->setMetadata(llvm::LLVMContext::MD_loop, id);
    }
    i->addIncoming(next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
    vars_.Unbind(var.get());
  }

  // An unrolled n x n block whose one store reads an operand transposed:
  // one loop (x) moves along that operand's contiguous dimension, the other
  // (y) along the destination's,
  //   for a (unrolled n): for b (unrolled n): dst[D + dx*x + y] = f(src[S + x + sy*y], ...)
  // (dense's packed weight, a transpose, A + B^T). Element by element, a
  // transposed operand is n*n scalar loads, which LLVM does not gather back
  // into vectors: 2048 x 2048 A + B^T in 16 x 16 blocks took 1.8-2.6 ms,
  // against 0.85-1.2 ms this way (bench/RESULTS.md, session 67). Here each
  // transposed operand is n vector loads and n*log2(n) shuffles in
  // registers, and then every row x = i is one vector statement along y,
  // the other operands loaded as a vectorized loop over y would load them.
  //
  // The rows are emitted in another order than the loops run and each
  // transposed operand is read whole before anything is stored. That
  // changes nothing when every iteration stores its own element and the
  // value reads nothing of the destination; other buffers are distinct
  // allocations. A transposed load under a select or a short circuit might
  // not be read at all, so it keeps the element-wise path.
  bool EmitTransposingBlock(const ForNode& outer) {
    const std::int64_t n = outer.extent;
    if (lane_var_ || guard_ || (n != 4 && n != 8 && n != 16) || !outer.body || outer.body->kind != StmtKind::kFor) {
      return false;
    }
    const auto& inner = static_cast<const ForNode&>(*outer.body);
    if (inner.for_kind != ForKind::kUnrolled || inner.extent != n || !inner.body ||
        inner.body->kind != StmtKind::kStore) {
      return false;
    }
    const auto& store = static_cast<const StoreNode&>(*inner.body);
    if (store.indices.size() != 1 || HasLoad(store.indices[0])) return false;
    const ExprNode* loops[2] = {outer.loop_var.get(), inner.loop_var.get()};
    // The coefficients of the two loop variables in an index (0 if absent).
    auto coefficients = [&](const Expr& index) -> std::optional<std::array<std::int64_t, 2>> {
      auto found = LinearCoefficients(index, {loops[0], loops[1]}, {});
      if (!found) return std::nullopt;
      std::array<std::int64_t, 2> k{0, 0};
      for (const auto& [var, coefficient] : *found) k[var == loops[0] ? 0 : 1] = coefficient;
      return k;
    };
    auto dst = coefficients(store.indices[0]);
    if (!dst) return false;
    // y: the loop along the destination's contiguous dimension; x moves it
    // whole rows apart, so no two iterations store one element.
    const int y = (*dst)[0] == 1 ? 0 : (*dst)[1] == 1 ? 1 : -1;
    if (y < 0) return false;
    const int x = 1 - y;
    if ((*dst)[x] > -n && (*dst)[x] < n) return false;

    // The transposed loads: contiguous along x, moving with y.
    std::vector<const ExprNode*> transposed;
    bool reads_destination = false, conditional = false;
    std::function<void(const Expr&, bool)> find = [&](const Expr& e, bool under_branch) {
      if (e->kind == ExprKind::kLoad) {
        reads_destination |= e->buffer.get() == store.buffer.get();
        auto k = coefficients(e->operands[0]);
        const bool word = e->buffer->dtype == DataType::kFloat32 || e->buffer->dtype == DataType::kInt32;
        if (k && (*k)[x] == 1 && (*k)[y] != 0 && word && n * 32 <= options_.vector_bits) {
          conditional |= under_branch;
          transposed.push_back(e.get());
        }
      }
      const bool branches = e->kind == ExprKind::kSelect || e->kind == ExprKind::kAnd || e->kind == ExprKind::kOr;
      for (std::size_t i = 0; i < e->operands.size(); ++i) find(e->operands[i], under_branch || (branches && i > 0));
    };
    find(store.value, false);
    if (transposed.empty() || reads_destination || conditional) return false;
    lane_var_ = loops[y];
    lanes_ = static_cast<int>(n);
    const bool vectorizes = CanVectorize(inner.body);
    lane_var_ = nullptr;
    if (!vectorizes) return false;

    auto at = [&](std::int64_t x_value, std::int64_t y_value) {
      vars_.Bind(loops[x], b_.getInt64(x_value));
      vars_.Bind(loops[y], b_.getInt64(y_value));
    };
    // rows[t][i]: transposed load t's elements y = 0..n-1 at x = i.
    std::vector<std::vector<llvm::Value*>> rows;
    for (const ExprNode* load : transposed) {
      auto* vt = llvm::FixedVectorType::get(StorageType(load->buffer->dtype), static_cast<unsigned>(n));
      // v[j]: the elements x = 0..n-1 at y = j, one contiguous load.
      std::vector<llvm::Value*> v(static_cast<std::size_t>(n));
      for (std::int64_t j = 0; j < n; ++j) {
        at(0, j);
        v[j] = b_.CreateAlignedLoad(vt, Address(load->buffer, EmitIndex(load->operands[0]).v), llvm::Align(4));
      }
      // Transpose the n x n matrix whose row j is v[j]: for w = n/2 .. 1,
      // swap the off-diagonal w x w blocks of every 2w x 2w block.
      for (std::int64_t w = n / 2; w >= 1; w /= 2) {
        std::vector<int> low(static_cast<std::size_t>(n)), high(static_cast<std::size_t>(n));
        for (std::int64_t p = 0; p < n; ++p) {
          bool left = (p & w) == 0;
          low[p] = static_cast<int>(left ? p : n + p - w);
          high[p] = static_cast<int>(left ? p + w : n + p);
        }
        for (std::int64_t i = 0; i < n; ++i) {
          if (i & w) continue;
          llvm::Value* first = v[i];
          llvm::Value* second = v[i + w];
          v[i] = b_.CreateShuffleVector(first, second, low);
          v[i + w] = b_.CreateShuffleVector(first, second, high);
        }
      }
      rows.push_back(std::move(v));
    }
    // Row by row, the store as one vector statement along y.
    lane_var_ = loops[y];
    for (std::int64_t i = 0; i < n; ++i) {
      at(i, 0);
      for (std::size_t t = 0; t < transposed.size(); ++t) transposed_rows_.emplace_back(transposed[t], rows[t][i]);
      EmitStore(store);
      transposed_rows_.clear();
    }
    lane_var_ = nullptr;
    vars_.Unbind(loops[0]);
    vars_.Unbind(loops[1]);
    return true;
  }

  void EmitFor(const ForNode& n) {
    // One iteration: its variable is the constant 0, not a loop's phi. A
    // parallel body outlined inside such a loop then gets the constant, not
    // an argument: the batch loop of a depthwise convolution (extent 1)
    // made LLVM keep each output vector's zero init as a masked store and
    // load it back, and the body ran 4x slower on one core than unscheduled.
    if (n.extent == 1 && n.for_kind != ForKind::kVectorized) {
      vars_.Bind(n.loop_var.get(), b_.getInt64(0));
      EmitStmt(n.body);
      vars_.Unbind(n.loop_var.get());
      return;
    }
    switch (n.for_kind) {
      case ForKind::kUnrolled:
        if (EmitTransposingBlock(n)) return;
        if (n.extent * StatementCount(n.body) <= kMaxUnrolledStatements) {
          for (std::int64_t i = 0; i < n.extent; ++i) {
            vars_.Bind(n.loop_var.get(), b_.getInt64(i));
            EmitStmt(n.body);
          }
          vars_.Unbind(n.loop_var.get());
          return;
        }
        break;
      case ForKind::kVectorized:
        if (!lane_var_ && n.extent >= 2 && n.extent <= kMaxLanes) {
          const ExprNode* saved = lane_var_;
          lane_var_ = n.loop_var.get();
          if (CanVectorize(n.body)) {
            // Vectors of a power-of-two width, widest first (48 lanes go as
            // 32 + 16): LLVM splits <64 x float> into registers cleanly but
            // legalized <48 x float> through hundreds of element inserts and
            // shuffles, and a 4 x 48 register block ran at 20 GFLOP/s where
            // 16, 32 and 64 columns ran at 190-270 (bench/RESULTS.md,
            // session 28).
            for (std::int64_t start = 0; start < n.extent;) {
              const std::int64_t rest = n.extent - start;
              auto width = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(rest)));
              vars_.Bind(n.loop_var.get(), b_.getInt64(start));
              if (width != rest && FitsOneMaskedVector(n.body, rest)) {
                EmitMaskedTail(n.body, rest);
                break;
              }
              lanes_ = static_cast<int>(width);
              EmitStmt(n.body);
              start += width;
            }
            vars_.Unbind(n.loop_var.get());
            lane_var_ = saved;
            return;
          }
          lane_var_ = saved;
        }
        // A body that cannot be emitted lane-wise stays a scalar loop; LLVM's
        // loop vectorizer (part of O3) may still vectorize it.
        EmitCountedLoop(n.loop_var, b_.getInt64(0), b_.getInt64(n.extent), [&] { EmitStmt(n.body); });
        return;
      case ForKind::kParallel:
        if (!in_parallel_ && !lane_var_) {
          EmitParallel(n);
          return;
        }
        break;
      case ForKind::kSerial: break;
    }
    // The outermost loop of a large fill decides for the loops inside it.
    bool outermost_fill = !in_large_fill_ && OnlyStoresConstants(n.body) &&
                          StatementCount(n.body) * n.extent > kMaxUnrolledFillElements;
    if (outermost_fill) in_large_fill_ = true;
    EmitRanges(n.loop_var, b_.getInt64(0), b_.getInt64(n.extent), n.body, in_large_fill_, !VectorizableByLLVM(n));
    if (outermost_fill) in_large_fill_ = false;
  }

  static bool IsEmptySeq(const Stmt& s) {
    return s->kind == StmtKind::kSeq && static_cast<const SeqNode&>(*s).stmts.empty();
  }

  // A loop over [begin, end) whose body is an if on a threshold of its own
  // variable, `if x < T` with T fixed in the loop (measure/versioning.h
  // writes a version and a masked sum's skip so), runs as a loop over
  // [begin, T) with the first branch and one over [T, end) with the other,
  // T clamped to the range. A branch inside the loop kept a sum's lanes in
  // memory across the steps (the compiled loads and stores of its
  // accumulators cannot move past a branch); each loop here has none.
  void EmitRanges(const Expr& var, llvm::Value* begin, llvm::Value* end, const Stmt& body, bool keep_loop,
                  bool no_vectorize) {
    if (body->kind == StmtKind::kIf) {
      const auto& n = static_cast<const IfNode&>(*body);
      const Expr& c = n.condition;
      if (c->kind == ExprKind::kLt && c->operands[0].get() == var.get() && !UsesVar(c->operands[1], var.get())) {
        llvm::Value* bound = b_.CreateSExtOrTrunc(Emit(c->operands[1]).v, b_.getInt64Ty());
        bound = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, begin,
                                         b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, bound, end));
        if (!IsEmptySeq(n.then_case)) EmitRanges(var, begin, bound, n.then_case, keep_loop, no_vectorize);
        if (n.else_case) EmitRanges(var, bound, end, n.else_case, keep_loop, no_vectorize);
        return;
      }
    }
    EmitCountedLoop(var, begin, end, [&] { EmitStmt(body); }, keep_loop, no_vectorize);
  }

  // The last `rest` lanes of a vectorized loop, fewer than a register holds
  // and not a power of two (a row of 13 channels), as one vector of the next
  // power of two whose lanes past `rest` are off: its loads and stores are
  // masked (AVX-512 masks them at no cost), where pieces of 8, 4 and 1 lanes
  // took three loads for each one. A 13-channel depthwise convolution with
  // its channels vectorized ran 3.3-3.8x slower than one of 16 channels
  // (bench/RESULTS.md, session 66). The lanes that are off compute on loop indices past the
  // end, which is harmless as long as nothing in the body can trap and each
  // access is a broadcast or a contiguous run (the masked forms of the
  // others are gathers, slower than the pieces).
  bool FitsOneMaskedVector(const Stmt& body, std::int64_t rest) {
    if (options_.vector_bits < 512 || mask_ || guard_ || MayTrap(body)) return false;
    const auto wide = static_cast<std::int64_t>(std::bit_ceil(static_cast<std::uint64_t>(rest)));
    bool ok = true;
    VisitAccesses(body, [&](const Buffer& buf, const Expr& index) {
      const std::int64_t bits = static_cast<std::int64_t>(StorageType(buf->dtype)->getPrimitiveSizeInBits());
      const std::int64_t stride = LaneStride(index);
      ok = ok && wide * bits <= options_.vector_bits && (stride == 0 || stride == 1);
    });
    return ok;
  }

  void EmitMaskedTail(const Stmt& body, std::int64_t rest) {
    lanes_ = static_cast<int>(std::bit_ceil(static_cast<std::uint64_t>(rest)));
    std::vector<llvm::Constant*> on;
    for (int i = 0; i < lanes_; ++i) on.push_back(b_.getInt1(i < rest));
    mask_ = tail_mask_ = llvm::ConstantVector::get(on);
    tail_lanes_ = rest;
    EmitStmt(body);
    mask_ = tail_mask_ = nullptr;
  }

  // Whether a contiguous access under the masked tail's own mask (no lane
  // condition) may read and write the whole vector: the buffer is
  // on this function's stack, where nothing else runs, with room past its
  // end (EmitScope). The store then writes back what it read in the lanes
  // that are off. Plain loads and stores let LLVM keep a local accumulator
  // in registers; masked ones kept it in memory, and a register block of 13
  // channels ran 2.3x slower than in pieces of 8, 4 and 1.
  bool PrivateTail(const Buffer& buf) {
    if (!tail_mask_ || mask_ != tail_mask_) return false;
    const auto* alloca = llvm::dyn_cast_or_null<llvm::AllocaInst>(buffers_.Find(buf.get()));
    return alloca && alloca->getFunction() == fn_;
  }

  // A parallel loop: the body is outlined into fn(closure, begin, end); the
  // closure holds every value bound here (loop variables, buffer pointers).
  void EmitParallel(const ForNode& n) {
    // Variables bound to constants (unrolled and one-iteration loops) stay
    // constants in the body: as arguments LLVM would know nothing of them.
    std::vector<std::pair<const ExprNode*, llvm::Value*>> captured_vars, constant_vars;
    for (const auto& binding : vars_.InBindingOrder()) {
      (llvm::isa<llvm::Constant>(binding.second) ? constant_vars : captured_vars).push_back(binding);
    }
    std::vector<std::pair<const BufferNode*, llvm::Value*>> captured_buffers = buffers_.InBindingOrder();
    std::size_t slots = captured_vars.size() + captured_buffers.size();
    llvm::Value* closure = EntryAlloca(b_.getInt64Ty(), static_cast<std::int64_t>(std::max<std::size_t>(slots, 1)), "closure");
    std::size_t slot = 0;
    for (const auto& [var, value] : captured_vars) {
      b_.CreateStore(value, b_.CreateConstGEP1_64(b_.getInt64Ty(), closure, slot++));
    }
    for (const auto& [buf, ptr] : captured_buffers) {
      b_.CreateStore(ptr, b_.CreateConstGEP1_64(b_.getInt64Ty(), closure, slot++));
    }

    auto* task_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty()}, false);
    llvm::Function* task = llvm::Function::Create(task_type, llvm::Function::InternalLinkage,
                                                  fn_->getName() + "_parallel_" + n.loop_var->name, mod_);
    SetAttributes(task);
    // Save this function's state, generate the task, restore.
    llvm::Function* saved_fn = fn_;
    llvm::BasicBlock* saved_allocas = alloca_block_;
    llvm::Value* saved_slot = entry_alloca_slot_;
    llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
    auto saved_vars = vars_;
    auto saved_buffers = buffers_;
    StartFunction(task);
    // The task unpacks the closure and calls the loop's own function, whose
    // buffer parameters are noalias as the kernel body's are: pointers
    // loaded from the closure carry no such promise, and without it LLVM
    // must assume a store to one buffer may change another, so it keeps
    // no value of a buffer in a register across a store (an accumulator
    // written to its output each step; bench/RESULTS.md, session 36). The
    // inliner turns the promise into alias scopes inside the task.
    std::vector<llvm::Value*> loop_args;
    std::vector<llvm::Type*> loop_types;
    slot = 0;
    llvm::Value* arg_closure = task->getArg(0);
    for (std::size_t k = 0; k < captured_vars.size(); ++k) {
      loop_args.push_back(b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstGEP1_64(b_.getInt64Ty(), arg_closure, slot++)));
      loop_types.push_back(b_.getInt64Ty());
    }
    for (std::size_t k = 0; k < captured_buffers.size(); ++k) {
      loop_args.push_back(b_.CreateLoad(b_.getPtrTy(), b_.CreateConstGEP1_64(b_.getInt64Ty(), arg_closure, slot++)));
      loop_types.push_back(b_.getPtrTy());
    }
    loop_args.push_back(task->getArg(1));
    loop_args.push_back(task->getArg(2));
    loop_types.insert(loop_types.end(), {b_.getInt64Ty(), b_.getInt64Ty()});
    llvm::Function* loop = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), loop_types, false),
                                                  llvm::Function::InternalLinkage, task->getName() + "_loop", mod_);
    SetAttributes(loop);
    b_.CreateCall(loop, loop_args);
    b_.CreateRetVoid();

    StartFunction(loop);
    in_parallel_ = true;
    unsigned arg = 0;
    for (const auto& [var, value] : constant_vars) vars_.Bind(var, value);
    for (const auto& [var, value] : captured_vars) vars_.Bind(var, loop->getArg(arg++));
    for (const auto& [buf, ptr] : captured_buffers) {
      loop->getArg(arg)->addAttr(llvm::Attribute::NoAlias);
      buffers_.Bind(buf, loop->getArg(arg++));
    }
    EmitCountedLoop(n.loop_var, loop->getArg(arg), loop->getArg(arg + 1), [&] { EmitStmt(n.body); },
                    /*keep_loop=*/false, !VectorizableByLLVM(n));
    b_.CreateRetVoid();
    in_parallel_ = false;
    fn_ = saved_fn;
    alloca_block_ = saved_allocas;
    entry_alloca_slot_ = saved_slot;
    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
    b_.restoreIP(saved_ip);

    llvm::FunctionCallee parallel_for = mod_.getOrInsertFunction(
        "tunedb_parallel_for", b_.getVoidTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt64Ty());
    b_.CreateCall(parallel_for, {task, closure, b_.getInt64(n.extent)});
  }

  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  const CodegenOptions& options_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* alloca_block_ = nullptr;
  llvm::Value* entry_alloca_slot_ = nullptr;
  Bindings<ExprNode> vars_;
  Bindings<BufferNode> buffers_;
  const ExprNode* lane_var_ = nullptr;
  int lanes_ = 1;
  llvm::Value* guard_ = nullptr;  // when set, loads read ZeroCell() where it is false (EmitGuardedSelect)
  // When set, the lanes whose loads and stores run (EmitMaskedSelect, EmitIf).
  llvm::Value* mask_ = nullptr;
  llvm::Value* tail_mask_ = nullptr;  // mask_ of a vectorized loop's masked tail (EmitMaskedTail)
  std::int64_t tail_lanes_ = 0;       // its lanes that are on
  // Loads of a transposing block whose lanes are already in registers, with
  // their values in the row being emitted (EmitTransposingBlock).
  std::vector<std::pair<const ExprNode*, llvm::Value*>> transposed_rows_;
  llvm::GlobalVariable* zero_cell_ = nullptr;
  bool in_parallel_ = false;
  bool in_large_fill_ = false;  // inside a fill of over kMaxUnrolledFillElements
};

}  // namespace

std::unique_ptr<llvm::Module> GenerateModule(const ir::PrimFunc& lowered, llvm::LLVMContext& ctx,
                                             const std::string& name, const CodegenOptions& options) {
  auto mod = std::make_unique<llvm::Module>(name, ctx);
  Codegen(ctx, *mod, options).Generate(VersionBoundsChecks(lowered, options.vector_bits), name);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*mod, &os)) throw std::runtime_error("codegen produced invalid LLVM IR: " + os.str());
  return mod;
}

}  // namespace tunedb::measure
