"""How layouts and our operations ride in TVM's TIR: the layout annotation of a buffer, the tile-copy op, the CTA's
thread levels read from the kernel's scope definitions, the naming of the device helpers the lowering emits, what a
lowered host function passes to its kernel, and the ``structural_map`` helpers every pass rewrites with."""
