"""How layouts and our operations ride in TVM's TIR: the layout annotation of a buffer, the tile-copy op, the CTA's
thread levels read from the kernel's scope definitions, the naming of the device helpers the lowering emits, what a
lowered host function passes to its kernel, and the ``structural_map`` helpers every pass rewrites with.

Example: a kernel's shared buffer with its layout, and its tile copy, as a pass sees them.

    >>> import tvm
    >>> from tirx_layout.ir.annotations import buffer_layouts
    >>> from tirx_layout.ir.rewrite import walk
    >>> from tirx_layout.ir.threads import cta_threads
    >>> from tirx_layout.ir.tile_ops import as_copy
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((8, 16), "float16")):
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     Sm = T.alloc_shared((8, 16), "float16", layout=T.layout("S[(8, 16):(16, 1)]"))
    ...     T.tile_copy(Sm, A)
    ... ''')
    >>> {buffer.name: layout for buffer, layout in buffer_layouts(func).items()}
    {'Sm': TileLayout(S[(8, 16):(16, 1)])}
    >>> copies = []
    >>> walk(func.body, [(tvm.tirx.Evaluate, lambda stmt: copies.append(as_copy(stmt)))])
    >>> copies
    [TileCopy(dst=Sm[0:8, 0:16], src=A[0:8, 0:16], scope='cta')]
    >>> cta_threads(func)
    Threads(index=tx, count=32, bounds={tx: 32})
"""
