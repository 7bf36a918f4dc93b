b0 = sch.get_block("C")
sch.annotate(b0, ann_key="meta_scheduleÿÿoll_explicit", ann_val=64)
