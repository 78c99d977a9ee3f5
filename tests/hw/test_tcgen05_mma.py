"""The ``tcgen05.mma`` instruction (hw/tcgen05_mma.py): its shape records against the ISA's "Matrix shape" table,
and its instruction descriptor against (a) the test-side encoder written from the PTX ISA's field tables
(``tests/oracles/mma_isa.py``) and (b) upstream TVM's own encoders (``tvm.backend.cuda.cpp.descriptors``, an oracle
in tests only)."""

from __future__ import annotations

import itertools

import pytest
from tvm.backend.cuda.cpp import descriptors as upstream

from tirx_layout.hw.memory import dtype_bytes
from tirx_layout.hw.tcgen05_mma import (
    ACCUMULATOR_CODES,
    K_BYTES_PER_INSTRUCTION,
    MMA_SHAPES,
    OPERAND_CODES,
    MmaInstruction,
    PairMma,
    instruction_descriptor,
    leader_rank,
    mma_shape,
    pair_cta_mask,
    valid_m,
    valid_n,
)

from oracles import mma_isa

# (a) is tests/oracles/mma_isa.py: the ISA's descriptor tables and canonical layouts, restated once for all tests.
ISA_IDESC_FIELDS, ISA_BLOCK_SCALED_FIELDS = mma_isa.DENSE_FIELDS, mma_isa.BLOCK_SCALED_FIELDS
pack = mma_isa.put


def test_worked_instruction_descriptors():
    # Values computed from the ISA tables in docs/notes/tcgen05-mma-facts.md §3.3.
    bf16 = MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128)
    f16 = MmaInstruction("f16", "float16", "float16", "float16", m=64, n=200)
    mx = MmaInstruction(
        "mxf8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=128, n=112, scale_a_id=2, scale_b_id=2
    )
    assert [instruction_descriptor(i) for i in (bf16, f16, mx)] == [0x08200490, 0x04320000, 0x489C0020]


DENSE_CASES = [
    ("f16", "float16", "float16", "float32"),
    ("f16", "bfloat16", "bfloat16", "float32"),
    ("f16", "float16", "float16", "float16"),
    ("tf32", "float32", "float32", "float32"),
    ("f8f6f4", "float8_e4m3fn", "float8_e5m2", "float32"),
    ("f8f6f4", "float8_e5m2", "float8_e4m3fn", "float16"),
    ("i8", "int8", "uint8", "int32"),
    ("i8", "uint8", "int8", "int32"),
]


@pytest.mark.parametrize("a, b", [("float16", "bfloat16"), ("bfloat16", "float16")])
def test_kind_f16_refuses_mixed_float16_and_bfloat16_operands(a, b):
    # the ISA's kind::f16 rows list f16 and bf16 operands and no mixed pair (kind::f8f6f4 and i8 document theirs)
    with pytest.raises(ValueError, match=f"the ISA lists no mixed pair, got A {a}, B {b}"):
        MmaInstruction("f16", a, b, "float32", m=128, n=128)


@pytest.mark.parametrize("kind, a, b, d", DENSE_CASES)
@pytest.mark.parametrize("m, n", [(64, 8), (64, 200), (128, 112), (128, 256), (128, 16)])
@pytest.mark.parametrize("majors", [("K", "K"), ("MN", "K"), ("K", "MN"), ("MN", "MN")])
def test_dense_descriptor_matches_isa_table_and_upstream(kind, a, b, d, m, n, majors):
    if kind == "i8" and n == 200:
        n = 208  # the ISA's i8 N: 48..256 step 16
    negate = kind != "i8"
    if majors[1] == "MN" and kind in ("f8f6f4", "i8") and n % 16:  # ISA Table 54: 8-bit MN-major B, N step 16
        with pytest.raises(ValueError, match=f"MN-major 8-bit B needs N a multiple of 16, got N={n}"):
            MmaInstruction(kind, a, b, d, m=m, n=n, a_major=majors[0], b_major="MN")
        return
    inst = MmaInstruction(kind, a, b, d, m=m, n=n, a_major=majors[0], b_major=majors[1], negate_a=negate)
    isa = pack(
        {
            "d_type": mma_isa.D_TYPE_CODE[d],
            "a_type": mma_isa.TYPE_CODE[kind][a],
            "b_type": mma_isa.TYPE_CODE[kind][b],
            "negate_a": int(negate),
            "transpose_a": int(majors[0] == "MN"),
            "transpose_b": int(majors[1] == "MN"),
            "n_shr_3": n // 8,
            "m_shr_4": m // 16,
        },
        ISA_IDESC_FIELDS,
    )
    assert instruction_descriptor(inst) == isa
    alias = {"float32": "tf32"} if kind == "tf32" else {}
    if m == 128 and n % 16:
        return  # upstream requires N % 16 for M = 128 (stricter than the ISA table): no oracle here
    oracle = upstream.encode_instr_descriptor_dense_uint32(
        m,
        n,
        inst.k,
        d,
        alias.get(a, a),
        alias.get(b, b),
        majors[0] == "MN",
        majors[1] == "MN",
        neg_a=negate,
    )
    assert instruction_descriptor(inst) == oracle


@pytest.mark.parametrize("sfa, sfb", [(0, 0), (1, 3), (3, 2)])
@pytest.mark.parametrize("n", [8, 112, 256])
def test_block_scaled_descriptor_matches_isa_table_and_upstream(sfa, sfb, n):
    inst = MmaInstruction(
        "mxf8f6f4", "float8_e5m2", "float8_e4m3fn", "float32", m=128, n=n, scale_a_id=sfa, scale_b_id=sfb
    )
    isa = pack(
        {"sfb_id": sfb, "a_type": 1, "b_type": 0, "n_shr_3": n // 8, "scale_type": 1, "m_shr_7": 1, "sfa_id": sfa},
        ISA_BLOCK_SCALED_FIELDS,
    )
    assert instruction_descriptor(inst) == isa
    oracle = upstream.encode_instr_descriptor_block_scaled_uint32(
        128, n, 32, "float32", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu", False, False
    )
    assert instruction_descriptor(inst) == oracle | sfb << 4 | sfa << 29  # upstream leaves the ids to the caller


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"kind": "f17"}, "unknown tcgen05.mma kind 'f17'"),
        ({"a_dtype": "float8_e4m3fn"}, "A must be one of"),
        ({"d_dtype": "int32"}, "accumulator must be one of"),
        (
            {"a_dtype": "bfloat16", "b_dtype": "bfloat16", "d_dtype": "float16"},
            "float16 accumulator needs float16 A and B",
        ),
        ({"m": 256}, "M in (64, 128), got M=256"),
        ({"n": 260}, "got N=260"),
        ({"n": 12}, "got N=12"),
        ({"a_major": "M"}, "got 'M'"),
        ({"saturate": True}, "saturate is for kind i8 only"),
        ({"scale_a_id": 1}, "scale_a_id is for block-scaled kinds only"),
    ],
)
def test_instruction_refusals(fields, message):
    base = {"kind": "f16", "a_dtype": "float16", "b_dtype": "float16", "d_dtype": "float32", "m": 128, "n": 128}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        MmaInstruction(**{**base, **fields})


@pytest.mark.parametrize("a, code", [("float6_e2m3fn", 3), ("float6_e3m2fn", 4), ("float4_e2m1fn", 5)])
def test_sub_byte_f8f6f4_types(a, code):
    # ISA f8f6f4 type codes: E2M3 = 3, E3M2 = 4, E2M1 = 5; K stays 32 (8-bit containers)
    inst = MmaInstruction("f8f6f4", a, "float8_e4m3fn", "float32", m=128, n=64)
    isa = pack({"d_type": 1, "a_type": code, "b_type": 0, "n_shr_3": 8, "m_shr_4": 8}, ISA_IDESC_FIELDS)
    assert (instruction_descriptor(inst), inst.k) == (isa, 32)


def test_instruction_refusals_per_kind():
    with pytest.raises(ValueError, match="i8 cannot negate"):
        MmaInstruction("i8", "int8", "int8", "int32", m=128, n=128, negate_b=True)
    with pytest.raises(ValueError, match="got N=40"):  # i8 N: 8, 16, 24, 32, then step 16 from 48
        MmaInstruction("i8", "int8", "int8", "int32", m=64, n=40)
    with pytest.raises(ValueError, match="MN-major 8-bit B needs N a multiple of 16"):
        MmaInstruction("f8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=128, n=24, b_major="MN")
    with pytest.raises(ValueError, match=r"reads only .* MN-major"):
        MmaInstruction("f8f6f4", "float6_e2m3fn", "float8_e4m3fn", "float32", m=128, n=32, a_major="MN")
    with pytest.raises(ValueError, match=r"M in \(128,\), got M=64"):
        MmaInstruction("mxf8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=64, n=32)
    with pytest.raises(ValueError, match=r"scale_b_id must be in 0\.\.3"):
        MmaInstruction("mxf8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=128, n=32, scale_b_id=4)
    with pytest.raises(TypeError, match="negate_a must be a bool"):
        MmaInstruction("f16", "float16", "float16", "float32", m=128, n=32, negate_a=1)


@pytest.mark.parametrize("dtype", tuple(mma_isa.ELEMENT_BYTES))
@pytest.mark.parametrize("n", [8, 16, 112, 256])
@pytest.mark.parametrize(("a_major", "b_major"), [("K", "K"), ("MN", "K"), ("K", "MN"), ("MN", "MN")])
def test_instruction_descriptor_bits_equal_the_isa_table(dtype, n, a_major, b_major):
    kind = mma_isa.KIND_OF[dtype]
    accumulators = {"f16": ["float32", "float16"], "tf32": ["float32"], "f8f6f4": ["float32", "float16"]}
    for d, m in itertools.product(accumulators.get(kind, ["int32"]), (64, 128)):
        if d == "float16" and kind == "f16" and dtype != "float16":
            continue  # an f16 accumulator needs f16 inputs, refused elsewhere
        if b_major == "MN" and mma_isa.ELEMENT_BYTES[dtype] == 1 and n % 16:
            continue  # an MN-major 8-bit B needs N % 16 (Table 54), refused elsewhere
        instruction = MmaInstruction(kind, dtype, dtype, d, m=m, n=n, a_major=a_major, b_major=b_major)
        assert instruction_descriptor(instruction) == mma_isa.instruction_descriptor(
            kind, dtype, dtype, d, m, n, a_major, b_major
        )
    if kind == "f8f6f4" and not (b_major == "MN" and n % 16):
        shape = {"m": 128, "n": n, "a_major": a_major, "b_major": b_major}
        for sfa, sfb in itertools.product(range(4), range(4)):
            scaled = MmaInstruction("mxf8f6f4", dtype, dtype, "float32", **shape, scale_a_id=sfa, scale_b_id=sfb)
            assert instruction_descriptor(scaled) == mma_isa.instruction_descriptor(
                "mxf8f6f4", dtype, dtype, "float32", 128, n, a_major, b_major, sfa_id=sfa, sfb_id=sfb
            )


def test_the_worked_values_of_the_facts_note():
    # facts §3.3, computed by hand from the tables
    f16 = MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=128, n=128)
    assert instruction_descriptor(f16) == mma_isa.instruction_descriptor(*f16_args(f16)) == 0x08200490
    half = MmaInstruction("f16", "float16", "float16", "float16", m=64, n=200)
    assert instruction_descriptor(half) == mma_isa.instruction_descriptor(*f16_args(half)) == 0x04320000
    scaled = MmaInstruction(
        "mxf8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=128, n=112, scale_a_id=2, scale_b_id=2
    )
    assert instruction_descriptor(scaled) == 0x489C0020
    assert mma_isa.instruction_descriptor(*f16_args(scaled), sfa_id=2, sfb_id=2) == 0x489C0020


def f16_args(i: MmaInstruction):
    return i.kind, i.a_dtype, i.b_dtype, i.d_dtype, i.m, i.n, i.a_major, i.b_major


# ---- the shape records ("Matrix shape", dense, cta_group::1; facts §2.1), restated from the ISA's table
ISA_M = {"f16": (64, 128), "tf32": (64, 128), "f8f6f4": (64, 128), "i8": (64, 128), "mxf8f6f4": (128,)}
ISA_K = {"f16": 16, "tf32": 8, "f8f6f4": 32, "i8": 32, "mxf8f6f4": 32}


def isa_n(kind: str) -> list[int]:
    return [8, 16, 24, 32, *range(48, 257, 16)] if kind == "i8" else list(range(8, 257, 8))


@pytest.mark.parametrize("kind", sorted(ISA_M))
def test_the_shape_records_are_the_isas_table(kind):
    assert valid_m(kind) == ISA_M[kind]
    for m in ISA_M[kind]:
        shape = mma_shape(kind, m)
        assert list(valid_n(kind, m)) == list(shape.n.values) == isa_n(kind)
        assert (shape.k, shape.cta_group) == (ISA_K[kind], 1)


def test_every_kind_has_its_records_once_and_k_is_32_bytes():
    keys = [(shape.kind, shape.m, shape.cta_group) for shape in MMA_SHAPES]
    assert len(set(keys)) == len(keys)
    assert {shape.kind for shape in MMA_SHAPES} == set(OPERAND_CODES) == set(ACCUMULATOR_CODES)
    for shape in MMA_SHAPES:
        # the 6- and 4-bit types of f8f6f4 sit in 8-bit containers: K counts containers
        container = min(dtype_bytes(d) for d in OPERAND_CODES[shape.kind] if not d.startswith(("float6", "float4")))
        assert shape.k * container == K_BYTES_PER_INSTRUCTION, shape


# ---- cta_group::2 (facts §2.1, restated from the ISA's table: M 128/256 across the pair, never 64; N step 16, i8
# step 32 from 32)
ISA_PAIR_N = {"i8": list(range(32, 257, 32))}


@pytest.mark.parametrize("kind", sorted(ISA_M))
def test_the_pair_shape_records_are_the_isas_table(kind):
    assert valid_m(kind, cta_group=2) == (128, 256)
    for m in (128, 256):
        shape = mma_shape(kind, m, cta_group=2)
        assert list(valid_n(kind, m, cta_group=2)) == ISA_PAIR_N.get(kind, list(range(16, 257, 16)))
        assert (shape.k, shape.cta_group) == (ISA_K[kind], 2)
    with pytest.raises(ValueError, match=rf"kind {kind} with cta_group::2 takes M in \(128, 256\), got M=64"):
        mma_shape(kind, 64, cta_group=2)


def test_pair_instructions_are_checked_against_the_pair_table():
    pair = MmaInstruction("f16", "bfloat16", "bfloat16", "float32", m=256, n=256, cta_group=2)
    assert pair.k == 16
    # CuTe's make_instr_desc for SM100_MMA_F16BF16_2x1SM_SS<bf16, bf16, float, 256, 256, K, K> (the descriptor
    # has no cta_group field; M >> 4 = 16 sets bit 28), checked field by field in test_cute_oracle.py
    assert instruction_descriptor(pair) == mma_isa.instruction_descriptor(*f16_args(pair)) == 0x10400490
    with pytest.raises(ValueError, match=r"kind f16 with M=256 and cta_group::2 takes N in 16..256 step 16, got N=24"):
        MmaInstruction("f16", "float16", "float16", "float32", m=256, n=24, cta_group=2)
    with pytest.raises(ValueError, match=r"kind i8 with M=128 and cta_group::2 takes N in 32..256 step 32, got N=48"):
        MmaInstruction("i8", "int8", "int8", "int32", m=128, n=48, cta_group=2)
    with pytest.raises(ValueError, match=r"kind tf32 with cta_group::2 takes M in \(128, 256\), got M=64"):
        MmaInstruction("tf32", "float32", "float32", "float32", m=64, n=64, cta_group=2)
    with pytest.raises(ValueError, match=r"an MN-major 8-bit B needs N a multiple of 32, got N=48"):
        MmaInstruction("f8f6f4", "float8_e4m3fn", "float8_e4m3fn", "float32", m=256, n=48, b_major="MN", cta_group=2)
    for bad in (0, 3, True, "2"):
        with pytest.raises(ValueError, match="cta_group is 1 \\(one CTA\\) or 2 \\(a CTA pair\\), got"):
            MmaInstruction("f16", "float16", "float16", "float32", m=128, n=64, cta_group=bad)


def test_what_each_cta_of_a_pair_holds():
    """CuTe's 2x1SM atoms (mma_traits_sm100.hpp): ALayout (2,(M/2,K)):(M/2,(1,M)) -- CTA v holds A rows v*M/2..;
    BLayout (2,(N/2,K)):(N/2,(1,N)) -- B rows v*N/2..; CLayout as A: D rows v*M/2.., all N columns."""
    for m, n in ((256, 256), (128, 64), (256, 16)):
        pair = PairMma("f16", m=m, n=n)
        assert (pair.a_rows, pair.b_rows, pair.d_rows) == (m // 2, n // 2, m // 2)
        a_rows = [pair.a_row_of(v, r) for v in range(2) for r in range(pair.a_rows)]
        b_rows = [pair.b_row_of(v, r) for v in range(2) for r in range(pair.b_rows)]
        assert a_rows == list(range(m)) and b_rows == list(range(n))  # the halves tile the pair's rows once
    assert (PairMma("f16", 256, 64).datapath, PairMma("tf32", 128, 64).datapath) == ("A", "B")
    assert [leader_rank(r) for r in range(6)] == [0, 0, 2, 2, 4, 4]
    assert [pair_cta_mask(r) for r in range(4)] == [0b11, 0b11, 0b1100, 0b1100]
    with pytest.raises(ValueError, match="kind f16 with cta_group::2 takes M in"):
        PairMma("f16", m=64, n=64)
    with pytest.raises(ValueError, match="a cluster rank is non-negative, got -1"):
        leader_rank(-1)


def test_shape_lookup_refusals():
    with pytest.raises(ValueError, match=r"unknown tcgen05.mma kind 'f17'; expected one of \['f16', 'f8f6f4'"):
        valid_n("f17", 128)
    with pytest.raises(ValueError, match=r"kind i8 with cta_group::1 takes M in \(64, 128\), got M=256"):
        valid_n("i8", 256)
