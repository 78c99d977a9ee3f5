"""How layouts and our operations ride in TVM's TIR: the layout annotation of a buffer, how a call of a tile op carries
its named arguments (``op_calls``), the placeholders one lowering leaves for a later one, the CTA's thread levels read
from the kernel's scope definitions, the naming of the device helpers the lowering emits, what a lowered host
function passes to its kernel, and the ``structural_map`` helpers every pass rewrites with.

Example: a kernel's shared buffer with its layout, and its tile copy, as a pass sees them.

    >>> import tvm
    >>> from tirx_layout.ir.annotations import buffer_layouts
    >>> from tirx_layout.ir.op_calls import read_op_call
    >>> from tirx_layout.ir.rewrite import walk
    >>> from tirx_layout.ir.threads import cta_threads
    >>> func = tvm.script.from_source('''
    ... @T.prim_func
    ... def k(A: T.Buffer((8, 16), "float16")):
    ...     T.device_entry()
    ...     tx = T.thread_id([32])
    ...     Sm = T.alloc_shared((8, 16), "float16", layout=T.layout("S[(8, 16):(16, 1)]"))
    ...     T.tile_copy(Sm, A, "warp")
    ... ''')
    >>> {buffer.name: layout for buffer, layout in buffer_layouts(func).items()}
    {'Sm': TileLayout(S[(8, 16):(16, 1)])}
    >>> calls = []
    >>> walk(func.body, [(tvm.tirx.Evaluate, lambda stmt: calls.append(read_op_call(stmt)))])
    >>> calls[0].name, calls[0].split(2)
    ('tile_copy', ((Sm[0:8, 0:16], A[0:8, 0:16]), {'scope': "warp"}))
    >>> cta_threads(func)
    Threads(index=tx, count=32, bounds={tx: 32})
"""
