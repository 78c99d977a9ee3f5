"""The copy plan is one set of formulas with two readers: LowerTileOps calls them with TIR variables, the cost model
with numpy arrays. On random copies the two evaluations must give the same addresses and guards everywhere."""

from __future__ import annotations

import random

import numpy as np
import pytest
import tvm

from tirx_layout import R, S, TileLayout, laneid
from tirx_layout.ops.copy.plan import FragmentCopy, MemoryCopy, RegisterCopy, plan_copy
from tirx_layout.ops.operands import FragmentOperand, MemoryOperand, operand
from tirx_layout.transform.infer_layouts import fragment_candidates, shared_candidates

from oracles.tir import evaluate

CASES = 40


def buffers(shape, dtype):
    glob = tvm.tirx.decl_buffer(shape, dtype, "A")
    tile = tvm.tirx.decl_buffer(shape, dtype, "tile", scope="shared")
    frag = tvm.tirx.decl_buffer(shape, dtype, "frag", scope="local")
    return glob, tile, frag


def whole(buffer):
    return buffer[tuple(slice(0, e) for e in buffer.shape)]


def random_plans(seed: int):
    rng = random.Random(seed)
    dtype = rng.choice(["float16", "float32"])
    threads = rng.choice([32, 64, 128])
    shape = (rng.randrange(20, 300),) if rng.random() < 0.2 else (rng.choice([8, 16, 32]), rng.choice([8, 16, 32, 40]))
    glob, tile, frag = buffers(shape, dtype)
    layouts = {
        tile: rng.choice(shared_candidates(shape, dtype)),
        frag: rng.choice(fragment_candidates(shape, dtype, threads)),
    }
    pairs = [(tile, glob), (frag, tile), (glob, frag)]
    scope = rng.choice(["cta", "warp"])
    return [
        plan_copy(operand(whole(d), layouts, "dst"), operand(whole(s), layouts, "src"), scope, threads)
        for d, s in pairs
    ], threads


def steps(plan) -> int:
    return plan.rounds if isinstance(plan, MemoryCopy) else plan.slots


def values(step) -> list:
    return [step.load.address, *(s.address for s in step.stores), step.active()]


def check_agreement(plan, threads: int, samples: int = 24, seed: int = 0):
    count = steps(plan)
    numeric = [
        np.broadcast_to(np.asarray(v), (count, threads))
        for v in values(plan.step(np.arange(count)[:, None], np.arange(threads)[None, :]))
    ]
    s, t = tvm.tirx.Var("s", "int32"), tvm.tirx.Var("t", "int32")
    symbolic = values(plan.step(s, t))
    rng = random.Random(seed)
    for _ in range(samples):
        k, tid = rng.randrange(count), rng.randrange(threads)
        active = bool(numeric[-1][k, tid])
        for n, (table, expr) in enumerate(zip(numeric, symbolic, strict=True)):
            if n < len(numeric) - 1 and not active:
                continue  # an inactive step's addresses are never used
            assert int(table[k, tid]) == evaluate(expr, {s: k, t: tid}), (plan, k, tid, n)


@pytest.mark.parametrize("seed", range(CASES))
def test_numpy_and_tir_evaluations_of_a_plan_agree(seed):
    plans, threads = random_plans(seed)
    assert [type(p) for p in plans] == [MemoryCopy, FragmentCopy, FragmentCopy]
    for plan in plans:
        check_agreement(plan, threads, seed=seed)


def test_replicas_on_both_sides_agree_too():
    glob, tile, frag = buffers((16, 8), "float32")
    layouts = {
        tile: TileLayout(S[(16, 8) : (8, 1)] + R[2:128]),
        frag: TileLayout(S[(16, 8) : (1 @ laneid, 1)] + R[2 : 16 @ laneid]),
    }
    into_replicated = plan_copy(operand(whole(tile), layouts, "dst"), operand(whole(glob), layouts, "src"), "cta", 32)
    assert len(into_replicated.step(0, 0).stores) == 2  # written at both replica places
    stored = plan_copy(operand(whole(glob), layouts, "dst"), operand(whole(frag), layouts, "src"), "cta", 32)
    assert stored.step(0, 17).guards  # lane 17 holds replica 1: guarded
    for plan in (into_replicated, stored):
        check_agreement(plan, 32, samples=64)


def test_the_operand_kinds_and_the_register_copy():
    _glob, tile, frag = buffers((32, 4), "float32")
    layouts = {frag: TileLayout(S[(32, 4) : (1 @ laneid, 1)])}
    assert isinstance(operand(whole(tile), layouts, "x"), MemoryOperand)
    assert isinstance(operand(whole(frag), layouts, "x"), FragmentOperand)
    other = tvm.tirx.decl_buffer((32, 4), "float32", "other", scope="local")
    spelled = {**layouts, other: TileLayout(S[(32, 4) : (1 @ laneid, 1)])}
    plan = plan_copy(operand(whole(other), spelled, "d"), operand(whole(frag), spelled, "s"), "cta", 32)
    assert isinstance(plan, RegisterCopy) and plan.v == 4 and plan.slots == 1
    # (a register copy between placements that differ, or a fragment wider than the kernel, never reaches a plan:
    # the copy's rules refuse it first, tests/transform/test_lower_tile_ops.py)
