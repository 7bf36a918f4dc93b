# A 2-D element-wise stage named Y (gelu.tw, log1p.tw): rows in parallel,
# 16 lanes per vector.
i, j = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 16])
sch.parallel(i)
sch.vectorize(j1)
