"""CuTe as an oracle (issue 34, point 7): CUTLASS's own builders, compiled on the host from the pinned
``nvidia-cutlass`` headers (``tests/oracles/cute_oracle.cu``, built and cached by ``oracles.cute_builders``), against
the project's encoders, field by field:

* shared-memory descriptors: ``UMMA::make_umma_desc`` and ``SM90::GMMA::make_gmma_desc`` against
  ``shared_matrix_descriptor`` + ``advance_k`` (``family="tcgen05"`` / ``"wgmma"``), for every K block, on operands
  tiled from CuTe's canonical atoms -- first shown to be the very operands ``mma_shared_layout`` lays out (every
  element at the same byte);
* instruction descriptors: ``UMMA::make_instr_desc`` against ``instruction_descriptor``; for the CTA pair
  (``cta_group::2``), the ``idesc_`` of CuTe's 2x1SM atoms' ``MMA_Traits`` against ``instruction_descriptor`` of a
  ``cta_group=2`` instruction, and the rows of A and B each CTA holds (``partition_shape_A/B`` of the 2x1SM atom's
  ``TiledMMA``) against ``PairMma``; the shared-memory descriptors of a CTA's halves are among the operands above;
* tensor maps: the arguments ``make_tma_copy`` hands ``cuTensorMapEncodeTiled`` against ``tensor_map_for``.

Where the two differ, the difference must be one ``docs/decisions.md`` lists ("CuTe as an oracle: what differs"):
a descriptor offset the hardware never reads (the ISA: swizzled K-major LBO is "assumed 1"; an offset that steps
between atoms or core matrices the operand has only one of multiplies zero), or the tf32 tensor-map data type. A
field the hardware reads never differs.

CuTe's descriptors depend on the element type only through its width (``make_umma_desc`` recasts the operand to
``uint128_t``), so the program builds one type per width and every project dtype of that width is compared with it.
The sample runs in every suite run; the sweep, every case of ``test_smem_descriptor_isa.py``, ``test_wgmma.py``,
``test_tcgen05_mma.py`` and ``test_tma.py``, builds for minutes and runs with ``TIRX_LAYOUT_CUTE_SWEEP=1``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tirx_layout.hw.constructors import mma_shared_layout
from tirx_layout.hw.smem_descriptor import advance_k, shared_matrix_descriptor
from tirx_layout.hw.tcgen05_mma import MmaInstruction, PairMma, instruction_descriptor
from tirx_layout.hw.tma import tensor_map_for

from oracles import mma_isa, wgmma_isa
from oracles.cute_builders import cute_results

#: The project's dtypes of each element width CuTe's program builds one type for.
DTYPES_OF_BITS = {
    8: ("float8_e4m3fn", "float8_e5m2", "int8", "uint8"),
    16: ("float16", "bfloat16"),
    32: ("float32",),
}
#: CuTe's name of a type the project spells otherwise, and the project's tensor-map dtype for it.
PROJECT_DTYPE = {"tfloat32": "float32"}


def fields(value: int, table: dict) -> dict:
    """``value``'s fields by ``table``; the bits outside every field as ``"other"``."""
    out, used = {}, 0
    for name, (low, width) in table.items():
        out[name] = (value >> low) & ((1 << width) - 1)
        used |= ((1 << width) - 1) << low
    out["other"] = value & ~used & (2**64 - 1)
    return out


def unread_offsets(major: str, mode: str, element: int, rows: int) -> set[str]:
    """The descriptor offsets the hardware never reads for a ``rows``-row operand (one instruction's K block of 32
    bytes), by the ISA's canonical layouts (``oracles.mma_isa.canonical_byte``): K-major swizzled LBO ("assumed 1");
    SBO of K-major rows that form one 8-row group; MN-major LBO (swizzled) or SBO (none) when the rows fit in one
    atom or core matrix. The K block always spans more than one K group, so the other offset is always read."""
    if major == "K":
        unread = {"lbo"} if mode != "none" else set()
        return unread | ({"sbo"} if rows <= 8 else set())
    across = "lbo" if mode != "none" else "sbo"
    return {across} if rows * element <= mma_isa.ROW_BYTES[mode] else set()


def check_descriptors(theirs: list[int], ours: list[int], table: dict, unread: set[str], what) -> list:
    """Every K block's fields equal but ``unread`` ones; the differing unread fields, for the caller to report."""
    assert len(theirs) == len(ours), what
    differing = []
    for block, (cute_bits, our_bits) in enumerate(zip(theirs, ours, strict=True)):
        cute_fields, our_fields = fields(cute_bits, table), fields(our_bits, table)
        for name in cute_fields:
            if cute_fields[name] != our_fields[name]:
                assert name in unread, (what, block, name, hex(cute_bits), hex(our_bits))
                differing.append((name, cute_fields[name] << 4, our_fields[name] << 4))
    return differing


def check_operands(results, family: str) -> list:
    """Every operand CuTe described for ``family``: same element bytes as ``mma_shared_layout``, same descriptors
    field by field (unread offsets aside). Returns the unread differences seen."""
    found = results.umma if family == "tcgen05" else results.gmma
    table = mma_isa.SHARED_FIELDS if family == "tcgen05" else wgmma_isa.FIELDS
    assert found, "the oracle printed no descriptors"
    differing = []
    for (bits, major, mode, rows, cols), theirs in found.items():
        for dtype in DTYPES_OF_BITS[bits]:
            allowed = mma_isa.isa_allows(dtype, major, mode)
            if family == "wgmma":
                allowed = allowed and (major == "K" or wgmma_isa.may_transpose(dtype))
            if not allowed:
                continue  # refused by the encoders, tested in test_smem_descriptor_isa.py / test_wgmma.py
            element = bits // 8
            layout = mma_shared_layout(dtype, mode, (rows, cols), major=major)
            r, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            placed = np.asarray(layout.apply(r, k, shape=[rows, cols])["m"]) * element
            assert placed.ravel().tolist() == results.layouts[(bits, major, mode, rows, cols)], (dtype, major, mode)
            derived = shared_matrix_descriptor(layout, (rows, cols), dtype, 0, operand="B", family=family)
            ours = [advance_k(derived, s).encode(family=family) for s in range(len(theirs))]
            unread = unread_offsets(major, mode, element, rows)
            what = (family, dtype, major, mode, rows, cols)
            differing += [(what, *d) for d in check_descriptors(theirs, ours, table, unread, what)]
    return differing


def check_instruction_descriptors(results) -> int:
    """Every instruction descriptor CuTe built equals ours field by field (ISA Table 42), or ours refuses the
    instruction as the ISA does (CuTe's builder checks no limits). Returns how many were compared."""
    assert results.idesc, "the oracle printed no instruction descriptors"
    compared = 0
    for (a, b, d, m, n, a_major, b_major), theirs in results.idesc.items():
        kind = mma_isa.KIND_OF[a]
        what = (a, b, d, m, n, a_major, b_major)
        if b_major == "MN" and mma_isa.ELEMENT_BYTES[b] == 1 and n % 16:  # ISA Table 54: N step 16
            with pytest.raises(ValueError, match="MN-major 8-bit B needs N a multiple of 16"):
                MmaInstruction(kind, a, b, d, m=m, n=n, a_major=a_major, b_major=b_major)
            continue
        ours = instruction_descriptor(MmaInstruction(kind, a, b, d, m=m, n=n, a_major=a_major, b_major=b_major))
        cute_fields, our_fields = fields(theirs, mma_isa.DENSE_FIELDS), fields(ours, mma_isa.DENSE_FIELDS)
        assert cute_fields == our_fields, (what, hex(theirs), hex(ours))
        compared += 1
    return compared


def check_pair_instruction_descriptors(results) -> int:
    """Every 2x1SM atom's instruction descriptor equals ours for the ``cta_group=2`` instruction of the pair's M and
    N, field by field (the descriptor has no cta_group field: CuTe's atoms and ours both write the pair's M).
    Returns how many were compared."""
    assert results.idesc_pair, "the oracle printed no 2x1SM instruction descriptors"
    for (a, b, d, m, n, a_major, b_major), theirs in results.idesc_pair.items():
        kind = mma_isa.KIND_OF[a]
        pair = MmaInstruction(kind, a, b, d, m=m, n=n, a_major=a_major, b_major=b_major, cta_group=2)
        cute_fields, our_fields = (
            fields(theirs, mma_isa.DENSE_FIELDS),
            fields(instruction_descriptor(pair), mma_isa.DENSE_FIELDS),
        )
        assert cute_fields == our_fields, ((a, b, d, m, n, a_major, b_major), hex(theirs))
    return len(results.idesc_pair)


def check_pair_shares(results) -> int:
    """The rows of A and of B one CTA of the pair holds, CuTe's (the 2x1SM atom's TiledMMA) against ``PairMma``."""
    assert results.pair, "the oracle printed no pair shares"
    for (m, n, _k), (a_rows, b_rows) in results.pair.items():
        pair = PairMma("f16", m=m, n=n)
        assert (pair.a_rows, pair.b_rows) == (a_rows, b_rows), (m, n)
    return len(results.pair)


def check_tensor_maps(results) -> list:
    """Every map CuTe encoded equals ``tensor_map_for``'s field by field, but the tf32 data type (decided in
    docs/decisions.md). Returns the differences seen."""
    assert results.tma, "the oracle printed no tensor maps"
    differing = []
    for (name, major, mode, rows, cols, rows_total, cols_total), theirs in results.tma.items():
        dtype = PROJECT_DTYPE.get(name, name)
        if major == "K":
            layout = mma_shared_layout(dtype, mode, (rows, cols))
            tmap = tensor_map_for((rows_total, cols_total), dtype, (rows, cols), layout)
        else:  # a (K, MN) global buffer, MN contiguous, into an MN-major operand
            layout = mma_shared_layout(dtype, mode, (rows, cols), major="MN")
            tmap = tensor_map_for((cols_total, rows_total), dtype, (cols, rows), layout, transposed=True)
        ours = tmap.driver_fields()
        for field_name, value in theirs.items():
            if ours[field_name] != value:
                assert (name, field_name) == ("tfloat32", "data_type"), (name, major, mode, field_name, value, ours)
                differing.append((name, field_name, value, ours[field_name]))
    return differing


# CuTe's TFLOAT32 (11) for its tfloat32_t operands; ours FLOAT32 (7): docs/decisions.md says why.
TF32_DATA_TYPE = ("tfloat32", "data_type", 11, 7)


def test_the_sample_agrees_with_cute():
    results = cute_results()
    assert len(results.layouts) == 5 and len(results.idesc) == 5 and len(results.tma) == 3
    differing = check_operands(results, "tcgen05") + check_operands(results, "wgmma")
    # every sample operand spans several 8-row groups (K-major) or atoms along MN (MN-major): every offset is read
    assert differing == []
    assert check_instruction_descriptors(results) == 5
    assert check_tensor_maps(results) == [TF32_DATA_TYPE]
    # the pair: the 2x1SM bf16 256x256 atom's descriptor (0x10400490: M >> 4 = 16 in bits 24-28) and each CTA's
    # share (128 rows of A, 128 of B), whose 128 x 64 bf16 half of A is among the operands compared above
    assert check_pair_instruction_descriptors(results) == 1
    assert results.idesc_pair[("bfloat16", "bfloat16", "float32", 256, 256, "K", "K")] == 0x10400490
    assert check_pair_shares(results) == 1 and results.pair[(256, 256, 64)] == (128, 128)


@pytest.mark.slow
def test_every_case_of_the_projects_oracles_agrees_with_cute():
    results = cute_results(sweep=True)
    assert len(results.layouts) == len(results.umma) == 87 and len(results.gmma) == 87 - 4
    differing = check_operands(results, "tcgen05") + check_operands(results, "wgmma")
    # Only unread offsets differ (docs/decisions.md, issue 34): CuTe writes 0 where the operand has one 8-row group
    # (K-major SBO), one 16-byte core matrix along MN (MN-major SBO, no swizzle) or one atom along MN (MN-major
    # LBO, swizzled); ours writes the packed value (one group, core matrix or atom further on).
    kinds = {(what[2], what[3] != "none", name) for what, name, _, _ in differing}
    assert kinds == {("K", False, "sbo"), ("K", True, "sbo"), ("MN", False, "sbo"), ("MN", True, "lbo")}, kinds
    assert all(cute == 0 and ours > 0 for _, _, cute, ours in differing)
    # 10 type combinations x 2 M x 4 N x 4 majornesses, less the 24 whose MN-major 8-bit B has N = 8 (refused)
    assert check_instruction_descriptors(results) == 296
    assert set(check_tensor_maps(results)) == {TF32_DATA_TYPE}
    # 8 type combinations x (2 M x 3 N K-major + 2 + 2 + 1 other majornesses)
    assert check_pair_instruction_descriptors(results) == 8 * 11
    assert check_pair_shares(results) == 3
    assert {mn: results.pair[(*mn, 64)] for mn in ((128, 64), (256, 16))} == {(128, 64): (64, 32), (256, 16): (128, 8)}
