"""Block-scaled ``T.tile_mma`` (``kind::mxf8f6f4.block_scale.scale_vec::1X``): the instruction descriptors and
scale-factor addresses of every K step against the ISA's block-scaled descriptor table (encoded here, not by
``hw/tcgen05_mma.py``; facts note §3.2, §5), nvcc assembly, a simulated GEMM equal to numpy's
``(A * 2^(sfa-127)) @ (B * 2^(sfb-127)).T``, and every refusal."""

import re

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi

from tirx_layout import sim
from tirx_layout.ir.op_calls import op_call, read_op_call
from tirx_layout.ir.rewrite import walk
from tirx_layout.ops import find
from tirx_layout.ops.context import OpContext
from tirx_layout.ops.mma import TILE_MMA
from tirx_layout.tools.kernel_report import kernel_source, nvcc_assembles
from tirx_layout.transform import build

from kernels import parse

E4M3, E5M2 = 0, 1  # A/B type codes of the block-scaled table


def isa_block_scaled_idesc(a_code, b_code, m, n, sfa_id, sfb_id):
    """ISA "Instruction descriptor" for .kind::mxf8f6f4: SF B id at 4-5, A type 7-9, B type 10-12, N >> 3 at 17-22,
    scale type UE8M0 = 1 at 23, M >> 7 at 27-28, SF A id at 29-30."""
    return sfb_id << 4 | a_code << 7 | b_code << 10 | (n >> 3) << 17 | 1 << 23 | (m >> 7) << 27 | sfa_id << 29


def test_the_encoder_reproduces_the_facts_note_worked_value():
    assert isa_block_scaled_idesc(E4M3, E4M3, 128, 112, 2, 2) == 0x489C0020


GEMM = """
@T.prim_func
def k(A: T.Buffer((128, K), "ADT"), B: T.Buffer((112, K), "BDT"),
      SA: T.Buffer((128, KB), "SDT"), SB: T.Buffer((128, KB), "SDT"), D: T.Buffer((128, 112), "DDT")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, K), "ADT", layout=mma_shared_layout("ADT", "128B", (128, K)), align=1024)
    Bs = T.alloc_shared((112, K), "BDT", layout=mma_shared_layout("BDT", "128B", (112, K)), align=1024)
    sas = T.alloc_shared((128, KB), "SDT"SAS_LAYOUT)
    sbs = T.alloc_shared((128, KB), "SDT")
    acc = T.alloc_tmem((128, 112), "DDT", layout=tmem_datapath_layout("D", 128, 112))
    sfa = T.alloc_tmem((128, KB), "SDT", layout=SFA_LAYOUT, within=acc)
    sfb = T.alloc_tmem((128, KB), "SDT", layout=mma_scale_factor_layout(128, KB, column=SFB_COLUMN), within=acc)
    out = T.alloc_local((128, 112), "DDT", layout=wg_local_layout(112))
    T.tile_copy(As, A)
    T.tile_copy(Bs, B)
    T.tile_copy(sas, SA)
    T.tile_copy(sbs, SB)
    T.tile_copy(sfa, sas)
    T.tile_copy(sfb, sbs)
    T.tile_mma(acc, As, Bs, SCALES)
    T.tile_copy(out, acc, "warpgroup")
    T.tile_copy(D, out, "warpgroup")
"""


def gemm_text(k=128, a="float8_e4m3fn", b="float8_e5m2", d="float32", scale="float8_e8m0fnu", **replace):
    fields = {
        "SFA_LAYOUT": "mma_scale_factor_layout(128, KB, column=112)",
        "SFB_COLUMN": str(112 + 4 * (k // 128)),
        "SCALES": "scale_a=sfa, scale_b=sfb[0:112, 0:KB]",
        "SAS_LAYOUT": "",
        **replace,
    }
    text = GEMM
    for key, value in fields.items():
        text = text.replace(key, value)
    return (
        text.replace("KB", str(k // 32))
        .replace("K", str(k))
        .replace("ADT", a)
        .replace("BDT", b)
        .replace("DDT", d)
        .replace("SDT", scale)
    )


def test_every_k_step_reads_its_k_block_through_the_sf_ids_and_the_scale_addresses():
    # K = 256: eight K steps; K-blocks 0-3 in bytes 0-3 of columns 112..115 (A) / 120..123 (B), 4-7 four columns on.
    cuda = build(parse(gemm_text(k=256))).imports[0].inspect_source()
    body = kernel_source(cuda)
    calls = re.findall(
        r"mma_mxf8f6f4_ss\(acc_taddr, (?:\(a_desc \+ \(uint64_t\)(\d+)ULL\)|a_desc), "
        r"(?:\(b_desc \+ \(uint64_t\)(\d+)ULL\)|b_desc), "
        r"\(uint\)(\d+), \(acc_taddr \+ \(uint\)(\d+)\), \(acc_taddr \+ \(uint\)(\d+)\), "
        r"\(uint\)(\d)\)",
        body,
    )
    # 128 x 256 + 112 x 256 fp8 operands (61440 bytes: the dynamic shared pool): As at the first 1024-byte boundary
    # after the kernel's small shared buffers, Bs 32768 bytes later
    assert "a_desc = tirx_layout_tcgen05_smem_descriptor((&(((__nv_fp8_e4m3*)shared_pool_ptr)[1024])), " in body
    assert "b_desc = tirx_layout_tcgen05_smem_descriptor((&(((__nv_fp8_e5m2*)shared_pool_ptr)[33792])), " in body
    want = []
    for s in range(8):
        idesc = isa_block_scaled_idesc(E4M3, E5M2, 128, 112, s % 4, s % 4)
        # 128B K-major fp8: 128 K elements per atom row; steps 32 bytes apart, the second atom after all rows.
        # Each step adds its start (in the descriptor's 16-byte units) to the descriptor made once; step 0 adds none.
        start_a, start_b = (s % 4) * 32 + (s // 4) * 128 * 128, (s % 4) * 32 + (s // 4) * 112 * 128
        want.append(
            (
                str(start_a >> 4) if s else "",
                str(start_b >> 4) if s else "",
                str(idesc),
                str(112 + 4 * (s // 4)),
                str(120 + 4 * (s // 4)),
                "0" if s == 0 else "1",
            )
        )
    assert calls == want
    assembled = nvcc_assembles(cuda)
    assert assembled is None or assembled[0], assembled


def test_the_helper_is_the_block_scaled_ptx_form():
    cuda = build(parse(gemm_text())).imports[0].inspect_source()
    assert "tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X [%0], %1, %2, %3, [%4], [%5], p;" in cuda


@pytest.mark.parametrize(
    ("k", "a", "b"), [(128, "float8_e4m3fn", "float8_e4m3fn"), (256, "float8_e5m2", "float8_e4m3fn")]
)
def test_block_scaled_gemm_simulates_equal_to_numpy(k, a, b):
    rng = np.random.default_rng(k)
    av = rng.integers(-8, 9, (128, k)).astype(getattr(ml_dtypes, a))
    bv = rng.integers(-8, 9, (112, k)).astype(getattr(ml_dtypes, b))
    sa = rng.integers(120, 135, (128, k // 32)).astype(np.uint8)
    sb = rng.integers(120, 135, (128, k // 32)).astype(np.uint8)
    inputs = {"A": av, "B": bv, "SA": sa.view(ml_dtypes.float8_e8m0fnu), "SB": sb.view(ml_dtypes.float8_e8m0fnu)}
    result = sim.run(parse(gemm_text(k=k, a=a, b=b)), inputs)
    scale_a = np.repeat(2.0 ** (sa.astype(np.float64) - 127), 32, axis=1)
    scale_b = np.repeat(2.0 ** (sb[:112].astype(np.float64) - 127), 32, axis=1)
    want = (av.astype(np.float64) * scale_a) @ (bv.astype(np.float64) * scale_b).T
    np.testing.assert_allclose(result["D"], want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
    assert (result.writes["D"] == 1).all()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (gemm_text(a="float16", b="float16"), r"no tcgen05.mma kind multiplies A float16 by B float16 with scale"),
        (
            gemm_text(d="float16"),
            r"kind mxf8f6f4: the accumulator must be one of \['float32'\], got float16",
        ),
        (
            gemm_text(scale="uint8"),
            r"scale_a.* \(sfa\) must be float8_e8m0fnu, got uint8|scale_a of tile_mma holds float8_e8m0fnu",
        ),
        (
            # K-blocks a column apart and row groups a byte apart: tcgen05.cp copies it, the MMA cannot read it
            gemm_text(
                SFA_LAYOUT="TileLayout(S[(4, 32, KB):(1@TCol, 1@TLane, 4@TCol)] + R[4:32@TLane] + 448@TCol)",
                SAS_LAYOUT=", layout=TileLayout(S[(4, 32, KB):(1, 16, 4)])",
            ),
            r"scale_a's layout .*row 32, K-block 0 sits on lanes \[0, 32, 64, 96\], byte column\(s\) \[449\]; .*"
            r"byte 452 \(byte 0 of column 112 \+ r // 32\)",
        ),
        (gemm_text(SCALES="scale_a=sfa, scale_b=sfb"), r"T.tile_mma's scale_b is a \(112, K/32\) = \(112, 4\) region"),
    ],
)
def test_refusals(text, match):
    with pytest.raises(ValueError, match=match):
        build(parse(text))


def test_block_scaled_m64_is_refused():
    text = gemm_text().replace("(128, 112)", "(64, 112)").replace('"D", 128, 112', '"F", 64, 112')
    text = text.replace("(128, 128)", "(64, 128)").replace("(128, K)", "(64, K)")
    text = text.replace('"warpgroup")\n    T.tile_copy(D', '"warpgroup")\n    T.evaluate(0)  #')
    func = parse(text)
    (mma,) = [call for call in _calls(func) if call.spec is TILE_MMA]
    with pytest.raises(
        ValueError, match=r"with scale factors \(block-scaled\): kind mxf8f6f4 .*M in \(128,\), got M=64"
    ):
        TILE_MMA.resolve(mma, OpContext(func))


def test_one_scale_operand_alone_is_refused():
    with pytest.raises((ValueError, tvm.error.DiagnosticError), match=r"T.tile_mma has scale_a but no scale_b"):
        parse(gemm_text(SCALES="scale_a=sfa"))
    # The op written without TVMScript's check (its scale_b pair dropped from the call): the build refuses it too,
    # by the same rule.
    func = parse(gemm_text())

    def drop_scale_b(call):
        if not call.op.same_as(TILE_MMA.op):
            return call
        required, named = read_op_call(call).split(3)
        del named["scale_b"]
        return op_call(call.op, required, named)

    broken = func.with_body(tvm_ffi.structural_map(func.body, [(tvm.ir.Call, drop_scale_b)], order="post"))
    with pytest.raises(ValueError, match=r"T.tile_mma has scale_a but no scale_b: a block-scaled MMA"):
        build(broken)


def _calls(func) -> list:
    found = []
    walk(func.body, [(tvm.tirx.Evaluate, lambda stmt: found.append(find(stmt)) if find(stmt) else None)])
    return found


TS_GEMM = """
@T.prim_func
def k(A: T.Buffer((128, 128), "float8_e4m3fn"), B: T.Buffer((112, 128), "float8_e4m3fn"),
      SA: T.Buffer((128, 4), "float8_e8m0fnu"), SB: T.Buffer((128, 4), "float8_e8m0fnu"),
      D: T.Buffer((128, 112), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, 128), "float8_e4m3fn")
    Bs = T.alloc_shared((112, 128), "float8_e4m3fn", layout=mma_shared_layout("float8_e4m3fn", "128B", (112, 128)), align=1024)
    sas = T.alloc_shared((128, 4), "float8_e8m0fnu")
    sbs = T.alloc_shared((128, 4), "float8_e8m0fnu")
    acc = T.alloc_tmem((128, 112), "float32", layout=tmem_datapath_layout("D", 128, 112))
    at = T.alloc_tmem((128, 128), "float8_e4m3fn", layout=tmem_datapath_layout("D", 128, 128))
    sfa = T.alloc_tmem((128, 4), "float8_e8m0fnu", layout=mma_scale_factor_layout(128, 4, column=112), within=acc)
    sfb = T.alloc_tmem((128, 4), "float8_e8m0fnu", layout=mma_scale_factor_layout(128, 4, column=116), within=acc)
    out = T.alloc_local((128, 112), "float32", layout=wg_local_layout(112))
    T.tile_copy(As, A)
    T.tile_copy(Bs, B)
    T.tile_copy(sas, SA)
    T.tile_copy(sbs, SB)
    T.tile_copy(at, As)
    T.tile_copy(sfa, sas)
    T.tile_copy(sfb, sbs)
    T.tile_mma(acc, at, Bs, scale_a=sfa, scale_b=sfb[0:112, 0:4])
    T.tile_copy(out, acc, "warpgroup")
    T.tile_copy(D, out, "warpgroup")
"""


def test_a_from_tensor_memory_uses_the_ts_helper_and_simulates_equal_to_numpy():
    # A (128, 128) fp8 in TMEM, four per 32-bit column: K step s reads columns 8 s .. 8 s + 7 (32 bytes per row).
    kernel = parse(TS_GEMM)
    body = kernel_source(build(kernel).imports[0].inspect_source())
    steps = re.findall(
        r"mma_mxf8f6f4_ts\(acc_taddr, (\(at_taddr \+ \(uint\)(\d+)\)|at_taddr), .*?\(uint\)(\d+), \(acc_taddr", body
    )
    assert [(int(col or 0), int(idesc)) for _, col, idesc in steps] == [
        (8 * s, isa_block_scaled_idesc(E4M3, E4M3, 128, 112, s, s)) for s in range(4)
    ]
    rng = np.random.default_rng(3)
    a = rng.integers(-8, 9, (128, 128)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.integers(-8, 9, (112, 128)).astype(ml_dtypes.float8_e4m3fn)
    sa, sb = (rng.integers(124, 131, (128, 4)).astype(np.uint8) for _ in range(2))
    scales = {"SA": sa.view(ml_dtypes.float8_e8m0fnu), "SB": sb.view(ml_dtypes.float8_e8m0fnu)}
    result = sim.run(kernel, {"A": a, "B": b, **scales})
    scale_a = np.repeat(np.exp2(sa.astype(np.float64) - 127), 32, axis=1)
    scale_b = np.repeat(np.exp2(sb[:112].astype(np.float64) - 127), 32, axis=1)
    want = (a.astype(np.float64) * scale_a) @ (b.astype(np.float64) * scale_b).T
    np.testing.assert_allclose(result["D"], want, rtol=1e-6, atol=1e-6 * np.abs(want).max())
