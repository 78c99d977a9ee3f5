"""The simulator dispatches a device helper by family, then by name (``sim/dispatch.py``, ``interpreter.EXECUTORS``):
every family has one executor, every helper the lowering can emit (``ops/helpers``) has a handler, an unknown one is
refused naming it, and the helpers that touch no tensor memory make none."""

from __future__ import annotations

import numpy as np
import pytest
import tvm

from tirx_layout import sim
from tirx_layout.hw.tcgen05 import CP_SHAPES, LD_ST_SHAPES
from tirx_layout.hw.wgmma import WgmmaInstruction
from tirx_layout.ir.device_calls import HELPER_FAMILIES, called_helper
from tirx_layout.ops.helpers import cluster, math, mbarrier, sync, tcgen05, tma, wgmma
from tirx_layout.sim.dispatch import HelperTable
from tirx_layout.sim.interpreter import EXECUTORS

from kernels import parse
from kernels.helper_calls import call, value

Z = tvm.tirx.const(0, "uint32")


def emitted() -> list:
    """One call of every helper the lowering emits (every shape and form the hardware tables list)."""
    calls = [mbarrier.init(Z), mbarrier.arrive(Z), mbarrier.expect_tx(Z, 8), mbarrier.arrive_expect_tx(Z, 8)]
    calls += [mbarrier.wait(Z), sync.elect(), sync.fence_proxy_async(), tma.store_wait()]
    for rank in tma.RANKS:
        calls += [tma.load(rank, Z, Z, Z, [Z] * rank, Z), tma.store(rank, Z, Z, [Z] * rank, Z)]
        calls += [tma.load_multicast(rank, Z, Z, Z, [Z] * rank, 3, Z)]
    calls += [cluster.arrive(), cluster.wait(), cluster.rank(), cluster.arrive_peer(Z, 1)]
    for dtype in cluster.DSMEM_TYPES:
        calls += [cluster.load(dtype, Z, 1), cluster.store(dtype, Z, 1, tvm.tirx.const(0, dtype))]
    calls += [tcgen05.alloc(Z, 32), tcgen05.dealloc(Z, 32), tcgen05.relinquish(), tcgen05.commit(Z)]
    calls += [tcgen05.simple(what) for what in ("wait_ld", "wait_st", "fence_before", "fence_after")]
    calls += [tcgen05.smem_descriptor(Z, 0)]
    for shape, facts in LD_ST_SHAPES.items():
        for kind in ("ld", "st"):
            for num in (1 << i for i in range(facts.max_num.bit_length())):
                calls += [tcgen05.ld_st(kind, shape, num, Z, Z, unpacked16=packed) for packed in (False, True)]
    calls += [tcgen05.cp(shape, Z, Z, 0, 0, "none") for shape in CP_SHAPES]
    for form_in_tmem in (False, True):
        calls += [tcgen05.mma(kind, Z, Z, 0, 0, Z, a_in_tmem=form_in_tmem) for kind in tcgen05.DENSE_KINDS]
        calls += [tcgen05.block_scaled_mma(Z, Z, 0, 0, Z, Z, Z, a_in_tmem=form_in_tmem)]
    calls += [wgmma.fence(), wgmma.commit_group(), wgmma.wait_group(0, Z), wgmma.wait_group(1, Z)]
    calls += [wgmma.keep(32, True, Z), wgmma.keep(16, False, Z)]
    calls += [wgmma.mma_ss(WgmmaInstruction("bfloat16", "bfloat16", "float32", 128, b_major="MN"), Z, 0, 0, Z)]
    calls += [wgmma.mma_rs(WgmmaInstruction("int8", "int8", "int32", 8, a_in_registers=True), Z, Z, 0, Z)]
    calls += [wgmma.smem_descriptor(Z, 0)]
    x, pair = tvm.tirx.const(1.0, "float32"), tvm.tirx.Broadcast(tvm.tirx.const(1.0, "float32"), 2)
    calls += [math.ex2_approx(x), math.add_f32x2(pair, pair), math.mul_f32x2(pair, pair)]
    calls += [math.fma_f32x2(pair, pair, pair)] + [math.cvt_pack(x, x, dtype) for dtype in math.CVT_PACKS]
    return calls


def test_every_family_has_one_executor():
    assert list(EXECUTORS) == list(HELPER_FAMILIES)
    assert all(isinstance(executor, HelperTable) and executor.family == f for f, executor in EXECUTORS.items())


def test_every_helper_the_lowering_emits_has_a_handler():
    missing = []
    for node in emitted():
        family, what, _ = called_helper(node)
        if not EXECUTORS[family].knows(what):
            missing.append(f"{family}: {what}")
    assert missing == []


def test_patterns_hand_their_named_groups_to_the_handler():
    handler, named = EXECUTORS["tcgen05"].find("ld_16x256b_x4_pack16b")
    assert handler.__name__ == "_ld_st"
    assert named == {"kind": "ld", "shape": "16x256b", "num": "4", "pack16": "_pack16b"}
    assert EXECUTORS["tcgen05"].find("mma_f8f6f4_ts")[1] == {"kind": "f8f6f4", "form": "ts"}
    assert EXECUTORS["tma"].find("store_3d")[1] == {"direction": "store", "rank": "3"}


@pytest.mark.parametrize(
    ("family", "what"),
    [
        ("tcgen05", "mbarrier_wait"),  # (names of before the families, and what no instruction is)
        ("tcgen05", "elect_sync"),
        ("tma", "load_6d"),
        ("sync", "elect_sync"),
        ("wgmma", "mma_m64n8k16_f32_bf16_ss"),
        ("wgmma", "keep_f16_x4"),
    ],
)
def test_a_helper_no_handler_knows_is_refused_naming_it(family, what):
    with pytest.raises(sim.SimulationError, match=f"does not implement the {family} helper {what}"):
        EXECUTORS[family](None, what, [])


def test_a_table_of_no_family_is_refused():
    with pytest.raises(ValueError, match="unknown helper family 'hopper'"):
        HelperTable("hopper", {})


def test_the_sync_helpers_and_the_descriptor_helper_make_no_tensor_memory():
    kernel = parse(f"""
@T.prim_func
def k(A: T.Buffer((2, 64), "uint64")):
    T.device_entry()
    bx = T.cta_id([2])
    tx = T.thread_id([64])
    {call("sync", "fence_proxy_async")}
    buf = T.alloc_shared((64,), "float32")
    A[bx, tx] = T.Cast("uint64", {value("sync", "elect", "uint32")}) + {
        value("tcgen05", "smem_descriptor", "uint64", "T.address_of(buf[0])", "T.uint64(1)")
    }
""")
    result = sim.run(kernel, [np.zeros((2, 64), np.uint64)])
    assert result.tmem == [None, None]  # neither CTA made tensor memory
    # lane 0 of each warp elected; the descriptor's start field is buf's address >> 4, 0 here
    assert result["A"][:, [0, 1, 32, 33]].tolist() == [[2, 1, 2, 1]] * 2
