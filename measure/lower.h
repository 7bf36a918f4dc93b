// Lowering: a (scheduled) program becomes the flat loop nest that code
// generation and feature extraction read.
//
// The lowered program is an ir::PrimFunc of a restricted form:
//  - no computation blocks: each block became its body with the iteration
//    variables replaced by their bindings, guarded by its predicate; a
//    reduction init runs under `if all reduction bindings are 0` (or where
//    decompose_reduction put it);
//  - the only blocks left are allocation scopes: blocks without iteration
//    variables that hold alloc_buffers (the root, and one per compacted
//    buffer around the body of the loop it was compacted to);
//  - every buffer is one-dimensional (row-major flattening), with the
//    parameters in their original order;
//  - intermediate buffers are compacted: shrunk to the region one iteration
//    of their innermost common loop touches, and allocated inside that
//    loop, so a cache_write "local" accumulator becomes a small array that
//    can live in registers (and is private to each thread of a parallel
//    loop); its dimensions are reordered so that the one the vectorized
//    loops accessing it move most is innermost (also for a buffer that
//    shrinks nowhere, which stays where it was allocated);
//  - loops under `pragma_auto_unroll_max_step = N` whose nest has at most
//    N steps become unrolled loops;
//  - index arithmetic is simplified with the loop ranges.
// The lowered program still runs in the reference interpreter (on
// flattened arrays), which is how lowering is tested.
#pragma once

#include "ir/stmt.h"

namespace tunedb::measure {

ir::PrimFunc Lower(const ir::PrimFunc& func);

}  // namespace tunedb::measure
