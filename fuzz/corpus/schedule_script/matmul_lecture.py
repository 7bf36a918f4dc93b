# The MLC lecture's manual schedule: split j by 4, reorder, decompose the reduction.
b0 = sch.get_block("C")
i, j, k = sch.get_loops(b0)
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(i, j0, k, j1)
sch.decompose_reduction(b0, j0)
