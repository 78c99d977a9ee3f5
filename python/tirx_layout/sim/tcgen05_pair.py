"""The simulator's own model of the CTA pair's ``tcgen05.mma.cta_group::2`` and of its commit's multicast, written
from the PTX ISA (tcgen05 "Matrix shape", "Data path layout organization", ``tcgen05.mma`` with ``.cta_group::2``,
``tcgen05.commit`` with ``.multicast::cluster``; restated in ``docs/notes/tcgen05-mma-facts.md`` §1.3, §2.1,
§2.3) -- never from the project's lowering or its ``hw`` records, so that the two can check each other.

* The pair is the two CTAs of a cluster whose ranks differ in bit 0; one thread of the pair issues. The
  instruction's M and N are the pair's: M = 128 or 256 (never 64), N 16..256 in steps of 16 (``kind::i8``: 32..256
  in steps of 32).
* Each CTA's shared memory holds, at the offsets the issuer's descriptors name, its half of A (``M/2`` rows: CTA
  ``r`` rows ``r*M/2 ..``) and its half of B (``N/2`` of B's N rows: CTA ``r`` rows ``r*N/2 ..``): :func:`pair_mma`
  reads both halves of both CTAs through the same descriptors.
* Each CTA's TMEM holds its ``M/2`` rows of D at the TMEM address the issuer names: Layout A for M = 256 (row ``i``
  of the CTA's half on lane ``i``, column ``j`` on column ``j``), Layout B for M = 128 (the CTA's 64 rows on lanes
  0-63 for columns ``0 .. N/2 - 1`` and on lanes 64-127 for the others, each half from column 0):
  :func:`pair_accumulator_place`.
* The commit with ``.multicast::cluster`` arrives once on the mbarrier at the same shared offset in every CTA whose
  rank is a set bit of its 16-bit ``ctaMask``: :func:`commit_multicast_ranks`.

:func:`pair_mma` is one instruction over two CTAs' state given as arrays. Inside a kernel (the cluster's CTAs run
together, ``sim/cluster.py``) the tcgen05 executor (``tmem.HELPERS``) runs the pair helpers here: :func:`issue`
(``mma_<kind>_ss_cg2``: both CTAs' halves read as asynchronous reads of the issuing thread, each checked against
the writes to it, D written into both TMEMs as the issuing warp's ``mma`` accesses) and :func:`commit`
(``commit_cg2_multicast``: an arrival on the mbarrier at the same offset in each CTA of the mask, the peer's
initialisation ordered before it). The peer's tcgen05 ordering model counts the pair's MMAs under the issuing
warp's number (the ordering model is per CTA; the pair's MMA and commit are the only accesses one CTA makes to
another's TMEM). ``tcgen05.alloc``/``dealloc``/``relinquish_alloc_permit`` with ``cta_group::2`` allocate in each
CTA as with ``cta_group::1`` (one warp of each CTA); the MMA checks its columns are allocated in both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import mbarrier
from .cluster import peer_element, peer_mbarrier, peer_of
from .matrix_operands import (
    ACCUMULATOR_TYPES,
    OPERAND_ELEMENTS,
    DescriptorError,
    mma_reference,
    operand_addresses,
    read_shared_operand,
)
from .memory import AsyncRead, OutOfBounds, SimulationError
from .tcgen05_mma import decode_instruction_descriptor, decode_shared_descriptor, load_operand

__all__ = ["commit", "commit_multicast_ranks", "issue", "pair_accumulator_place", "pair_mma", "pair_shape_error"]

#: TMEM geometry of one CTA (PTX ISA, "Tensor Memory"): lanes x 32-bit columns.
_LANES, _COLUMNS = 128, 512
#: Ranks of a cluster a ``ctaMask`` can name (16 bits).
_MASK_BITS = 16


def pair_shape_error(kind: str, m: int, n: int) -> str | None:
    """Why ``m x n`` is no ``cta_group::2`` shape of ``kind`` (the ISA's "Matrix shape" table), or ``None``.

    Example:
        >>> pair_shape_error("f16", 256, 48), pair_shape_error("i8", 256, 48)
        (None, 'kind::i8 with cta_group::2 takes N = 32..256 in steps of 32, not 48')
        >>> pair_shape_error("tf32", 64, 64)
        'cta_group::2 takes M = 128 or 256 (the rows of the pair), not 64'
    """
    if m not in (128, 256):
        return f"cta_group::2 takes M = 128 or 256 (the rows of the pair), not {m}"
    low, step = (32, 32) if kind == "i8" else (16, 16)
    if not (low <= n <= 256 and n % step == 0):
        return f"kind::{kind} with cta_group::2 takes N = {low}..256 in steps of {step}, not {n}"
    return None


def pair_accumulator_place(m: int, n: int, row: int, col: int) -> tuple[int, int, int]:
    """``(cta, lane, column)`` of element ``(row, col)`` of the pair's ``m x n`` D: which CTA of the pair (0: the
    even rank) holds it, and where in that CTA's TMEM relative to the address ``d-tmem`` names.

    Example:
        >>> pair_accumulator_place(256, 64, 130, 5), pair_accumulator_place(128, 64, 70, 40)
        ((1, 2, 5), (1, 70, 8))
    """
    if m not in (128, 256):
        raise DescriptorError(f"a pair's D has M = 128 (Layout B) or 256 (Layout A) rows, got {m!r}")
    if not (0 <= row < m and 0 <= col < n):
        raise DescriptorError(f"element ({row}, {col}) is outside the pair's {m} x {n} D")
    half = m // 2
    cta, local = divmod(row, half)
    if m == 256:
        return cta, local, col
    if n % 2:
        raise DescriptorError(f"Layout B folds D's columns in two halves; N = {n} is odd")
    fold, column = divmod(col, n // 2)
    return cta, local + 64 * fold, column


def commit_multicast_ranks(cta_mask: int, cluster_size: int) -> tuple[int, ...]:
    """The cluster ranks a ``.multicast::cluster`` commit arrives at: the set bits of the 16-bit ``cta_mask``,
    each naming a CTA of the ``cluster_size``-CTA cluster.

    Example:
        >>> commit_multicast_ranks(0b1100, 4)
        (2, 3)
        >>> commit_multicast_ranks(0b100, 2)
        Traceback (most recent call last):
        ...
        tirx_layout.sim.matrix_operands.DescriptorError: ctaMask 0x4 names rank 2, but the cluster has 2 CTAs
    """
    if not 0 < cta_mask < 1 << _MASK_BITS:
        raise DescriptorError(f"ctaMask {cta_mask:#x} must be a non-zero 16-bit mask")
    ranks = tuple(r for r in range(_MASK_BITS) if cta_mask >> r & 1)
    if ranks[-1] >= cluster_size:
        raise DescriptorError(f"ctaMask {cta_mask:#x} names rank {ranks[-1]}, but the cluster has {cluster_size} CTAs")
    return ranks


def pair_mma(
    kind: str,
    shared: Sequence[np.ndarray],
    tmem: Sequence[np.ndarray],
    d_taddr: int,
    a_desc: int,
    b_desc: int,
    idesc: int,
    enable_input_d: bool,
) -> None:
    """One ``tcgen05.mma.cta_group::2.kind::<kind>`` with A and B in shared memory, over the pair's state:
    ``shared[r]`` is CTA ``r``'s shared-memory byte image (``uint8``), ``tmem[r]`` its ``128 x 512`` ``uint32``
    TMEM cells (written in place). Both CTAs' halves of A and of B are read through ``a_desc``/``b_desc``; D =
    A @ B.T (+ D when ``enable_input_d``) lands in both TMEMs (:func:`pair_accumulator_place`). Bad encodings raise
    :class:`DescriptorError` naming what is wrong.

    Example: ``pair_mma("f16", [smem0, smem1], [cells0, cells1], 0, a_desc, b_desc, 0x10400490, False)`` is a
    bf16 256 x 256 pair MMA into column 0 of both CTAs' TMEM.
    """
    if len(shared) != 2 or len(tmem) != 2:
        raise DescriptorError(f"a pair MMA reads two CTAs' shared memory and writes two TMEMs, got {len(shared)}")
    fields = decode_instruction_descriptor(idesc, kind)
    if fields["sparse"] or kind == "mxf8f6f4":
        raise DescriptorError("the pair model covers dense MMAs (sparse and block-scaled ones are not modelled)")
    m, n = fields["m"], fields["n"]
    error = pair_shape_error(kind, m, n)
    if error:
        raise DescriptorError(f"instruction descriptor {idesc:#010x}: {error}")
    if fields["b_major"] == "MN" and OPERAND_ELEMENTS[fields["b_dtype"]].itemsize == 1 and n % 32:
        raise DescriptorError(f"an MN-major 8-bit B of a pair needs N a multiple of 32, not {n}")
    a_type, b_type = OPERAND_ELEMENTS[fields["a_dtype"]], OPERAND_ELEMENTS[fields["b_dtype"]]
    a_halves = [load_operand(image, a_desc, m // 2, a_type, fields["a_major"]) for image in shared]
    b_halves = [load_operand(image, b_desc, n // 2, b_type, fields["b_major"]) for image in shared]
    a, b = np.concatenate(a_halves), np.concatenate(b_halves)  # the even CTA's rows first
    if fields["negate_a"]:
        a = -a
    if fields["negate_b"]:
        b = -b
    lane0, column0 = d_taddr >> 16, d_taddr & 0xFFFF
    if lane0:
        raise DescriptorError(
            f"a pair's D starts at lane 0 of each CTA's TMEM; d-tmem {d_taddr:#010x} names lane {lane0}"
        )
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    place = np.vectorize(lambda r, c: pair_accumulator_place(m, n, int(r), int(c)), otypes=[int, int, int])
    ctas, lanes, columns = place(rows, cols)
    columns = columns + column0
    if columns.max() >= _COLUMNS:
        raise DescriptorError(f"D reaches TMEM column {int(columns.max())} of {_COLUMNS}")
    d_type = ACCUMULATOR_TYPES[fields["d_dtype"]]
    old = np.empty((m, n), d_type)
    for r in (0, 1):
        at = ctas == r
        words = np.asarray(tmem[r])[lanes[at], columns[at]]
        old[at] = (
            (words & np.uint32(0xFFFF)).astype(np.uint16).view(d_type) if d_type.itemsize == 2 else words.view(d_type)
        )
    result = mma_reference(old, a, b.T, enable_input_d, saturate=fields.get("saturate", False))
    out = result.view(np.uint16).astype(np.uint32) if d_type.itemsize == 2 else result.view(np.uint32)
    for r in (0, 1):
        at = ctas == r
        tmem[r][lanes[at], columns[at]] = out[at]


# --- inside a kernel: the tcgen05 executor's pair helpers ---


def _value(interp, expr, thread: int) -> int:
    value = np.asarray(interp.eval(expr))
    return int(value.reshape(-1)[thread] if value.ndim else value)


def _places(m: int, n: int):
    rows, cols = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    place = np.vectorize(lambda r, c: pair_accumulator_place(m, n, int(r), int(c)), otypes=[int, int, int])
    return place(rows, cols)


def _tensor_memory(cta, what: str):
    """The tensor memory of ``cta`` (an interpreter): made by its TMEM allocation, which a pair's MMA and commit
    need in both CTAs (``tcgen05.alloc.cta_group::2`` by one warp of each)."""
    if cta.tmem is None:
        raise SimulationError(
            f"{what}: CTA {cta.launch.rank} of the pair has allocated no tensor memory (tcgen05.alloc.cta_group::2 "
            "by one warp of each CTA of the pair)"
        )
    return cta.tmem


def _check_fields(kind: str, fields: dict, idesc: int, what: str) -> None:
    if fields["sparse"]:
        raise DescriptorError(f"{what}: sparse MMAs (instruction descriptor bit 2) are not modelled")
    error = pair_shape_error(kind, fields["m"], fields["n"])
    if error:
        raise DescriptorError(f"{what}: instruction descriptor {idesc:#010x}: {error}")
    for operand in ("a", "b"):
        if fields[f"{operand}_dtype"] not in OPERAND_ELEMENTS:
            raise DescriptorError(f"{what}: {operand.upper()} type {fields[f'{operand}_dtype']} is not modelled")
    if fields["b_major"] == "MN" and OPERAND_ELEMENTS[fields["b_dtype"]].itemsize == 1 and fields["n"] % 32:
        raise DescriptorError(f"{what}: an MN-major 8-bit B of a pair needs N a multiple of 32, not {fields['n']}")


def issue(interp, args, kind: str) -> None:
    """Run ``mma_<kind>_ss_cg2`` (``ops/helpers/tcgen05``: d_taddr, a_desc, b_desc, idesc, enable_input_d) for each
    active thread: the pair's MMA over this CTA and its peer (rank ``^ 1``).

    Example: ``issue(interp, args, "f16")`` in a cluster of two CTAs.
    """
    if len(args) != 5:
        raise SimulationError(f"tcgen05.mma.cta_group::2 takes 5 arguments (ops/helpers/tcgen05.py), got {len(args)}")
    rank = interp.launch.rank
    for thread in np.nonzero(interp.mask)[0].tolist():
        what = f"tcgen05.mma.cta_group::2.kind::{kind} issued by thread {thread} of CTA {rank}"
        peer = peer_of(interp, rank ^ 1, what)
        ctas = [interp, peer] if rank % 2 == 0 else [peer, interp]  # the even rank's half first
        idesc = _value(interp, args[3], thread)
        fields = decode_instruction_descriptor(idesc, kind)
        _check_fields(kind, fields, idesc, what)
        m, n = fields["m"], fields["n"]
        halves = {}
        reads = []
        for operand, rows, source in (("a", m // 2, args[1]), ("b", n // 2, args[2])):
            descriptor = _value(interp, source, thread) & ((1 << 64) - 1)
            desc = decode_shared_descriptor(descriptor)
            dtype = OPERAND_ELEMENTS[fields[f"{operand}_dtype"]]
            addresses = operand_addresses(desc, rows, dtype.itemsize, fields[f"{operand}_major"])
            parts = []
            for cta in ctas:
                where = f"{what}: {operand.upper()}'s half in CTA {cta.launch.rank} (descriptor {descriptor:#018x})"
                values, memory, elements = read_shared_operand(
                    interp,
                    desc["start_address"],
                    addresses,
                    dtype,
                    [thread],
                    where,
                    what,
                    space=cta.launch.shared_space,
                )
                parts.append(values)
                reads.append((cta, memory, elements))
            halves[operand] = np.concatenate(parts)
        a, b = halves["a"], halves["b"]
        if fields["negate_a"]:
            a = -a
        if fields["negate_b"]:
            b = -b
        d_taddr = _value(interp, args[0], thread)
        if d_taddr >> 16:
            raise DescriptorError(
                f"{what}: the pair's D starts at lane 0; d-tmem {d_taddr:#010x} names lane {d_taddr >> 16}"
            )
        which, lanes, columns = _places(m, n)
        columns = columns + (d_taddr & 0xFFFF)
        if columns.max() >= _COLUMNS:
            raise OutOfBounds(f"{what}: D reaches TMEM column {int(columns.max())} of {_COLUMNS}")
        warp = thread // 32
        tms = [_tensor_memory(cta, what) for cta in ctas]
        d_type = ACCUMULATOR_TYPES[fields["d_dtype"]]
        old = np.empty((m, n), d_type)
        for c, tm in enumerate(tms):
            at = which == c
            tm.check_columns(columns[at], f"{what}: D in CTA {ctas[c].launch.rank}")
            words = tm.read(lanes[at], columns[at], warp, kind="mma", thread=thread)
            old[at] = (
                (words & np.uint32(0xFFFF)).astype(np.uint16).view(d_type)
                if d_type.itemsize == 2
                else words.view(d_type)
            )
        enable = _value(interp, args[4], thread) != 0
        result = mma_reference(old, a, b.T, enable, saturate=fields.get("saturate", False))
        out = result.view(np.uint16).astype(np.uint32) if d_type.itemsize == 2 else result.view(np.uint32)
        for c, tm in enumerate(tms):
            at = which == c
            tm.write(lanes[at], columns[at], warp, out[at], kind="mma", thread=thread)
        for cta, memory, elements in reads:  # in flight until a commit of the issuing warp is seen complete
            generation = int(_tensor_memory(cta, what).order.commits[warp])
            read = AsyncRead(elements, what, warp, generation, cta.count)
            memory.async_reads.append(read)
            cta.async_reads.append(read)


def commit(interp, args) -> None:
    """Run ``commit_cg2_multicast(&bar, ctaMask)``: for each active thread, one arrival on the mbarrier at ``bar``'s
    offset in every CTA of the mask, carrying that CTA's tcgen05 commit generation of the thread's warp and what the
    thread had acquired.

    Example: ``commit(interp, [address_of(bar), 3])`` arrives on ``bar`` in CTAs 0 and 1.
    """
    if len(args) != 2:
        raise SimulationError(f"the commit_cg2_multicast helper takes 2 arguments (ops/helpers), got {len(args)}")
    call = mbarrier._Call(interp, "commit_cg2_multicast", args, 2)
    size = peer_of(interp, interp.launch.rank, "tcgen05.commit").launch.cluster.size
    for t in call.threads:
        what = f"tcgen05.commit.cta_group::2 .multicast::cluster by thread {t} of CTA {interp.launch.rank}"
        warp = t // 32
        view = mbarrier.clocks(interp).view(mbarrier.row(interp, t))
        for rank in commit_multicast_ranks(int(call.operand[t]), size):
            if rank == interp.launch.rank:
                target, bar = interp, mbarrier.find(interp, call.memory, int(call.index[t]), what)
            else:
                target = peer_of(interp, rank, what)
                memory, element = peer_element(interp, call.memory, call.index[t : t + 1], rank, what)
                bar = peer_mbarrier(interp, t, memory, int(element[0]), rank, what)
            order = _tensor_memory(target, what).order
            seen = mbarrier._seen_reads(interp, t) if target is interp else []
            done = order.seen_done(warp)
            published, generation = order.commit(warp)
            bar.arrive(published, warp, generation, seen, done, clocks=view)
