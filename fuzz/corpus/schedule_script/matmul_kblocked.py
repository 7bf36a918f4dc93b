# matmul_tuned.py's structure with the reduction blocked for L1 (bench/
# RESULTS.md, session 36): each 64-column panel of B is packed, and k runs
# in 8 blocks outside the rows, so a 128 x 64 block of the panel (32 KB)
# would stay in L1 while every row block of A passes over it. The
# accumulators of a 4 x 64 block live in registers within a k block;
# between k blocks they go out to the panel's column of accumulators (the
# local buffer at i0, 256 KB) and back. At matmul 1024 this runs at
# 272-274 GFLOP/s against matmul_tuned.py's 322-331 in the same minutes,
# and the more k blocks the slower (1, 4, 8, 16 blocks: 283, 268, 264, 243
# GFLOP/s): streaming the panel from L2 costs less than reloading the
# accumulators.
b = sch.get_block("C")
i, j, k = sch.get_loops(b)
i0, i2, i3 = sch.split(i, factors=[1, None, 4])
j0, j3 = sch.split(j, factors=[None, 64])
k0, k1 = sch.split(k, factors=[8, None])
sch.reorder(j0, i0, k0, i2, k1, i3, j3)
cw = sch.cache_write(b, 0, "local")
sch.reverse_compute_at(cw, i0, preserve_unit_loops=True)
cr = sch.cache_read(b, 1, "global")
sch.compute_at(cr, j0, preserve_unit_loops=True)
sch.parallel(j0)
sch.vectorize(j3)
sch.unroll(i3)
init = sch.decompose_reduction(b, k0)
*_, a = sch.get_loops(init)
sch.vectorize(a)
*_, a = sch.get_loops(cw)
sch.vectorize(a)
*_, a = sch.get_loops(cr)
sch.vectorize(a)
