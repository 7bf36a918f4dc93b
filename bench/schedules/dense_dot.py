# dense_bias_relu in dot-product form, without packing W (bench/RESULTS.md,
# session 23): both X and W are read along k, their last dimension, so k is
# split by one vector (16 floats) and rfactored; each 4 x 4 block of outputs
# keeps 16 vector accumulators over the 49 steps of k, and the horizontal
# sums of their lanes are unrolled scalar adds under the same tile loop
# (reverse_compute_at of a reduction block).
b0 = sch.get_block("T_matmul_NT")
sch.compute_inline(sch.get_block("T_add"))
i, j, k = sch.get_loops(b0)
k0, k1 = sch.split(k, factors=[None, 16])
rf = sch.rfactor(k1, 2)
i, j, ka, kb = sch.get_loops(rf)
i0, i1 = sch.split(i, factors=[None, 4])
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(i0, j0, ka, i1, j1, kb)
sch.reverse_compute_at(b0, j0, preserve_unit_loops=True)
sch.reverse_compute_at(sch.get_block("T_relu"), j0, preserve_unit_loops=True)
sch.vectorize(kb)
sch.unroll(i1)
sch.unroll(j1)
sch.decompose_reduction(rf, ka)
f = sch.fuse(i0, j0)
sch.parallel(f)
*_, a0, a1, a2 = sch.get_loops(b0)
sch.unroll(a0)
sch.unroll(a1)
sch.unroll(a2)
