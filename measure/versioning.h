// Loop versioning of bounds checks: the last rewrite of a lowered program
// (lower.h) before code generation. Features are read from the program
// before it (costmodel/features.h), so the cost model never sees it.
//
// Padding (pad_einsum's, a convolution's zero border) leaves checks such as
// `i < 127 and k < 131` on the loads of a register block. In a vectorized
// loop each checked load becomes a selected address, a scalar load and a
// broadcast where an unchecked one folds into the multiply-add, and the
// checks hold almost everywhere: a matmul padded from 127 x 129 x 131 ran at
// 35-57 us where the same schedule of 128 x 144 x 132 runs at 24-25 us
// (bench/RESULTS.md, session 39). So in a loop whose variable a check
// uses, the statement that holds the check is there twice (TVM's
// LoopPartition splits the loop's range instead):
//
//   for i_1 in range(2):
//     if i_0 * 32 + i_1 * 16 + 15 < 127:   # the check holds in the whole body
//       <body, the check replaced by true>
//     else:
//       <body as it was>
//
// so only the iterations at the edge run checked. A check is an integer
// comparison (<, <=, >, >=) in a select's or an if's condition, alone or
// under `and`, affine in the loop variables with the loops inside the
// versioned one bounded. The copies cost compile time, so only the checks
// worth it are versioned (versioning.cc says which), the checked copy is
// not versioned again, and versions nest at most kMaxVersionDepth deep.
// A check the same for all lanes of a vector wider than one register is
// shared by its registers and not worth a copy, unless it masks a product
// (`k <= i ? A[i, k] * B[k, j] : 0`): the select keeps each register's
// multiply from fusing into its add. Such a check is versioned where its
// copy leaves no branch inside its loops (where one was left, LLVM kept
// the register block's accumulators in memory). A check versioned around
// vector lanes alone (a concatenation's seam) gets a third copy, where it
// fails throughout.
//
// Before versioning, a serial loop whose hot checks change at constant
// points of its range, and fail throughout part of it, is split there into
// loops over each range, the checks decided in each folded (TVM's
// LoopPartition): reflect padding's `h < 3 ? 3 - h : (h >= 131 ? 257 - h :
// h - 3)` leaves no copy where both checks hold, and three ranges need no
// check at all. And a loop whose body only adds masked terms to sums skips
// the iterations where the mask fails throughout (a triangular matrix's
// product: the steps of k past the block's last row), or, where its
// variable does not move the mask, is skipped whole (a symmetric
// product's `j <= i`: the blocks above the diagonal).
//
// First of all, a serial or unrolled loop whose body only adds terms to
// sums, masked by a hot test of `(a * x + rest) % m` (m a constant up to
// 4, a not a multiple of it), is unrolled by m: each copy sees one residue
// of x, so a strided gather's parity tests (a transposed convolution's `(h
// + 1 - kh) % 2 == 0`) fold, and the copies that then add only zero are
// dropped; a test that only loops outside still decide guards its copy.
// Unrolling keeps the iterations' order; at most 16 copies of a statement
// along one path.
//
// Last, an if that is the only statement of a serial loop's body, on a
// condition affine in the loop's variable whose other terms the loop does
// not move (a version's, a skip's), is written `if x < T`, and code
// generation runs the loop as two loops, below T and from T (codegen.h):
// a branch inside the loop kept a sum's partial sums in memory. So a check
// of an accumulator's lanes whose other levels all have a wide edge (a dot
// product's jobs, 2 of them, one at the edge) is versioned at the serial
// loop around the lanes: 0.15 ms to 53 us for a dot product of 1000003
// floats in 2 jobs of 16 lanes (bench/RESULTS.md, session 86).
#pragma once

#include "ir/stmt.h"

namespace tunedb::measure {

inline constexpr int kMaxVersionDepth = 3;

// A copy of `lowered` with its bounds checks versioned; computes the same.
// `vector_bits`: the target's vector registers (Target::VectorBits).
ir::PrimFunc VersionBoundsChecks(const ir::PrimFunc& lowered, int vector_bits);

}  // namespace tunedb::measure
