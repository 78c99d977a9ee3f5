"""Fuzz cases as plain text: ``case(seed, index)`` is a pure function of its arguments, so the supervisor can name
a case that killed its worker without importing the library, and anyone can replay one case from the report.

A case is Python source run in the worker's namespace (``worker.namespace``): it assigns ``result``. Its optional
``check`` is an expression over ``result`` (and the data the source names) that is ``None`` when the answer is right
and a sentence saying what differs when it is wrong; checks compare with the references in ``oracles/``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: Integers that sit on the edges the core must check: signs, powers of two, the int32 and int64 limits, beyond.
EDGE_INTS = [
    *(0, 1, -1, 2, 3, 4, 5, 7, 8, 16, 32, 64, 128, 512, -2, -3, -8),  # small, signed, powers of two
    *(2**31 - 1, 2**31, -(2**31), 2**32),  # around int32
    *(2**40, 2**62, -(2**62), INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 1),  # up to the int64 limits
    *(2**63, INT64_MIN - 1, 2**64, -(10**30)),  # beyond int64
]
#: Source text of values of the wrong kind.
JUNK = [
    *("None", "1.5", "float('nan')", "float('inf')", "True"),  # no int
    *("'m'", "'nope'", "''", "'4'"),  # strings
    *("x", "x * 2", "fx"),  # symbolic (fx is a float)
    *("np.int8(3)", "np.uint64(2**64 - 1)", "np.arange(3)", "np.array([])"),  # numpy
    *("[]", "()", "[2, 3]", "(4, 'm')"),  # sequences
    *("Iter(4, 1)", "laneid", "S[4:1]"),  # layout pieces
    *("{}", "{'m': 1}", "object()", "b'4'", "tvm.tirx.IntImm('int64', 3)"),  # other objects
]
THREAD_AXES = ["laneid", "warpid", "tx", "tid_in_wg", "wid_in_wg", "wgid", "bx", "cbx"]
MEMORY_AXES = ["m", "TLane", "TCol", "P", "F", "Bank"]
AXES = THREAD_AXES + MEMORY_AXES


@dataclass(frozen=True)
class Case:
    """One fuzz case: its family, the source that computes ``result``, and the check of ``result`` (or ``None``)."""

    family: str
    source: str
    check: str | None = None


# ---- values -------------------------------------------------------------------------------------------------------


def small_int(rng: random.Random, low: int = -8, high: int = 16) -> int:
    return rng.randint(low, high)


def edge_int(rng: random.Random) -> int:
    return rng.choice(EDGE_INTS) + rng.choice([0, 0, 0, 1, -1])


def any_value(rng: random.Random) -> str:
    """Source text of a value: mostly integers (small and on the edges), sometimes junk."""
    roll = rng.random()
    if roll < 0.45:
        return repr(small_int(rng, -4, 40))
    if roll < 0.8:
        return repr(edge_int(rng))
    return rng.choice(JUNK)


def extent_of(rng: random.Random, wild: float) -> int:
    if rng.random() < wild:
        return edge_int(rng)
    return rng.choice([rng.randint(1, 9), rng.choice([1, 2, 4, 8, 16, 32])])


def stride_of(rng: random.Random, wild: float) -> int:
    if rng.random() < wild:
        return edge_int(rng)
    return rng.choice([rng.randint(-8, 16), 0, 1, rng.choice([32, 64, 112, 128])])


def random_layout(rng: random.Random, wild: float = 0.0, max_shard: int = 4) -> tuple:
    """``(shard, replica, offset)`` as plain data (see ``oracles/reference.py``); ``wild`` is the chance that an
    extent, stride or offset is an edge value instead of a small one."""
    shard = [(extent_of(rng, wild), stride_of(rng, wild), rng.choice(AXES)) for _ in range(rng.randint(0, max_shard))]
    replica = [(min(extent_of(rng, wild), 4), stride_of(rng, wild), rng.choice(AXES)) for _ in range(rng.randint(0, 2))]
    offset = {}
    for _ in range(rng.randint(0, 3)):
        offset[rng.choice(AXES)] = edge_int(rng) if rng.random() < wild else rng.randint(-10, 30)
    return shard, replica, offset


def layout_source(data: tuple) -> str:
    """Source that builds the layout ``data``: through ``from_iters``."""
    shard, replica, offset = data
    return f"TileLayout.from_iters([Iter(*i) for i in {shard!r}], [Iter(*i) for i in {replica!r}], {offset!r})"


def spec_text(data: tuple) -> str:
    """The ``S[...] + R[...] + offset`` spelling of ``data`` (the text ``parse_layout`` and ``TileLayout`` read)."""
    shard, replica, offset = data

    def stride(s, a):
        return f"{s}" if a == "m" else f"{s}@{a}"

    def iters(kind, its):
        if len(its) == 1:
            return f"{kind}[{its[0][0]}:{stride(its[0][1], its[0][2])}]"
        return f"{kind}[({', '.join(str(e) for e, _, _ in its)}):({', '.join(stride(s, a) for _, s, a in its)})]"

    parts = [iters("S", shard)]
    if replica:
        parts.append(iters("R", replica))
    parts += [f"{v}" if a == "m" else f"{v}@{a}" for a, v in offset.items()]
    return " + ".join(parts)


def size_of(data: tuple) -> int:
    size = 1
    for e, _, _ in data[0]:
        size *= e
    return size


def below(rng: random.Random, n: int) -> int:
    """A random int in ``[0, n)``, or 0 when that is empty (an edge extent may be 0 or negative)."""
    return rng.randrange(n) if n > 0 else 0


def sample_flats(rng: random.Random, size: int, count: int = 6) -> list[int]:
    if size <= count:
        return list(range(max(size, 1)))
    return sorted({0, size - 1, *(below(rng, size) for _ in range(count - 2))})


def split_shape(rng: random.Random, size: int) -> list[int]:
    """A random logical shape of ``size`` elements (a factorisation into up to three extents)."""
    if size < 1:
        return [size]
    shape, rest = [], size
    for _ in range(rng.randint(0, 2)):
        divisors = [d for d in range(1, min(rest, 64) + 1) if rest % d == 0]
        d = rng.choice(divisors)
        shape.append(d)
        rest //= d
    shape.append(rest)
    rng.shuffle(shape)
    return shape


# ---- families -----------------------------------------------------------------------------------------------------


def construct(rng: random.Random) -> Case:
    """Constructors with edge and junk values (spec, from_iters, Iter), then one apply against the reference."""
    form = rng.randrange(4)
    if form == 0:
        n = rng.randint(1, 3)
        shape = ", ".join(any_value(rng) for _ in range(n))
        strides = ", ".join(
            any_value(rng) if rng.random() < 0.7 else f"{any_value(rng)} @ {rng.choice(AXES)}" for _ in range(n)
        )
        offsets = " + ".join(any_value(rng) for _ in range(rng.randint(0, 3)))
        src = f"result = TileLayout(S[({shape},):({strides},)]{' + ' + offsets if offsets else ''})"
        return Case("construct", src)
    if form == 1:
        args = ", ".join(any_value(rng) for _ in range(rng.randint(2, 3)))
        return Case("construct", f"result = Iter({args})")
    if form == 2:
        # Offsets that add up past int64 (or come back into it): every partial sum is checked.
        terms = [rng.choice([INT64_MAX, INT64_MIN, 1, -1, 2**62, -(2**62), rng.randint(-5, 5)]) for _ in range(3)]
        axis = rng.choice(["m", "laneid", "TCol"])
        spec = "S[4:1]" + "".join(f" + ({t}) @ {axis}" for t in terms)
        return Case(
            "construct",
            f"result = TileLayout({spec}).apply(3)",
            f"check_offset_sum(result, {terms!r}, {axis!r}, 3)",
        )
    data = random_layout(rng, wild=0.3)
    flat = rng.choice([0, 1, size_of(data) - 1, edge_int(rng)])
    return Case(
        "construct",
        f"result = {layout_source(data)}.apply({flat})",
        f"check_apply(result, {data!r}, [{flat}], None, False)",
    )


def apply_forms(rng: random.Random) -> Case:
    """apply / apply_all in the three coordinate forms, with ints, arrays and expressions, against the reference."""
    data = random_layout(rng, wild=0.05)
    if not data[0]:
        data = ([(4, 1, "m")], data[1], data[2])
    size = size_of(data)
    form = rng.choice(["flat", "shard", "shaped"])
    kind = rng.choice(["int", "int", "array", "expr"])
    with_replicas = rng.random() < 0.3
    method = "apply_all" if with_replicas else "apply"
    if form == "flat":
        shape = None
        coords = [[f] for f in sample_flats(rng, size, 3)]
    elif form == "shard":
        shape = None
        coords = [[below(rng, e) for e, _, _ in data[0]] for _ in range(3)]
    else:
        shape = split_shape(rng, size)
        coords = [[below(rng, s) for s in shape] for _ in range(3)]
    if rng.random() < 0.1:  # out of range: the first component spills, SPEC §2
        coords[0][0] += rng.choice([size, 2**31, 2**40])
    if kind == "int":
        calls = [f"layout.{method}({', '.join(map(str, c))}{f', shape={shape}' if shape else ''})" for c in coords]
        return Case(
            "apply",
            f"layout = {layout_source(data)}\nresult = [{', '.join(calls)}]",
            f"check_apply_many(result, {data!r}, {coords!r}, {shape!r}, {with_replicas})",
        )
    if kind == "array":
        columns = [list(col) for col in zip(*coords, strict=True)]
        args = ", ".join(f"np.array({col}, dtype=np.int64)" for col in columns)
        return Case(
            "apply",
            f"layout = {layout_source(data)}\nresult = layout.{method}({args}{f', shape={shape}' if shape else ''})",
            f"check_apply_array(result, {data!r}, {coords!r}, {shape!r}, {with_replicas})",
        )
    # Symbolic: one variable per coordinate, evaluated at the sampled points afterwards.
    dtype = rng.choice(["int32", "int64"])
    names = [f"v{k}" for k in range(len(coords[0]))]
    variables = ", ".join(f"tvm.tirx.Var({n!r}, {dtype!r})" for n in names)
    return Case(
        "apply",
        f"layout = {layout_source(data)}\nresult = layout.{method}({variables}{f', shape={shape}' if shape else ''})",
        f"check_apply_symbolic(result, {data!r}, {names!r}, {coords!r}, {shape!r}, {with_replicas})",
    )


def big_symbolic(rng: random.Random) -> Case:
    """Symbolic apply where the constants fit int32 but the places do not: the dtype must hold every place."""
    inner = rng.choice([2**30, 2**31, 2**20, 64])
    outer = rng.choice([4, 8, 3])
    data = ([(outer, inner, "m"), (inner, 1, "m")], [], {})
    shape = [outer, inner]
    coords = [[outer - 1, below(rng, inner)], [1, 0]]
    return Case(
        "apply",
        f"layout = {layout_source(data)}\n"
        f"result = layout.apply(tvm.tirx.Var('i', 'int32'), tvm.tirx.Var('j', 'int32'), shape={shape})",
        f"check_apply_symbolic(result, {data!r}, ['i', 'j'], {coords!r}, {shape!r}, False)",
    )


def algebra(rng: random.Random) -> Case:
    """The layout algebra on random layouts, each result checked against its definition (SPEC §2)."""
    data = random_layout(rng, wild=0.04, max_shard=3)
    if not data[0]:
        data = ([(rng.choice([2, 4]), 1, "m")], data[1], data[2])
    src = f"layout = {layout_source(data)}\n"
    op = rng.choice(["canonicalize", "group", "tile", "direct_sum", "recognise", "slice", "pack", "rewrite", "query"])
    size = size_of(data)
    flats = sample_flats(rng, size)
    if op == "canonicalize":
        return Case("algebra", src + "result = layout.canonicalize()", f"check_same_map(result, layout, {flats})")
    if op == "group":
        shape = split_shape(rng, size) if rng.random() < 0.8 else [edge_int(rng)]
        return Case("algebra", src + f"result = layout.group({shape})", f"check_same_map(result[0], layout, {flats})")
    if op in ("tile", "direct_sum", "recognise"):
        other = random_layout(rng, wild=0.04, max_shard=3)
        if not other[0]:
            other = ([(2, 1, "m")], other[1], other[2])
        rank = rng.randint(1, 2)
        s1 = split_shape(rng, size)[:rank] if rank == 2 else [size]
        s2 = [size_of(other)] if rank == 1 else split_shape(rng, size_of(other))[:2]
        if len(s1) != len(s2) or _prod(s1) != size or _prod(s2) != size_of(other):
            s1, s2 = [size], [size_of(other)]
        if rng.random() < 0.1:
            s2 = [rng.choice(EDGE_INTS)] * len(s1)
        src += f"other = {layout_source(other)}\n"
        if op == "tile":
            return Case(
                "algebra",
                src + f"result = layout.tile(other, {s2}, {s1})",
                f"check_tile(result, {data!r}, {other!r}, {s2}, {s1})",
            )
        if op == "direct_sum":
            return Case(
                "algebra",
                src + f"result = layout.direct_sum(other, {s2}, {s1})",
                f"check_direct_sum(result, {data!r}, {other!r}, {s2}, {s1})",
            )
        tiled = [a * b for a, b in zip(s2, s1, strict=True)]
        which = rng.choice(["is_tile_inner", "is_tile_outer", "is_direct_sum_right", "is_direct_sum_left"])
        combine = "tile" if "tile" in which else "direct_sum"
        src += f"combined = layout.{combine}(other, {s2}, {s1})\n"
        known, known_shape = ("layout", s1) if which in ("is_tile_inner", "is_direct_sum_right") else ("other", s2)
        if rng.random() < 0.3:  # a combined layout that may not decompose
            src += f"combined = {layout_source(random_layout(rng, wild=0.1))}\n"
        return Case(
            "algebra",
            src + f"result = {known}.{which}(combined, {tiled}, {known_shape})",
            f"check_recogniser(result, {which!r}, {known}, combined, {tiled}, {known_shape})",
        )
    if op == "slice":
        shape = split_shape(rng, size)
        region = []
        for s in shape:
            begin = below(rng, s)
            region.append((begin, rng.randint(begin + 1, max(s, begin + 1))))
        if rng.random() < 0.15:
            region[0] = (edge_int(rng), edge_int(rng))
        return Case(
            "algebra",
            src + f"result = layout.slice({shape}, {region})",
            f"check_slice(result, layout, {shape}, {region})",
        )
    if op == "pack":
        n = rng.choice([1, 2, 4, 8, 3]) if rng.random() < 0.85 else edge_int(rng)
        if rng.random() < 0.5:
            return Case(
                "algebra", src + f"result = layout.unpack({n}).pack({n})", f"check_same_map(result, layout, {flats})"
            )
        return Case("algebra", src + f"result = layout.pack({n})", f"check_pack(result, layout, {n})")
    if op == "rewrite":
        call = rng.choice(
            [
                "storage()",
                "is_trivial()",
                f"broadcast({rng.choice([2, 4, 0, -1, edge_int(rng)])}, {rng.choice([-1, 0, 1, 5, edge_int(rng)])})",
                f"permute_dims({rng.sample(range(3), rng.randint(0, 3))})",
                f"permute_by_groups({[0, 1, len(data[0])]}, {rng.choice([[1, 0], [0, 1], [0], [2, 0]])})",
                f"tile_to({[size * rng.choice([1, 2, 3])]}, {[size]})",
                "to_psum()",
                f"apply_to_shape({[below(rng, size)]}, {[size]})",
            ]
        )
        check = f"check_storage(result, layout, {flats})" if call == "storage()" else None
        return Case("algebra", src + f"result = layout.{call}", check)
    return Case(
        "algebra",
        src + f"result = (layout.size(), layout.span(), layout.num_replicas(), layout.span({rng.choice(AXES)!r}))",
        f"check_queries(result, {data!r})",
    )


def pickling(rng: random.Random) -> Case:
    data = random_layout(rng, wild=0.1)
    symbolic = rng.choice(["", " + tvm.tirx.Var('x', 'int32')", " + (x * 2) @ warpid", " + fx"])
    return Case(
        "pickle",
        f"layout = TileLayout(S[4:1] + {data[2]!r}{symbolic}) if {bool(symbolic)} else {layout_source(data)}\n"
        "result = pickle.loads(pickle.dumps(layout))",
        "None if result == layout else f'{result!r} != {layout!r}'",
    )


def swizzle(rng: random.Random) -> Case:
    if rng.random() < 0.3:
        args = ", ".join(any_value(rng) for _ in range(rng.randint(3, 4)))
        return Case("swizzle", f"result = SwizzleLayout({args})")
    params = [rng.randint(0, 5) if rng.random() < 0.8 else edge_int(rng) for _ in range(3)]
    inner = rng.random() < 0.8
    addresses = [rng.randrange(2**16), rng.randrange(2**40), rng.choice([INT64_MAX, 2**62, -1, 0])]
    kind = rng.choice(["apply", "compose", "methods"])
    src = f"sw = SwizzleLayout({params[0]}, {params[1]}, {params[2]}, {inner})\n"
    if kind == "apply":
        return Case(
            "swizzle",
            src + f'result = [sw.apply(a)["m"] for a in {addresses}]',
            f"check_swizzle(result, {params!r}, {inner}, {addresses!r})",
        )
    if kind == "compose":
        data = random_layout(rng, wild=0.05)
        data = ([(e, s, "m") for e, s, _ in data[0]] or [(8, 1, "m")], [], {})
        return Case("swizzle", src + f"result = ComposeLayout(sw, {layout_source(data)}).apply(0)")
    call = rng.choice(["size()", "span()", "canonicalize()", f"pack({rng.choice([2, 4, 3, 0])})", "unpack(2)"])
    return Case("swizzle", src + f"result = sw.{call}")


def text(rng: random.Random) -> Case:
    """The layout-text parser: valid spellings (checked to rebuild the layout), mutations, nesting, big numbers."""
    roll = rng.random()
    if roll < 0.35:
        data = random_layout(rng, wild=0.1)
        if not data[0]:
            data = ([(4, 1, "m")], data[1], data[2])
        t = spec_text(data)
        return Case("text", f"result = parse_layout({t!r})", f"check_parsed(result, {data!r})")
    if roll < 0.45:
        depth = rng.choice([10, 100, 1000, 5000])
        opener = rng.choice(["SwizzleLayout(", "(", "S[(", "ComposeLayout(", "[", "-"])
        return Case("text", f"result = parse_layout({opener!r} * {depth})")
    if roll < 0.55:
        big = rng.choice([INT64_MAX, 2**63, 2**64, INT64_MIN])
        t = rng.choice(
            [
                f"S[4:1] + {big} + 1",
                f"S[4:1] + {big} + {big}",
                f"S[{big}:1]",
                f"S[(2, 2):({big}, 1)]",
                f"S[4:1] + {big}@laneid + -1@laneid",
                f"SwizzleLayout(1, 1, {big})",
            ]
        )
        return Case("text", f"result = parse_layout({t!r})")
    base = spec_text(random_layout(rng, wild=0.1)) if rng.random() < 0.7 else "SwizzleLayout(3, 3, 3)"
    chars = list(base)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(chars) + 1)
        op = rng.randrange(3)
        if op == 0 and chars:
            del chars[min(pos, len(chars) - 1)]
        elif op == 1:
            chars.insert(pos, rng.choice("()[]:,@+-*0123456789 xSRmT.eE_\\'\"\x00é"))
        elif chars:
            chars[min(pos, len(chars) - 1)] = rng.choice("()[]:,@+-9")
    return Case("text", f"result = parse_layout({''.join(chars)!r}, swizzle_alone={rng.random() < 0.3})")


def cute(rng: random.Random) -> Case:
    """The CuTe layer: constructors and the parser with junk, the algebra against pycute, the converters."""
    roll = rng.random()
    if roll < 0.15:
        return Case("cute", f"result = Layout({any_value(rng)}, {any_value(rng)})")
    if roll < 0.3:
        t = rng.choice(["4:1", "(2,4):(1,2)", "((2,4),3):((1@laneid,2),8)", "(4,8):(8,1)", "3:0"])
        chars = list(t)
        for _ in range(rng.randint(0, 3)):
            pos = rng.randrange(len(chars) + 1)
            chars.insert(pos, rng.choice("():,@-09x" + str(INT64_MAX)))
        return Case("cute", f"result = Layout.parse({''.join(chars)!r})")
    if roll < 0.45:
        data = random_layout(rng, wild=0.05)
        return Case(
            "cute",
            f"tile = {layout_source(data)}\nresult = to_cute(tile)\n"
            "back = to_tile_layout(result) if result is not None else None",
            "check_cute_round_trip(tile, result, back)",
        )
    modes = [(rng.choice([1, 2, 3, 4, 6, 8]), rng.choice([0, 1, 2, 3, 4, 8, 16])) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.05:
        modes[0] = (rng.choice([1, 2, edge_int(rng)]), edge_int(rng))
    other = [(rng.choice([1, 2, 4]), rng.choice([0, 1, 2, 4])) for _ in range(rng.randint(1, 2))]
    a = f"Layout({tuple(s for s, _ in modes)}, {tuple(d for _, d in modes)})"
    b = f"Layout({tuple(s for s, _ in other)}, {tuple(d for _, d in other)})"
    op = rng.choice(
        [
            "coalesce(A)",
            "composition(A, B)",
            f"complement(A, {rng.choice([1, 16, 64, 0, -1])})",
            "right_inverse(A)",
            "left_inverse(A)",
            "logical_divide(A, B)",
            "zipped_divide(A, B)",
            "tiled_divide(A, B)",
            f"tiled_divide(A, {rng.choice(['None', '2', '(2,)', '0', '-1'])})",
            f"zipped_divide(A, {rng.choice(['None', '2', '(2,)', '0'])})",
            "logical_product(A, B)",
            "blocked_product(A, B)",
            "raked_product(A, B)",
            f"A({rng.randrange(64)})",
        ]
    )
    return Case("cute", f"A, B = {a}, {b}\nresult = {op}", f"check_cute(result, {op!r}, A, B)")


def hardware(rng: random.Random) -> Case:
    v = [any_value(rng) for _ in range(3)]
    dtype = rng.choice(["'float16'", "'float32'", "'bfloat16'", "'int8'", "'float8_e4m3'", "'nope'", v[0]])
    mode = rng.choice(["'32B'", "'64B'", "'128B'", "'none'", "'16B'", v[1]])
    shape = rng.choice(["(64, 64)", "(8, 64)", "(4,)", "(0, 64)", "(64, 0)", "()", f"({v[2]}, 64)", v[2]])
    call = rng.choice(
        [
            f"mma_shared_layout({dtype}, {mode}, {shape})",
            f"swizzle_mode(mma_shared_layout('float16', '128B', (64, 64)), {dtype})",
            f"swizzle_mode({rng.choice(['SwizzleLayout(3, 3, 3)', 'TileLayout(S[8:1])', 'None', v[0]])}, {dtype})",
            f"swizzle_mode(ComposeLayout(SwizzleLayout({rng.randint(0, 4)}, {rng.randint(0, 3)}, 3), "
            f"TileLayout(S[64:1])), {dtype})",
            f"wg_local_layout({v[0]}, {v[1]})",
            f"tmem_datapath_layout({rng.choice(['D', 'F', 'B', 'C', 'x', v[0]])!r}, {v[1]}, {v[2]})",
            f"tcgen05_atom_layout({rng.choice(['32x32b', '16x64b', '16x128b', '16x256b', 'x'])!r}, {shape}, {dtype})",
            f"swizzle_for_mode({mode}, {dtype})",
        ]
    )
    return Case("hw", f"result = {call}")


#: Calls across the public API with holes ``{0}``, ``{1}``, ``{2}`` for junk: every entry point must refuse what it
#: cannot take with an error that names it. ``L`` is a small layout of the case. One row per family of calls.
CALLS = [
    *("TileLayout(S[{0}:{1}])", "TileLayout(S[{0}])", "TileLayout(S[4:1] + R[{0}:{1}])", "TileLayout(S[4:1] + {0})"),
    *("TileLayout(S[4:1] + {0} @ laneid)", "TileLayout({0})", "TileLayout.from_iters({0}, {1}, {2})"),
    *("L.apply({0})", "L.apply({0}, {1})", "L.apply({0}, shape={1})", "L.apply_all({0}, shape=[{1}, 4])"),
    *("L.apply({0}, {1}, shape=[{2}, 4])", "L.size({0})", "L.span({0})"),
    *("L.group({0})", "L.group([{0}, {1}])", "L.group_many([{0}], [{1}])"),
    *("L.tile({0}, [{1}], [8])", "L.tile(L, [{0}], [{1}])", "L.tile_to([{0}], [{1}])", "L.tile_to({0}, {1})"),
    *("L.is_tile_inner({0}, [16], [8])", "L.is_tile_outer(L, [{0}], [{1}])"),
    *("L.direct_sum(L, [{0}], [{1}])", "L.is_direct_sum_left(L, [{0}], [8])", "L.is_direct_sum_right({0}, [8], [4])"),
    *("L.slice([{0}], [({1}, {2})])", "L.slice([8], [{0}])", "L.slice({0}, {1})", "L.slice([8], [(0, {0})])"),
    *("L.pack({0})", "L.unpack({0})", "L.broadcast({0}, {1})", "L.broadcast(2, 0, {0})"),
    *("L.permute_dims({0})", "L.permute_by_groups({0}, {1})", "L.apply_to_shape({0}, {1})"),
    *("TileLayout.trainium({0}, {1})", "TileLayout.trainium('PF', [{0}, {1}], {2})"),
    *("Axis.get({0})", "L == {0}", "L.canonicalize().apply({0})"),
    *("SwizzleLayout(3, 3, 3).apply({0})", "SwizzleLayout(3, 3, 3).pack({0})", "SwizzleLayout(3, 3, 3).unpack({0})"),
    *("ComposeLayout({0}, {1})", "ComposeLayout(SwizzleLayout(3, 3, 3), {0})"),
    "ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[64:1])).slice([64], [({0}, {1})])",
    "ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[64:1])).apply({0})",
    "ComposeLayout(per_element={0}, swizzle_len={1}, atom_len={2}, tile_layout=TileLayout(S[64:1]))",
    *("parse_layout({0})", "parse_layout('S[4:1]', swizzle_alone={0})"),
    *("Layout({0}, {1})", "Layout.parse({0})", "Layout(4, 1)({0})", "Layout((2, 4), (1, 2))({0}, {1})"),
    *("composition(Layout(4, 1), {0})", "complement(Layout(4, 1), {0})"),
    *("logical_divide(Layout(8, 1), {0})", "zipped_divide(Layout(8, 1), {0})", "tiled_divide(Layout(8, 1), {0})"),
    *("logical_product(Layout(2, 1), {0})", "blocked_product(Layout(2, 1), {0})", "raked_product({0}, Layout(2, 1))"),
    *("coalesce({0})", "coalesce(Layout((2, 4), (1, 2)), {0})", "right_inverse({0})", "left_inverse({0})"),
    *("with_shape(Layout(8, 1), {0})", "restrict(Layout((2, 4), (1, 2)), {0}, {1})"),
    *("to_cute(L, {0})", "to_cute({0})", "to_tile_layout({0})", "to_tile_layout(Layout((2, 4), (1, 2)), {0})"),
    *("Swizzle({0}, {1}, {2})", "make_layout({0})", "size({0})", "cosize(Layout(4, 2), {0})"),
    *("wg_local_layout({0}, {1})", "tmem_datapath_layout({0}, {1}, {2})", "tcgen05_atom_layout({0}, {1}, {2})"),
    *("mma_shared_layout({0}, {1}, {2})", "swizzle_mode({0}, {1})", "swizzle_mode(L, {0})"),
    *("Iter({0}, {1}, {2})", "{0} @ laneid", "Iter(4, 1, {0})"),
]
#: More junk for the API calls: symbolic values in every position, ranges, nested lists.
CALL_JUNK = [
    *("x", "x + 1", "tvm.tirx.Var('y', 'int64')", "[x]", "[x, 4]", "(x, 1)", "[(0, x)]", "tvm.ir.Range(0, x)"),
    *("tvm.ir.Range(0, 4)", "np.int64(4)", "[4, 4]", "[[4]]", "[(0, 4)]", "[(4, 0)]"),  # ranges, lists
    *("L", "Layout(4, 1)", "SwizzleLayout(3, 3, 3)"),  # layouts
    *("'PF'", "'P'", "'float16'", "'128B'", "'32x32b'", "'D'"),  # names
    *("(64, 64)", "(128, 64)", "m", "'laneid'"),  # shapes and axes
    *("[0]", "[1, 0]", "[0, 1, 2]", "(2,)", "((2, 2), 2)"),  # lists and nested shapes
    *("'4:1'", "'(2,4):(1,2)'", "'S[4:1]'"),  # layout text
]


def junk_call(rng: random.Random) -> Case:
    """A public entry point called with junk in its holes: the answer or a clean error, never a crash."""
    data = random_layout(rng, wild=0.05, max_shard=3)
    if not data[0]:
        data = ([(8, 1, "m")], data[1], data[2])

    def hole():
        return rng.choice(CALL_JUNK) if rng.random() < 0.5 else any_value(rng)

    call = rng.choice(CALLS).format(hole(), hole(), hole())
    return Case("junk", f"L = {layout_source(data)}\nresult = {call}")


CLI_COMMANDS = ["show", "render", "check", "compile", "nope", "--help", ""]


def cli(rng: random.Random) -> Case:
    """The command line in a subprocess: exit 0, or exit 2 with one line on stderr."""
    command = rng.choice(CLI_COMMANDS)
    args = [command] if command else []
    if command in ("show", "render", "check"):
        roll = rng.random()
        if roll < 0.5:
            args.append(spec_text(random_layout(rng, wild=0.1)) or "S[4:1]")
        elif roll < 0.7:
            args.append(rng.choice(["SwizzleLayout(" * 300, "S[2:1099511627776]", "S[(", "", "R[4:1]", "S[4:1]"]))
        else:
            args += ["--preset", rng.choice(["nope", "sw128_fp16", ""])]
        for option, values in (
            ("--shape", ["8,64", "0", "x", "-1", "4"]),
            ("--dtype", ["float16", "nope", "int4"]),
            ("--swizzle", ["3,3,3", "128B", "9,9,99", "x", "none"]),
        ):
            if rng.random() < 0.3:
                args += [option, rng.choice(values)]
        if command == "render":
            args += ["-o", rng.choice(["OUT/a.svg", "OUT/a.png", "OUT/a.txt", "OUT/missing/a.svg"])]
    elif command == "compile":
        args.append(rng.choice(["examples/tile_copies.py", "nope.py", "README.md", "OUT"]))
        if rng.random() < 0.5:
            args += ["--kernel", rng.choice(["nope", "copy_wg_local_fp16_128B"])]
        if rng.random() < 0.3:
            args += ["--target", rng.choice(["sm_100a", "sm_90a", "x"])]
    return Case("cli", f"result = run_cli({args!r})", "check_cli(result)")


def server(rng: random.Random) -> Case:
    """The page server's request handler with random form values (the in-process answer to POST /api/scene)."""
    params = {}
    if rng.random() < 0.9:
        roll = rng.random()
        if roll < 0.6:
            params["text"] = spec_text(random_layout(rng, wild=0.05)) or "S[4:1]"
        else:
            params["text"] = rng.choice(["S[(", "SwizzleLayout(" * 50, "S[4:1] + 9223372036854775807 + 1", "", "S[()]"])
    for key, values in (
        ("shape", ["8,64", "4", "0", "x", "", None, 3, [4, 4]]),
        ("dtype", ["float16", "float32", "nope", 3, None]),
        ("swizzle", ["3,3,3", "128B", "none", "9,9,99", None, 1]),
        ("access", ["row_vectors", "contiguous", "column", "nope", None]),
        ("vector_bytes", [16, 4, 0, -1, "x", 3, None, 1.5]),
    ):
        if rng.random() < 0.4:
            params[key] = rng.choice(values)
    return Case("server", f"result = scene_response({params!r})", "check_server(result)")


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


#: Each family with its weight in a sweep (CLI cases start a process each, so they are rare).
FAMILIES = [
    (construct, 14),
    (apply_forms, 22),
    (big_symbolic, 2),
    (algebra, 26),
    (pickling, 3),
    (swizzle, 7),
    (text, 10),
    (cute, 10),
    (hardware, 5),
    (server, 2),
    (cli, 0.05),
    (junk_call, 20),
]


def case(seed: int, index: int) -> Case:
    """Case ``index`` of the sweep with ``seed``: the same pair always gives the same case."""
    rng = random.Random(f"tirx_layout-fuzz:{seed}:{index}")
    family = rng.choices([f for f, _ in FAMILIES], weights=[w for _, w in FAMILIES])[0]
    return family(rng)
