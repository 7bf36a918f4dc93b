#include "ir/limits.h"

#include <algorithm>
#include <limits>
#include <string>

#include "ir/error.h"

namespace tunedb::ir {
namespace {

// a * b, or -1 when the product exceeds `limit` (both factors are positive).
std::int64_t CheckedProduct(std::int64_t a, std::int64_t b, std::int64_t limit) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out > limit) return -1;
  return out;
}

std::string ShapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Bounds in 128 bits, clamped after every step to just past int64 so that
// a product of two never overflows: a clamped bound is outside int64, and
// so outside any integer type, either way.
using Wide = __int128;
constexpr Wide kClamp = (Wide{1} << 63) + 1;

struct WideBound {
  Wide min, max;
};

WideBound Clamped(Wide lo, Wide hi) { return {std::clamp(lo, -kClamp, kClamp), std::clamp(hi, -kClamp, kClamp)}; }

// Every value of an integer type.
WideBound Whole(DataType t) {
  if (t == DataType::kInt32) return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
}
bool Inside(const WideBound& b, DataType t) {
  WideBound whole = Whole(t);
  return b.min >= whole.min && b.max <= whole.max;
}

// A bound in decimal; a clamped one says only that it is past 2^63.
std::string WideText(Wide v) {
  if (v == kClamp) return "past 2^63";
  if (v == -kClamp) return "past -2^63";
  if (v < 0) return "-" + WideText(-v);
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  return digits;
}

// Floor division and modulo by a constant, as the interpreter computes them.
Wide FloorDivWide(Wide a, Wide b) {
  Wide q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// The bounds of each part of an expression computed as written, innermost
// first, remembering the first integer part that reads no data and can
// leave its type. Not BoundOf (ir/simplify.h): that bounds the simplified
// expression, only while it fits int64, and knows nothing of loads and
// casts, where this must see every part as written and how far past its
// type it goes.
class EscapeFinder {
 public:
  explicit EscapeFinder(const VarRanges& ranges) : ranges_(ranges) {}

  struct Result {
    std::optional<WideBound> bound;  // nothing: unknown
    bool reads_data = false;
  };

  Result Visit(const Expr& e) {
    std::vector<Result> ops;
    ops.reserve(e->operands.size());
    bool reads_data = e->kind == ExprKind::kLoad;
    for (const Expr& operand : e->operands) {
      ops.push_back(Visit(operand));
      reads_data |= ops.back().reads_data;
    }
    Result r{BoundOfNode(e, ops), reads_data};
    if (!escape_ && IsInt(e->dtype) && !reads_data && r.bound && !Inside(*r.bound, e->dtype)) {
      escape_ = IntEscape{e, WideText(r.bound->min) + ".." + WideText(r.bound->max)};
    }
    return r;
  }

  std::optional<IntEscape> escape_;

 private:
  std::optional<WideBound> BoundOfNode(const Expr& e, const std::vector<Result>& ops) {
    if (e->dtype == DataType::kBool) return WideBound{0, 1};
    if (!IsInt(e->dtype)) return std::nullopt;
    auto operand = [&](std::size_t k) { return ops[k].bound; };
    switch (e->kind) {
      case ExprKind::kIntImm: return WideBound{e->int_value, e->int_value};
      case ExprKind::kVar: {
        auto it = ranges_.find(e.get());
        if (it == ranges_.end() || it->second < 1) return std::nullopt;
        return WideBound{0, it->second - 1};
      }
      case ExprKind::kLoad: return Whole(e->dtype);
      case ExprKind::kCast: {
        // A conversion to int32 wraps by request, and one from int32 sees
        // the value wrapped; a float converts to any value of the type.
        auto a = operand(0);
        DataType from = e->operands[0]->dtype;
        if (!IsInt(from) && from != DataType::kBool) return Whole(e->dtype);
        if (e->dtype != DataType::kInt32 && from != DataType::kInt32) return a;
        return a && Inside(*a, DataType::kInt32) ? *a : Whole(DataType::kInt32);
      }
      case ExprKind::kCall: return std::nullopt;
      default: break;
    }
    auto a = operand(0), b = e->operands.size() > 1 ? operand(1) : std::nullopt;
    if (e->kind == ExprKind::kSelect) {
      auto t = operand(1), f = operand(2);
      if (!t || !f) return std::nullopt;
      return WideBound{std::min(t->min, f->min), std::max(t->max, f->max)};
    }
    if (!a || !b) return std::nullopt;
    switch (e->kind) {
      case ExprKind::kAdd: return Clamped(a->min + b->min, a->max + b->max);
      case ExprKind::kSub: return Clamped(a->min - b->max, a->max - b->min);
      case ExprKind::kMul: {
        Wide c[] = {a->min * b->min, a->min * b->max, a->max * b->min, a->max * b->max};
        return Clamped(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
      }
      case ExprKind::kMin: return WideBound{std::min(a->min, b->min), std::min(a->max, b->max)};
      case ExprKind::kMax: return WideBound{std::max(a->min, b->min), std::max(a->max, b->max)};
      case ExprKind::kFloorDiv: {
        if (b->min == b->max && b->min != 0) {
          Wide q1 = FloorDivWide(a->min, b->min), q2 = FloorDivWide(a->max, b->min);
          return WideBound{std::min(q1, q2), std::max(q1, q2)};
        }
        // |a / b| <= |a| for |b| >= 1, and -1 for a small a of the other
        // sign; x / -1 is -x, which for the most negative value leaves the
        // type.
        Wide m = std::max({-a->min, a->max, Wide{1}});
        return WideBound{-m, m};
      }
      case ExprKind::kFloorMod: {
        // The result takes the divisor's sign and is smaller than it.
        if (b->min > 0 && a->min >= 0 && a->max < b->min) return a;
        Wide m = std::max({-b->min, b->max, Wide{1}}) - 1;
        return WideBound{b->min > 0 ? 0 : -m, b->max < 0 ? 0 : m};
      }
      default: return std::nullopt;
    }
  }

  const VarRanges& ranges_;
};

}  // namespace

std::optional<IntEscape> FindIntEscape(const Expr& e, const VarRanges& ranges) {
  EscapeFinder finder(ranges);
  finder.Visit(e);
  return finder.escape_;
}

void CheckBufferSize(const Buffer& b) {
  std::int64_t bytes = DataTypeBytes(b->dtype);
  for (std::int64_t d : b->shape) {
    bytes = CheckedProduct(bytes, d, kMaxBufferBytes);
    if (bytes < 0) {
      throw IrError("buffer '" + b->name + "' of shape " + ShapeText(b->shape) + " " +
                    std::string(DataTypeName(b->dtype)) + " is larger than tunedb's limit of 2^48 bytes (256 TiB)");
    }
  }
}

void CheckIterationCount(const std::string& block, const std::vector<std::int64_t>& extents) {
  std::int64_t points = 1;
  for (std::int64_t e : extents) {
    points = CheckedProduct(points, e, kMaxBlockIterations);
    if (points < 0) throw IrError("block '" + block + "' iterates more than tunedb's limit of 2^48 times");
  }
}

void CheckProgramSize(const PrimFunc& func) {
  for (const Buffer& b : func.params) CheckBufferSize(b);
  for (const BlockNode* block : CollectBlocks(func)) {
    for (const Buffer& b : block->alloc_buffers) CheckBufferSize(b);
    std::vector<std::int64_t> extents;
    for (const IterVar& iv : block->iter_vars) extents.push_back(iv.extent);
    CheckIterationCount(block->name, extents);
  }
}

}  // namespace tunedb::ir
