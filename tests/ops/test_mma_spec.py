"""The specs of ``T.tile_mma`` and ``T.tile_mma_wait``: what they build, what a statement reads back as, the errors
for arguments no MMA takes, and the rules every target family applies (each stated once, in the spec)."""

import pytest
import tvm

from tirx_layout.ir.rewrite import walk
from tirx_layout.ops import find
from tirx_layout.ops.context import OpContext
from tirx_layout.ops.mma import TILE_MMA, TILE_MMA_WAIT
from tirx_layout.ops.mma.spec import mma_tiles

from kernels import parse

D = tvm.tirx.decl_buffer((2, 128, 64), "float32", "D", scope="tmem")
A = tvm.tirx.decl_buffer((128, 32), "float16", "A", scope="shared")
B = tvm.tirx.decl_buffer((64, 32), "float16", "B", scope="shared")
SF = tvm.tirx.decl_buffer((32, 16), "float8_e8m0fnu", "SF", scope="tmem")
BARS = tvm.tirx.decl_buffer((4,), "uint64", "bars", scope="shared")


def _read(call):
    return find(tvm.tirx.Evaluate(call))


def _calls(func) -> list:
    """The op calls of ``func``'s body, in program order."""
    found = []
    walk(func.body, [(tvm.tirx.Evaluate, lambda stmt: found.append(find(stmt)) if find(stmt) else None)])
    return found


def test_tile_mma_in_tvmscript_is_read_back_with_every_field():
    func = parse("""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([128])
    bars = T.alloc_shared((2,), "uint64")
    A = T.alloc_shared((128, 32), "float16")
    B = T.alloc_shared((64, 32), "float16")
    acc = T.alloc_tmem((2, 128, 64), "float32", layout=T.layout("S[(2, 128, 64):(64@TCol, 1@TLane, 1@TCol)]"))
    for s in range(2):
        T.tile_mma(acc[s, 0:128, 0:64], A, B[0:64, 16:32], accumulate=s > 0, barrier=bars[1], scope="warp")
""")
    (mma,) = _calls(func)
    assert mma.spec is TILE_MMA
    assert mma.d.source.name == "acc" and str(mma.d.region[0].min) == "s"
    assert [int(r.extent) for r in mma.a.region] == [128, 32]  # a whole buffer becomes its full region
    assert [int(r.min) for r in mma.b.region] == [0, 16]
    assert str(mma.accumulate) == "s > 0"
    assert mma.barrier.source.name == "bars" and int(mma.barrier.indices[0]) == 1
    assert (mma.scale_a, mma.scale_b, mma.scope, mma.wait) == (None, None, "warp", True)


def test_accumulate_takes_a_bool_an_integer_or_a_boolean_expression():
    assert bool(_read(TILE_MMA(D[0, 0:128, 0:64], A, B, True)).accumulate)
    x = tvm.tirx.Var("x", "int32")
    assert str(_read(TILE_MMA(D[0, 0:128, 0:64], A, B, x)).accumulate) == "x != 0"
    with pytest.raises(ValueError, match="accumulate must be a bool or a boolean expression, got 2"):
        TILE_MMA(D, A, B, 2)
    with pytest.raises(TypeError, match=r"accumulate must be a boolean expression, got .* float32"):
        TILE_MMA(D, A, B, tvm.tirx.const(1.0, "float32"))


def test_a_field_is_written_when_given_and_a_field_not_given_reads_as_its_default():
    bare = TILE_MMA(D[0, 0:128, 0:64], A, B)
    assert len(bare.args) == 3  # only the required regions
    mma = _read(bare)
    assert (bool(mma.accumulate), mma.barrier, mma.scale_a, mma.scope, mma.wait) == (False, None, None, "cta", True)
    given = TILE_MMA(D[0, 0:128, 0:64], A, B, False, scope="cta", wait=False, barrier=None)
    assert [str(a) for a in given.args[3::2]] == ['"accumulate"', '"scope"', '"wait"']  # None: absent
    assert _read(given).wait is False


def test_scale_factors_come_in_pairs():
    mma = _read(TILE_MMA(D, A, B, scale_a=SF, scale_b=SF))
    assert mma.scale_a.source.name == "SF" and mma.scale_b.source.name == "SF"
    with pytest.raises(ValueError, match=r"T\.tile_mma has scale_a but no scale_b: a block-scaled MMA takes both"):
        TILE_MMA(D, A, B, scale_a=SF)
    with pytest.raises(ValueError, match=r"T\.tile_mma has scale_b but no scale_a"):
        TILE_MMA(D, A, B, scale_b=SF)


def test_bad_operands_scopes_and_barriers_are_refused_when_the_op_is_built():
    with pytest.raises(
        ValueError, match=r"T.tile_mma: scope must be one of \['cta', 'warpgroup', 'warp', 'thread'\], got 'block'"
    ):
        TILE_MMA(D, A, B, scope="block")
    with pytest.raises(TypeError, match=r"T\.tile_mma: D must be a buffer or a region of one"):
        TILE_MMA(3, A, B)
    with pytest.raises(
        TypeError, match=r"barrier is an mbarrier, an element of a shared uint64 buffer .* got A\[0, 0\]"
    ):
        TILE_MMA(D, A, B, barrier=A[0, 0])
    with pytest.raises(TypeError, match="wait must be True or False"):
        TILE_MMA(D, A, B, wait=2)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'scale'"):
        TILE_MMA(D, A, B, scale=SF)


def test_the_shape_rule_reads_m_n_k_off_the_regions():
    assert mma_tiles(_read(TILE_MMA(D[1, 0:128, 0:64], A, B))) == (128, 64, 32)
    with pytest.raises(ValueError, match=r"D is \(M, N\), A \(M, K\), B \(N, K\); got D \(128, 64\), A \(128, 32\), B"):
        mma_tiles(_read(TILE_MMA(D[1, 0:128, 0:64], A, B[0:32, 0:32])))
    with pytest.raises(ValueError, match="takes 2-D tiles"):
        mma_tiles(_read(TILE_MMA(D, A, B)))


def test_tile_mma_wait_counts_its_pending_groups():
    assert _read(TILE_MMA_WAIT(3)).pending == 3 and _read(TILE_MMA_WAIT()).pending == 0
    assert len(TILE_MMA_WAIT().args) == 0
    with pytest.raises(ValueError, match=r"T.tile_mma_wait: pending must be in 0..7, got 8"):
        TILE_MMA_WAIT(8)
    with pytest.raises(TypeError, match="pending must be an integer constant"):
        TILE_MMA_WAIT(1.5)


HOPPER = """
@T.prim_func
def k():
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "ARCH"})})
    T.device_entry()
    tx = T.thread_id([128])
    A = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)), align=1024)
    B = T.alloc_shared((64, 32), "float16", layout=mma_shared_layout("float16", "64B", (64, 32)), align=1024)
    acc = T.alloc_local((64, 64), "float32", layout=wgmma_accumulator_layout(64))
    T.tile_mma(acc, A, B)
"""


@pytest.mark.parametrize(("arch", "family"), [("sm_90a", "wgmma"), ("sm_100a", "tcgen05")])
def test_the_target_picks_the_family_the_rules_and_the_lowering_are_of(arch, family):
    func = parse(HOPPER.replace("ARCH", arch))
    (mma,) = _calls(func)
    ctx = OpContext(func, decided=False)
    assert TILE_MMA.family(ctx) == family
    if family == "wgmma":
        record = TILE_MMA.resolve(mma, ctx)
        assert (record.m, record.n, record.k, record.warpgroups, record.instruction.shape) == (
            64,
            64,
            32,
            1,
            "m64n64k16",
        )
    else:  # on Blackwell D must be in tensor memory: the tcgen05 rules say so
        with pytest.raises(ValueError, match=r"T\.tile_mma's D must be in tensor memory; acc is in 'local'"):
            TILE_MMA.resolve(mma, ctx)


def test_a_target_with_no_tensor_core_mma_is_refused_naming_where_each_family_exists():
    func = parse(HOPPER.replace("ARCH", "sm_75"))
    (mma,) = _calls(func)
    with pytest.raises(
        ValueError, match=r"target sm_75 has no tensor-core MMA T.tile_mma lowers to: tcgen05 exists on .*; mmasync"
    ):
        TILE_MMA.resolve(mma, OpContext(func, decided=False))


def test_on_sm_80_the_mma_is_mma_sync_on_register_fragments():
    func = parse(HOPPER.replace("ARCH", "sm_80"))
    (mma,) = _calls(func)
    with pytest.raises(ValueError, match=r"T\.tile_mma's A \(A, 'shared'\) must be a register fragment on sm_80"):
        TILE_MMA.resolve(mma, OpContext(func, decided=False))
