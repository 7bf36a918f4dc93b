def stochastic_schedule_mm(sch: tvm.tir.Schedule):
    b0 = sch.get_block("C")
    i, j, k = sch.get_loops(b0)
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(b0, j0)
    return sch
