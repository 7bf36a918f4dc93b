# The best hand-written matmul schedule we have (see bench/RESULTS.md):
#  - C is computed in 16 x 64 tiles (i1 x i2 rows, j1 columns); each 4 x 64
#    block of accumulators (16 AVX-512 registers) lives in a local buffer,
#    which lowering compacts to a small stack array that LLVM keeps in
#    registers once the i2 and k1 loops are unrolled;
#  - B is staged per 64-column panel (cache_read + compute_at at j0), so the
#    inner loop reads it contiguously and the panel stays in L2;
#  - column panels run in parallel; the copy-out is vectorized.
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
i0, i1, i2 = sch.split(i, factors=[None, 4, 4])
j0, j1 = sch.split(j, factors=[None, 64])
k0, k1 = sch.split(k, factors=[None, 4])
sch.reorder(j0, i0, i1, k0, k1, i2, j1)
c = sch.cache_write(b0, 0, "local")
sch.reverse_compute_at(c, i1, preserve_unit_loops=True)
bb = sch.cache_read(b0, 1, "global")
sch.compute_at(bb, j0, preserve_unit_loops=True)
sch.parallel(j0)
sch.unroll(k1)
sch.unroll(i2)
sch.vectorize(j1)
sch.decompose_reduction(b0, k0)
*_, ci, cj = sch.get_loops(c)
sch.vectorize(cj)
*_, bk, bj = sch.get_loops(bb)
sch.vectorize(bj)
