#include "costmodel/features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "ir/simplify.h"

namespace tunedb::costmodel {
namespace {

using namespace tunedb::ir;

constexpr int kBuffersPerRow = 5;
constexpr int kIntensityPoints = 10;

float Log(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

std::vector<FeatureColumn> MakeColumns() {
  std::vector<FeatureColumn> c = {
      {"float_mad", "float multiply-adds (a*b+c counted once)"},
      {"float_addsub", "other float additions and subtractions"},
      {"float_mul", "other float multiplications"},
      {"float_div", "float divisions"},
      {"float_cmp", "float comparisons"},
      {"float_math", "float math-function calls (exp, log, ...)"},
      {"float_minmax", "float min/max"},
      {"int_addsub", "integer additions and subtractions (index arithmetic)"},
      {"int_mul", "integer multiplications"},
      {"int_divmod", "integer floordiv/floormod"},
      {"int_cmp", "integer comparisons"},
      {"bool_op", "and/or/not"},
      {"select_op", "selects"},
      {"num_loops", "loops around the store"},
      {"loop_prod", "product of the extents of those loops (how often the store runs)"},
      {"vec_num", "vectorized loops around the store"},
      {"vec_prod", "product of their extents"},
      {"vec_len", "extent of the innermost vectorized loop"},
      {"vec_pos", "position of the innermost vectorized loop: 0 none, 1 innermost, 2 middle, 3 outermost"},
      {"vec_implicit", "1 when that loop is left to LLVM's loop vectorizer (the schedule vectorized nothing)"},
      {"unroll_num", "unrolled loops around the store"},
      {"unroll_prod", "product of their extents"},
      {"unroll_len", "extent of the innermost unrolled loop"},
      {"parallel_num", "parallel loops around the store"},
      {"parallel_prod", "product of their extents"},
      {"parallel_len", "extent of the innermost parallel loop"},
      {"serial_prod", "product of the extents of serial loops"},
      {"stores_in_row", "stores merged into this row (one row per stored buffer)"},
  };
  for (int b = 0; b < kBuffersPerRow; ++b) {
    std::string p = "buf" + std::to_string(b) + "_";
    std::vector<FeatureColumn> per = {
        {p + "kind", "access kind: 0 absent, 1 read, 2 write, 3 read and write"},
        {p + "bytes", "bytes accessed (element size x accesses)"},
        {p + "unique_bytes", "bytes of the region touched by the whole loop nest"},
        {p + "lines", "cache lines accessed (bytes / 64)"},
        {p + "unique_lines", "cache lines of the region touched"},
        {p + "reuse_type", "0 none, 1 a loop does not move the index (reuse across its iterations)"},
        {p + "reuse_distance", "iterations between reuses (product of extents inside the innermost reusing loop)"},
        {p + "reuse_count", "reuses (product of the extents of loops that do not move the index)"},
        {p + "stride", "elements between consecutive iterations of the innermost loop that moves the index"},
        {p + "innermost_contiguous", "1 when the innermost loop walks the buffer with stride 1"},
    };
    c.insert(c.end(), per.begin(), per.end());
  }
  for (int i = 0; i < kIntensityPoints; ++i) {
    c.push_back({"intensity" + std::to_string(i),
                 "float operations per unique byte inside the " + std::to_string(i) + "-th loop from the innermost"});
  }
  c.push_back({"alloc_bytes", "bytes of buffers allocated in the scopes around the store"});
  c.push_back({"alloc_local", "1 when the stored buffer is allocated inside a loop (compacted, e.g. an accumulator)"});
  c.push_back({"total_flops", "float operations of the whole program"});
  c.push_back({"tile_steps", "iterations of the register tile: the innermost vectorized or unrolled loops"});
  c.push_back({"tile_ops", "vector arithmetic instructions per run of the register tile (16 float lanes)"});
  c.push_back({"tile_loads", "vector loads per run of the register tile, not counting those kept in registers"});
  c.push_back({"tile_stores", "vector stores per run of the register tile, not counting those kept in registers"});
  c.push_back({"tile_registers",
               "vectors kept in registers across the loop around the tile (accesses it does not move; 0 when "
               "more than 28)"});
  c.push_back({"tile_memory_per_op", "(tile_loads + tile_stores) / tile_ops, not log-transformed"});
  c.push_back({"tile_outer_extent", "extent of the serial loop around the register tile"});
  c.push_back({"work_per_lane",
               "store executions / (extent of the vectorized loops x extent of the parallel loops): the serial "
               "work left to one vector lane of one thread"});
  return c;
}

struct LoopInfo {
  const ForNode* loop;
};

struct Context {
  std::vector<const ForNode*> loops;
  std::int64_t alloc_bytes = 0;
  std::set<const BufferNode*> scoped;  // allocated inside a loop
};

struct Counts {
  double v[13] = {0};
};

// Operation counts of one expression tree.
void CountOps(const Expr& e, Counts& c) {
  VisitExpr(e, [&](const Expr& x) {
    bool fp = IsFloat(x->dtype);
    switch (x->kind) {
      case ExprKind::kAdd: case ExprKind::kSub: {
        bool mad = fp && x->kind == ExprKind::kAdd &&
                   (x->operands[0]->kind == ExprKind::kMul || x->operands[1]->kind == ExprKind::kMul);
        if (mad) c.v[0] += 1, c.v[2] -= 1;  // the multiply is counted inside the MAD
        else if (fp) c.v[1] += 1;
        else c.v[7] += 1;
        break;
      }
      case ExprKind::kMul: if (fp) c.v[2] += 1; else c.v[8] += 1; break;
      case ExprKind::kDiv: c.v[3] += 1; break;
      case ExprKind::kFloorDiv: case ExprKind::kFloorMod: c.v[9] += 1; break;
      case ExprKind::kMin: case ExprKind::kMax: if (fp) c.v[6] += 1; else c.v[7] += 1; break;
      case ExprKind::kEq: case ExprKind::kNe: case ExprKind::kLt: case ExprKind::kLe: case ExprKind::kGt: case ExprKind::kGe:
        if (IsFloat(x->operands[0]->dtype)) c.v[4] += 1; else c.v[10] += 1;
        break;
      case ExprKind::kAnd: case ExprKind::kOr: case ExprKind::kNot: c.v[11] += 1; break;
      case ExprKind::kSelect: c.v[12] += 1; break;
      case ExprKind::kCall: c.v[5] += 1; break;
      default: break;
    }
  });
}

struct Access {
  const BufferNode* buffer;
  Expr index;  // flat
  bool write;
};

// The register tile of a store: the innermost loops that are vectorized or
// unrolled, i.e. what code generation turns into one straight-line block of
// vector instructions. Per execution of that block: vector arithmetic
// instructions, vector loads and stores, and how many vectors stay in
// registers across the serial loop just outside it (accesses that loop
// does not move, e.g. an accumulator across the reduction loop: LLVM keeps
// them in registers when they fit). Per-buffer columns describe the whole
// loop nest; these describe the instruction mix of the innermost code,
// which decides most of the speed of a compute-bound kernel.
struct RegisterTile {
  double steps = 1, ops = 0, loads = 0, stores = 0, registers = 0, outer_extent = 1;
};

struct Row {
  Counts ops;
  std::vector<const ForNode*> loops;  // of the store that runs most often
  double executions = 0;
  int stores = 0;
  std::vector<Access> accesses;
  std::int64_t alloc_bytes = 0;
  bool local = false;
  double float_ops = 0;  // per run of that store
  // That store's accesses: row.accesses[tile_begin, tile_end), its write first.
  std::size_t tile_begin = 0, tile_end = 0;
};

// An index's coefficients in the loops of a row: coeff[i] of loops[i] (0
// when it does not move it); unknown[i] when the index is not linear in
// loops[i]. A fused loop appears as floordiv/floormod (e.g. the parallel
// loop of most candidates), which makes the index non-linear in that loop
// only: every other loop keeps its coefficient.
struct LoopCoefficients {
  std::vector<std::int64_t> coeff;
  std::vector<char> unknown;  // char, not bool: read in the innermost loops
};

class Extractor {
 public:
  std::vector<FeatureRow> Run(const PrimFunc& f) {
    Walk(f.body);
    double total_flops = 0;
    for (const BufferNode* buf : order_) {  // program order: the same sum on every run
      for (int k : {0, 1, 2, 3, 4, 5, 6}) total_flops += rows_[buf].ops.v[k] * (k == 0 ? 2 : 1);
    }
    std::vector<FeatureRow> out;
    for (const BufferNode* buf : order_) out.push_back(Features(rows_[buf], total_flops));
    return out;
  }

 private:
  static constexpr double kVectorLanes = 16;  // float32 lanes of a 512-bit vector
  static constexpr double kVectorRegisters = 28;  // of 32, some left for loads and addresses
  static constexpr std::int64_t kImplicitMinExtent = 4;

  // How each loop of the row runs: its own kind, except the loop that
  // LLVM's loop vectorizer (part of O3) vectorizes although the schedule
  // did not. That vectorizer only sees the innermost loop code generation
  // emits (unrolled loops become straight code inside it), and only
  // vectorizes it here when the stored element moves with it contiguously:
  // float reductions are not reassociated (no fast-math), so a loop the
  // store does not move stays scalar. How wide, and whether at all, is its
  // cost model's call (in a 32x48x64 matmul with j split innermost: 2- and
  // 3-long loops became 2-lane vectors, 6 stayed scalar, 16 became 8-lane);
  // the rule takes loops at least 4 long, which ranked better than 2 on
  // the small saved data and alike on the tuning-shape data. Found on
  // design-space samples: a dense layer whose innermost loop is serial ran
  // with 8-lane vectors (gathered loads included), faster than 501 of its
  // workload's 600 samples.
  static std::vector<ForKind> EffectiveKinds(const Row& row, const std::vector<LoopCoefficients>& coefficients,
                                             bool* implicit) {
    std::vector<ForKind> kinds;
    for (const ForNode* l : row.loops) kinds.push_back(l->for_kind);
    *implicit = false;
    if (std::find(kinds.begin(), kinds.end(), ForKind::kVectorized) != kinds.end() || row.tile_end == row.tile_begin) {
      return kinds;
    }
    std::size_t inner = kinds.size();
    while (inner > 0 && kinds[inner - 1] == ForKind::kUnrolled) --inner;
    if (inner == 0) return kinds;
    const ForNode* loop = row.loops[inner - 1];
    const LoopCoefficients& store = coefficients[row.tile_begin];
    if (loop->for_kind == ForKind::kSerial && loop->extent >= kImplicitMinExtent && !store.unknown[inner - 1] &&
        std::abs(store.coeff[inner - 1]) == 1) {
      kinds[inner - 1] = ForKind::kVectorized;
      *implicit = true;
    }
    return kinds;
  }

  static RegisterTile TileOf(const Row& row, const std::vector<ForKind>& kinds,
                             const std::vector<LoopCoefficients>& coefficients) {
    const auto& loops = row.loops;
    std::size_t first = loops.size();  // the tile is loops [first, end)
    while (first > 0 && (kinds[first - 1] == ForKind::kVectorized || kinds[first - 1] == ForKind::kUnrolled)) {
      --first;
    }
    RegisterTile t;
    double lanes = 1;
    for (std::size_t i = first; i < loops.size(); ++i) {
      t.steps *= static_cast<double>(loops[i]->extent);
      if (kinds[i] == ForKind::kVectorized) lanes = std::min(kVectorLanes, static_cast<double>(loops[i]->extent));
    }
    t.ops = std::max(1.0, row.float_ops) * t.steps / lanes;
    if (first > 0) t.outer_extent = static_cast<double>(loops[first - 1]->extent);
    // Per access: the vectors it touches in the tile (a vectorized loop that
    // walks it contiguously takes extent / 16 vector loads, one that does
    // not move it a broadcast, any other stride one load per lane), and
    // whether it stays in registers across the loop around the tile (if
    // all such accesses fit). A load of the stored element (an
    // accumulation) shares the store's registers.
    struct Use { double vectors; bool kept; bool write; bool shares_store; };
    std::vector<Use> uses;
    const Access& store = row.accesses[row.tile_begin];
    for (std::size_t a = row.tile_begin; a < row.tile_end; ++a) {
      const Access& access = row.accesses[a];
      const LoopCoefficients& c = coefficients[a];
      double vectors = 1;
      for (std::size_t i = first; i < loops.size(); ++i) {
        if (c.coeff[i] == 0 && !c.unknown[i]) continue;
        double extent = static_cast<double>(loops[i]->extent);
        bool contiguous = kinds[i] == ForKind::kVectorized && !c.unknown[i] && std::abs(c.coeff[i]) == 1;
        vectors *= contiguous ? std::ceil(extent * DataTypeBytes(access.buffer->dtype) / (kVectorLanes * 4)) : extent;
      }
      bool kept = first > 0 && c.coeff[first - 1] == 0 && !c.unknown[first - 1];
      bool shares = !access.write && access.buffer == store.buffer && ExprEqual(access.index, store.index);
      uses.push_back({vectors, kept, access.write, shares});
    }
    for (const Use& u : uses) t.registers += u.kept && !u.shares_store ? u.vectors : 0;
    bool fits = t.registers <= kVectorRegisters;
    for (const Use& u : uses) {
      if (!(u.kept && fits)) (u.write ? t.stores : t.loads) += u.vectors;
    }
    return t;
  }

  void Walk(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        auto& n = static_cast<const ForNode&>(*s);
        ctx_.loops.push_back(&n);
        ranges_[n.loop_var.get()] = n.extent;
        Walk(n.body);
        ctx_.loops.pop_back();
        return;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : static_cast<const SeqNode&>(*s).stmts) Walk(c);
        return;
      case StmtKind::kIf: {
        auto& n = static_cast<const IfNode&>(*s);
        Walk(n.then_case);
        Walk(n.else_case);
        return;
      }
      case StmtKind::kBlock: {
        auto& n = static_cast<const BlockNode&>(*s);
        Context saved = ctx_;
        for (const Buffer& b : n.alloc_buffers) {
          ctx_.alloc_bytes += b->NumElements() * DataTypeBytes(b->dtype);
          if (!ctx_.loops.empty()) ctx_.scoped.insert(b.get());
        }
        Walk(n.body);
        ctx_ = saved;
        return;
      }
      case StmtKind::kStore: break;
    }
    auto& st = static_cast<const StoreNode&>(*s);
    double runs = 1;
    for (const ForNode* l : ctx_.loops) runs *= static_cast<double>(l->extent);
    if (!rows_.count(st.buffer.get())) order_.push_back(st.buffer.get());
    Row& row = rows_[st.buffer.get()];
    Counts c;
    CountOps(st.value, c);
    for (const Expr& i : st.indices) CountOps(i, c);
    for (int k = 0; k < 13; ++k) row.ops.v[k] += c.v[k] * runs;
    ++row.stores;
    double float_ops = 0;
    for (int k = 0; k <= 6; ++k) float_ops += c.v[k];
    // The row describes the store that runs most often; of equals (a
    // reduction's init and update in one nest), the one that computes.
    bool describes = runs > row.executions || (runs == row.executions && float_ops > row.float_ops);
    if (describes) {
      row.executions = runs;
      row.float_ops = float_ops;
      row.loops = ctx_.loops;
      row.tile_begin = row.accesses.size();
    }
    row.alloc_bytes = std::max(row.alloc_bytes, ctx_.alloc_bytes);
    row.local = row.local || ctx_.scoped.count(st.buffer.get());
    row.accesses.push_back({st.buffer.get(), st.indices[0], true});
    VisitExpr(st.value, [&](const Expr& x) {
      if (x->kind == ExprKind::kLoad) row.accesses.push_back({x->buffer.get(), x->operands[0], false});
    });
    if (describes) row.tile_end = row.accesses.size();
  }

  FeatureRow Features(const Row& row, double total_flops) {
    FeatureRow f;
    for (int k = 0; k < 13; ++k) f.push_back(Log(row.ops.v[k]));
    const auto& loops = row.loops;
    std::set<const ExprNode*> loop_vars;
    for (const ForNode* l : loops) loop_vars.insert(l->loop_var.get());
    std::vector<LoopCoefficients> coefficients;
    for (const Access& a : row.accesses) {
      LoopCoefficients& c = coefficients.emplace_back();
      c.coeff.assign(loops.size(), 0);
      c.unknown.assign(loops.size(), 0);
      PartialCoefficients by_var = LinearCoefficientsByVar(a.index, loop_vars, ranges_);
      for (std::size_t i = 0; i < loops.size(); ++i) {
        const ExprNode* var = loops[i]->loop_var.get();
        c.unknown[i] = by_var.nonlinear.count(var) > 0;
        for (const auto& [v, k] : by_var.linear) {
          if (v == var) c.coeff[i] = k;
        }
      }
    }
    bool implicit = false;
    const std::vector<ForKind> kinds = EffectiveKinds(row, coefficients, &implicit);
    double prod = 1, vec_prod = 1, unroll_prod = 1, par_prod = 1, serial_prod = 1;
    int vec_num = 0, unroll_num = 0, par_num = 0;
    std::int64_t vec_len = 0, unroll_len = 0, par_len = 0;
    int vec_pos = 0;
    for (std::size_t i = 0; i < loops.size(); ++i) {
      const ForNode* l = loops[i];
      prod *= static_cast<double>(l->extent);
      switch (kinds[i]) {
        case ForKind::kVectorized:
          ++vec_num;
          vec_prod *= static_cast<double>(l->extent);
          vec_len = l->extent;
          vec_pos = i + 1 == loops.size() ? 1 : i == 0 ? 3 : 2;
          break;
        case ForKind::kUnrolled: ++unroll_num, unroll_prod *= static_cast<double>(l->extent), unroll_len = l->extent; break;
        case ForKind::kParallel: ++par_num, par_prod *= static_cast<double>(l->extent), par_len = l->extent; break;
        case ForKind::kSerial: serial_prod *= static_cast<double>(l->extent); break;
      }
    }
    f.insert(f.end(), {static_cast<float>(loops.size()), Log(prod), static_cast<float>(vec_num), Log(vec_prod),
                       Log(static_cast<double>(vec_len)), static_cast<float>(vec_pos), implicit ? 1.0f : 0.0f,
                       static_cast<float>(unroll_num),
                       Log(unroll_prod), Log(static_cast<double>(unroll_len)), static_cast<float>(par_num), Log(par_prod),
                       Log(static_cast<double>(par_len)), Log(serial_prod), static_cast<float>(row.stores)});

    // Buffers: merge accesses per buffer, most bytes first.
    struct BufStats {
      int kind = 0;
      double bytes = 0, unique = 0, reuse_dist = 0, reuse_count = 1;
      int reuse_type = 0;
      double stride = 0;
      bool contiguous = false;
    };
    std::map<const BufferNode*, BufStats> stats;
    std::vector<const BufferNode*> first_seen;  // buffers in order of first access: a deterministic order
    for (std::size_t ai = 0; ai < row.accesses.size(); ++ai) {
      const Access& a = row.accesses[ai];
      if (!stats.count(a.buffer)) first_seen.push_back(a.buffer);
      BufStats& s = stats[a.buffer];
      s.kind |= a.write ? 2 : 1;
      int elem = DataTypeBytes(a.buffer->dtype);
      s.bytes += static_cast<double>(elem) * row.executions;
      const std::vector<std::int64_t>& coeff = coefficients[ai].coeff;
      const std::vector<char>& unknown = coefficients[ai].unknown;
      // Unique footprint: the affine span of the linear loops, times the
      // extents of the others; at most the whole buffer.
      double lo = 0, hi = 0, unknown_extents = 1;
      for (std::size_t i = 0; i < loops.size(); ++i) {
        double c = static_cast<double>(coeff[i]);
        if (unknown[i]) unknown_extents *= static_cast<double>(loops[i]->extent);
        else (c < 0 ? lo : hi) += c * static_cast<double>(loops[i]->extent - 1);
      }
      double span = std::min((hi - lo + 1) * unknown_extents, static_cast<double>(a.buffer->NumElements()));
      s.unique = std::max(s.unique, span * elem);
      // Reuse: loops that do not move the index.
      double count = 1, dist = 1;
      bool inner_found = false;
      for (std::size_t i = loops.size(); i-- > 0;) {
        const ForNode* l = loops[i];
        bool moves = unknown[i] || coeff[i] != 0;
        if (!moves) {
          count *= static_cast<double>(l->extent);
          if (!inner_found) {
            inner_found = true;
            s.reuse_type = 1;
            s.reuse_dist = dist;
          }
        }
        dist *= static_cast<double>(l->extent);
      }
      s.reuse_count = std::max(s.reuse_count, count);
      for (std::size_t i = loops.size(); i-- > 0;) {
        if (unknown[i]) break;  // the stride is unknown: left 0
        if (coeff[i] != 0) {
          s.stride = static_cast<double>(std::abs(coeff[i]));
          s.contiguous = i + 1 == loops.size() && std::abs(coeff[i]) == 1;
          break;
        }
      }
    }
    std::vector<std::pair<const BufferNode*, BufStats>> sorted;
    for (const BufferNode* b : first_seen) sorted.emplace_back(b, stats[b]);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
    for (int b = 0; b < kBuffersPerRow; ++b) {
      if (b >= static_cast<int>(sorted.size())) {
        f.insert(f.end(), 10, 0.0f);
        continue;
      }
      const BufStats& s = sorted[b].second;
      f.insert(f.end(), {static_cast<float>(s.kind), Log(s.bytes), Log(s.unique), Log(s.bytes / 64),
                         Log(s.unique / 64), static_cast<float>(s.reuse_type), Log(s.reuse_dist), Log(s.reuse_count),
                         Log(s.stride), s.contiguous ? 1.0f : 0.0f});
    }
    // Arithmetic intensity inside each loop level, innermost first.
    double flops = 0;
    for (int k : {0, 1, 2, 3, 4, 5, 6}) flops += row.ops.v[k] * (k == 0 ? 2 : 1);
    double per_run = row.executions > 0 ? flops / row.executions : 0;
    double inner = 1;
    for (int i = 0; i < kIntensityPoints; ++i) {
      if (i < static_cast<int>(loops.size())) inner *= static_cast<double>(loops[loops.size() - 1 - i]->extent);
      double bytes = 0;
      for (const auto& [buf, s] : sorted) bytes += std::min(s.unique, static_cast<double>(DataTypeBytes(buf->dtype)) * inner);
      f.push_back(i < static_cast<int>(loops.size()) && bytes > 0 ? Log(per_run * inner / bytes) : 0.0f);
    }
    f.push_back(Log(static_cast<double>(row.alloc_bytes)));
    f.push_back(row.local ? 1.0f : 0.0f);
    f.push_back(Log(total_flops));
    const RegisterTile t = TileOf(row, kinds, coefficients);
    f.insert(f.end(), {Log(t.steps), Log(t.ops), Log(t.loads), Log(t.stores),
                       Log(t.registers <= kVectorRegisters ? t.registers : 0),
                       static_cast<float>((t.loads + t.stores) / t.ops), Log(t.outer_extent)});
    f.push_back(Log(row.executions / (vec_prod * par_prod)));
    return f;
  }

  Context ctx_;
  VarRanges ranges_;
  std::map<const BufferNode*, Row> rows_;
  std::vector<const BufferNode*> order_;
};

}  // namespace

const std::vector<FeatureColumn>& FeatureColumns() {
  static const std::vector<FeatureColumn> columns = MakeColumns();
  return columns;
}

std::size_t NumFeatures() { return FeatureColumns().size(); }

std::size_t FeatureIndex(std::string_view name) {
  const auto& cols = FeatureColumns();
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].name == name) return i;
  }
  throw std::out_of_range("no feature column " + std::string(name));
}

std::vector<FeatureRow> ExtractFeatures(const ir::PrimFunc& lowered) { return Extractor().Run(lowered); }

}  // namespace tunedb::costmodel
