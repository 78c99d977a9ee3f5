"""The simulator's block-scaled ``mma.sync`` (sim/mma_sync.py) against the test's transcription of the ISA
(``tests/oracles``): registers filled lane by lane from the ISA's fragment tables and selector listing, for every
kind, scale type and scale vector (fp4 included, which no kernel can carry yet), every selector value; the other
lanes' and bytes' scales are noise the instruction must not read. Also the scale decoding (ue8m0, ue4m3) and the
m16n8k64 fp4 table."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
import tvm

from tirx_layout.sim import SimulationError
from tirx_layout.sim.mma_sync import HELPERS, decode_scales, fp4_places

from oracles import mma_sync_block_scale_isa as isa
from oracles import mma_sync_isa

TYPES = {
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "ue8m0": ml_dtypes.float8_e8m0fnu,
    "ue4m3": ml_dtypes.float8_e4m3fn,
}


class Registers:
    """The part of a CTA interpreter an instruction's register operands use: 32 threads, all active, one register
    array per local buffer."""

    def __init__(self):
        self.count, self.mask, self.registers = 32, np.ones(32, bool), {}

    def buffer(self, name, dtype, slots, values):
        buffer = tvm.tirx.decl_buffer((slots,), dtype, name, scope="local")
        self.registers[buffer] = values
        return tvm.tirx.address_of(tvm.tirx.BufferLoad(buffer, [tvm.tirx.IntImm("int32", 0)]))

    def eval(self, expr):
        return int(expr)


def isa_places(operand, fp4):
    """(lane, i) -> (row, col) of A (16 x K) or B as (K, N), from the ISA transcriptions."""
    if fp4:
        place = isa.fp4_a_place if operand == "A" else isa.fp4_b_place
        count = 32 if operand == "A" else 16
        return {(lane, i): place(lane, i) for lane, i in itertools.product(range(32), range(count))}
    place = mma_sync_isa.a_place if operand == "A" else mma_sync_isa.b_place
    count = 16 if operand == "A" else 8
    return {(lane, i): place(1, 32, lane, i) for lane, i in itertools.product(range(32), range(count))}


FORMS = [
    ("mxf8f6f4", "e4m3", "e5m2", "ue8m0", 1),
    ("mxf8f6f4", "e5m2", "e4m3", "ue8m0", 1),
    ("mxf4", "e2m1", "e2m1", "ue8m0", 2),
    ("mxf4nvf4", "e2m1", "e2m1", "ue8m0", 2),
    ("mxf4nvf4", "e2m1", "e2m1", "ue4m3", 4),
]


#: Every form, and the e2m1 ones again with the operands held packed (two a byte).
CASES = [(*form, False) for form in FORMS] + [(*form, True) for form in FORMS if form[1] == "e2m1"]


@pytest.mark.parametrize(("kind", "a_type", "b_type", "stype", "x", "packed"), CASES)
def test_block_scaled_mma_is_the_isa_on_every_selector(kind, a_type, b_type, stype, x, packed):
    k = isa.K_OF_KIND[kind]
    fp4 = a_type == "e2m1"
    rng = np.random.default_rng(k + x)
    a = rng.integers(-3, 4, (16, k)).astype(np.float64) / (2 if fp4 else 1)  # e2m1 holds 0.5 steps to 3
    b = rng.integers(-3, 4, (k, 8)).astype(np.float64) / (2 if fp4 else 1)
    c = rng.integers(-8, 9, (16, 8)).astype(np.float32)
    selectors = isa.SELECTORS[x]
    for bida, tida, bidb, tidb in itertools.product(*(selectors[n] for n in selectors)):
        if stype == "ue8m0":
            sfa_bytes = rng.integers(124, 131, (16, x)).astype(np.uint8)
            sfb_bytes = rng.integers(124, 131, (8, x)).astype(np.uint8)
            value = lambda byte: 2.0 ** (byte.astype(np.float64) - 127)  # noqa: E731
        else:  # ue4m3: 0x30..0x40 are 0.5..2 in e4m3 with the sign bit clear
            sfa_bytes = rng.integers(0x30, 0x41, (16, x)).astype(np.uint8)
            sfb_bytes = rng.integers(0x30, 0x41, (8, x)).astype(np.uint8)
            value = lambda byte: byte.view(ml_dtypes.float8_e4m3fn).astype(np.float64)  # noqa: E731
        regs = Registers()
        a_regs = np.zeros((32, 32 if fp4 else 16), TYPES[a_type])
        for (lane, i), (row, col) in isa_places("A", fp4).items():
            a_regs[lane, i] = a[row, col]
        b_regs = np.zeros((32, 16 if fp4 else 8), TYPES[b_type])
        for (lane, i), (row, col) in isa_places("B", fp4).items():
            b_regs[lane, i] = b[row, col]
        noise = rng.integers(0, 0x7F if stype == "ue4m3" else 255, (2, 32, 4)).astype(np.uint8)
        sa, sb = noise[0].copy(), noise[1].copy()
        for lane in range(32):
            row = isa.sf_a_supplier(lane, tida)
            if row is not None:
                sa[lane, isa.sf_bytes(x, bida)] = sfa_bytes[row]
            col = isa.sf_b_supplier(lane, tidb)
            if col is not None:
                sb[lane, isa.sf_bytes(x, bidb)] = sfb_bytes[col]
        d = np.zeros((32, 4), np.float32)
        for lane, i in itertools.product(range(32), range(4)):
            d[lane, i] = c[mma_sync_isa.c_place(lane, i)]
        if packed:  # two e2m1 a byte, the lower element in the low nibble
            a_regs, b_regs = (x.view(np.uint8)[:, 0::2] | (x.view(np.uint8)[:, 1::2] << 4) for x in (a_regs, b_regs))
        args = [
            regs.buffer("d", "float32", 4, d),
            regs.buffer("a", "float8_e4m3fn", a_regs.shape[1], a_regs),
            regs.buffer("b", "float8_e4m3fn", b_regs.shape[1], b_regs),
            regs.buffer("sa", "float8_e8m0fnu", 4, sa.view(TYPES[stype])),
            regs.buffer("sb", "float8_e8m0fnu", 4, sb.view(TYPES[stype])),
        ]
        what = f"mmabs_m16n8k{k}_{kind}_x{x}_f32_{a_type}_{b_type}_{stype}_a{bida}_{tida}_b{bidb}_{tidb}_ww"
        HELPERS(regs, what, args)
        scale_a = np.repeat(value(sfa_bytes), k // x, axis=1)  # (16, K)
        scale_b = np.repeat(value(sfb_bytes), k // x, axis=1).T  # (K, 8)
        want = ((a * scale_a) @ (b * scale_b) + c).astype(np.float32)
        got = np.zeros((16, 8), np.float32)
        for lane, i in itertools.product(range(32), range(4)):
            got[mma_sync_isa.c_place(lane, i)] = d[lane, i]
        np.testing.assert_array_equal(got, want, err_msg=str((bida, tida, bidb, tidb)))


def test_partially_passed_scales_are_the_selected_bytes():
    # a "p" operand points at the instruction's bytes themselves: the same result as the word with byte-id 2
    regs = Registers()
    a_regs = np.ones((32, 16), ml_dtypes.float8_e4m3fn)
    b_regs = np.ones((32, 8), ml_dtypes.float8_e4m3fn)
    word = np.full((32, 4), 127, np.uint8)
    word[:, 2] = 128  # scale 2 in byte 2
    results = []
    for passing, sa in (("ww", word), ("pw", word[:, 2:3].copy())):
        d = np.zeros((32, 4), np.float32)
        args = [
            regs.buffer("d", "float32", 4, d),
            regs.buffer("a", "float8_e4m3fn", 16, a_regs),
            regs.buffer("b", "float8_e4m3fn", 8, b_regs),
            regs.buffer("sa", "float8_e8m0fnu", sa.shape[1], sa.view(ml_dtypes.float8_e8m0fnu)),
            regs.buffer("sb", "float8_e8m0fnu", 4, word.view(ml_dtypes.float8_e8m0fnu)),
        ]
        HELPERS(regs, f"mmabs_m16n8k32_mxf8f6f4_x1_f32_e4m3_e4m3_ue8m0_a2_0_b0_0_{passing}", args)
        results.append(d.copy())
    np.testing.assert_array_equal(results[0], results[1])
    assert (results[0] == 64.0).all()  # 32 products of 1 * 2 * 1


def test_undefined_selectors_and_forms_are_refused():
    regs = Registers()
    z = np.zeros((32, 16), ml_dtypes.float8_e4m3fn)
    args = [
        regs.buffer("d", "float32", 4, np.zeros((32, 4), np.float32)),
        regs.buffer("a", "float8_e4m3fn", 16, z),
        regs.buffer("b", "float8_e4m3fn", 8, z[:, :8].copy()),
        regs.buffer("s", "float8_e8m0fnu", 4, np.zeros((32, 4), ml_dtypes.float8_e8m0fnu)),
        regs.buffer("t", "float8_e8m0fnu", 4, np.zeros((32, 4), ml_dtypes.float8_e8m0fnu)),
    ]
    with pytest.raises(SimulationError, match="selector values outside the ISA's table"):
        HELPERS(regs, "mmabs_m16n8k32_mxf8f6f4_x1_f32_e4m3_e4m3_ue8m0_a0_2_b0_0_ww", args)
    with pytest.raises(SimulationError, match="the ISA lists no such block-scaled form"):
        HELPERS(regs, "mmabs_m16n8k32_mxf8f6f4_x2_f32_e4m3_e4m3_ue8m0_a0_0_b0_0_ww", args)


def test_scale_decoding_is_the_formats():
    every = np.arange(256).astype(np.uint8)
    ue8m0 = decode_scales(every.view(ml_dtypes.float8_e8m0fnu), "ue8m0", "SF")
    np.testing.assert_array_equal(ue8m0[:255], 2.0 ** (np.arange(255) - 127.0))
    assert np.isnan(ue8m0[255])
    ue4m3 = decode_scales(every[:127].view(ml_dtypes.float8_e4m3fn), "ue4m3", "SF")
    exponent, mantissa = every[:127] >> 3, every[:127] & 7
    want = np.where(exponent == 0, mantissa / 8 * 2.0**-6, (1 + mantissa / 8) * 2.0 ** (exponent.astype(float) - 7))
    np.testing.assert_array_equal(ue4m3, want)
    with pytest.raises(SimulationError, match=r"a ue4m3 scale has its top bit set \(byte 0x80\)"):
        decode_scales(every[128:129].view(ml_dtypes.float8_e4m3fn), "ue4m3", "SF")


@pytest.mark.parametrize("operand", ["A", "B"])
def test_the_simulators_fp4_fragment_is_the_isa_table(operand):
    rows, cols = fp4_places(operand)
    for (lane, i), (row, col) in isa_places(operand, True).items():
        assert (int(rows[lane, i]), int(cols[lane, i])) == (row, col)
