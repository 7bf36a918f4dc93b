# Rows in parallel, 16 lanes per vector: the schedule gelu.tw is timed with.
i, j = sch.get_loops(sch.get_block("Y"))
j0, j1 = sch.split(j, factors=[None, 16])
sch.parallel(i)
sch.vectorize(j1)
