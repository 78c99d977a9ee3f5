"""The Blackwell attention forward (``examples/attention.py``): values and log-sum-exp against the float32 numpy
reference of ``examples/attention_common.py`` over the issue's matrix (seq 256 and 384, head dim 64 and 128, causal
and not, two query heads per K/V head), one Q tile or two in flight; the production size builds and assembles
without local memory; and removing any one wait, or any one fence the lowering put around a wait or an arrive, of
any role is reported by the simulator."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tvm
import tvm_ffi

import tirx_layout.sim
from tirx_layout import sim
from tirx_layout.ops import find
from tirx_layout.ops.mbarrier import MBARRIER_WAIT
from tirx_layout.ops.tma.spec import TMA_STORE_WAIT
from tirx_layout.sim import DataRace
from tirx_layout.sim.tmem import TensorMemory
from tirx_layout.tools.kernel_report import local_memory, nvcc_assembles
from tirx_layout.transform import build

from kernels import attention_matrix, example_module, simulate_attention

EXAMPLE = example_module("attention")
COMMON = EXAMPLE.COMMON


def _check(problem, **kwargs):
    simulate_attention(EXAMPLE.attention(problem, **kwargs), problem, COMMON, "sm_100a")


@pytest.mark.slow
@attention_matrix  # 8 kernels, ~95 s
@pytest.mark.parametrize("seq, head_dim, causal", EXAMPLE.simulated_problems())
def test_the_issue_matrix_simulates_equal_to_numpy(seq, head_dim, causal):
    """All eight (KERNELS registers four of them for the example suite): about 95 s together on one core."""
    _check(COMMON.AttentionProblem(1, 2, 1, seq, seq, head_dim, causal=causal))


@pytest.mark.parametrize(
    "problem, kwargs",
    [
        # float16, one Q tile in flight, more keys than queries (the causal diagonal moves right by 64)
        (COMMON.AttentionProblem(1, 2, 1, 128, 192, 64, "float16", causal=True), {"q_tiles": 1}),
        # a tail of 40 keys and 72 queries, four query heads on two K/V heads, a softmax scale given, two stages
        (COMMON.AttentionProblem(1, 4, 2, 200, 232, 64, scale=0.3), {"stages": 2}),
    ],
)
def test_other_shapes_simulate_equal_to_numpy(problem, kwargs):
    _check(problem, **kwargs)


def test_the_lazy_rescale_threshold_keeps_a_growing_maximum_exact():
    # written here: row scores that grow by 4 (scaled, log2) per K/V tile stay under the threshold of 8 for one tile
    # and cross it on the next, so both the kept and the moved maximum are exercised; values checked as above
    problem = COMMON.AttentionProblem(1, 2, 1, 128, 256, 64, scale=1.0)
    expected = COMMON.attention_expected(problem)
    given = dict(expected.given)
    k = given["K"].astype(np.float32)
    k[0, 0, :, 0] = np.repeat(np.arange(4, dtype=np.float32), 64) * (4 / COMMON.LOG2E)  # + 4 per tile in log2
    q = given["Q"].astype(np.float32)
    q[..., 0] = 1.0
    given["K"], given["Q"] = k.astype(given["K"].dtype), q.astype(given["Q"].dtype)
    result = sim.run(EXAMPLE.attention(problem), given)
    want = COMMON.attention_reference(problem, given["Q"], given["K"], given["V"])
    np.testing.assert_allclose(
        result["O"].astype(np.float32), want["O"].astype(np.float32), rtol=expected.rtol, atol=expected.atol
    )
    np.testing.assert_allclose(result["LSE"], want["LSE"], rtol=expected.rtol, atol=expected.atol)


def test_the_correction_rescales_o_only_in_the_warps_one_of_whose_rows_moved(monkeypatch):
    # written here: Q is zero but for column 0 of rows 32..63 (warp 1), which is 1, and K's column 0 grows by 4
    # (scaled, log2) per K/V tile: rows 32..63 see their maximum move by more than 8 once (bfloat16 K: at tile 2 or
    # 3), every other row keeps 0. Counted: the correction warpgroup's tcgen05.ld of O (TMEM columns >= 128).
    problem = COMMON.AttentionProblem(1, 2, 1, 128, 256, 64, scale=1.0)
    expected = COMMON.attention_expected(problem)
    given = dict(expected.given)
    k = given["K"].astype(np.float32)
    k[0, 0, :, 0] = np.repeat(np.arange(4, dtype=np.float32), 64) * (4 / COMMON.LOG2E)
    q = np.zeros(given["Q"].shape, np.float32)
    q[:, :, 32:64, 0] = 1.0
    given["K"], given["Q"] = k.astype(given["K"].dtype), q.astype(given["Q"].dtype)
    loads = []  # (CTA-local warp, first column) of each tcgen05.ld / tcgen05.st of O by the correction warpgroup
    read, write = TensorMemory.read, TensorMemory.write

    def counted(original, kind):
        def access(self, lanes, cols, warp, *args, **kwargs):
            correction = warp // 4 == 2 and kwargs.get("kind", kind) == kind  # warps 8..11, not an MMA's access
            if correction and int(np.min(cols)) >= 2 * 64:
                loads.append((kind, warp % 4))
            return original(self, lanes, cols, warp, *args, **kwargs)

        return access

    monkeypatch.setattr(TensorMemory, "read", counted(read, "ld"))
    monkeypatch.setattr(TensorMemory, "write", counted(write, "st"))
    result = sim.run(EXAMPLE.attention(problem), given)
    want = COMMON.attention_reference(problem, given["Q"], given["K"], given["V"])
    np.testing.assert_allclose(
        result["O"].astype(np.float32), want["O"].astype(np.float32), rtol=expected.rtol, atol=expected.atol
    )
    # per CTA (two): the epilogue loads each Q tile's O in 2 chunks of 32 columns in every warp (4 per warp); the
    # correction loads and stores the 2 chunks of Q tile 0 in warp 1, once; every other rescale (3 K/V tiles x 2 Q
    # tiles x 4 warps) is skipped
    counts = {(kind, w): loads.count((kind, w)) for kind in ("ld", "st") for w in range(4)}
    assert counts == {
        ("ld", 0): 8,
        ("ld", 1): 12,
        ("ld", 2): 8,
        ("ld", 3): 8,
        **{("st", w): 4 * (w == 1) for w in range(4)},
    }


def test_the_atom_column_views_are_the_operand_tiles_bytes():
    # each TMA box writes a view (stage * atoms + a, rows, 64); the MMA reads the operand tile: same byte per element
    for dtype in ("bfloat16", "float16"):
        q_view, k_view, v_view = EXAMPLE.atom_views(dtype, 128, 64, 2, 3)
        for view, tile, shape in (
            (q_view, EXAMPLE.mma_shared_layout(dtype, "128B", (2, 128, 128)), (2, 128, 128)),
            (k_view, EXAMPLE.mma_shared_layout(dtype, "128B", (3, 64, 128)), (3, 64, 128)),
            (v_view, EXAMPLE.mma_shared_layout(dtype, "128B", (3, 128, 64), major="MN"), (3, 128, 64)),
        ):
            s, r, c = np.meshgrid(*[np.arange(e) for e in shape], indexing="ij")
            mine = np.asarray(tile.apply(s, r, c, shape=shape)["m"])
            if view is v_view:  # (stage, d, keys) -> (stage * 2 + d // 64, d % 64, keys)
                theirs = view.apply(s * 2 + r // 64, r % 64, c, shape=(6, 64, 64))["m"]
            else:  # (stage, rows, d) -> (stage * 2 + d // 64, rows, d % 64)
                theirs = view.apply(s * 2 + c // 64, r, c % 64, shape=(shape[0] * 2, shape[1], 64))["m"]
            np.testing.assert_array_equal(mine, np.asarray(theirs))


@pytest.mark.parametrize("causal", [False, True])
def test_the_production_size_builds_and_assembles_without_local_memory(causal):
    kernel = EXAMPLE.FULL_SIZE["attention_8192_d128" + ("_causal" if causal else "")]()
    source = build(kernel).imports[0].inspect_source()
    # 448 threads, and one CTA per SM (its shared memory is more than half a CTA's): ptxas may give each thread 144
    assert set(re.findall(r"__launch_bounds__\((\d+), 1\)", source)) == {"448"}
    assembled = nvcc_assembles(source)
    if assembled is not None:
        assert assembled[0], assembled[1]
        assert not any(local_memory(assembled[1]).values()), assembled[1]


def test_budgets_that_do_not_fit_are_refused_naming_the_numbers():
    problem = COMMON.AttentionProblem(1, 2, 1, 8192, 8192, 128)
    with pytest.raises(ValueError, match=r"5 K/V stages of 64 x 128 bfloat16 need 240888 bytes .* has 232448"):
        EXAMPLE.attention(problem, stages=5)
    with pytest.raises(ValueError, match=r"block_n = 96"):
        EXAMPLE.attention(problem, block_n=96)
    with pytest.raises(ValueError, match=r"need 640 TMEM columns; an SM has 512"):
        EXAMPLE.budget(problem, 192, 1, 2)


# ---- every wait and fence of every role is needed ----------------------------------------------------------------

#: Four K/V tiles of 64 through three stages (stage 0 refilled), two Q tiles: every barrier turns over.
SMALL = COMMON.AttentionProblem(1, 2, 1, 256, 256, 64)


@pytest.fixture(scope="module")
def small():
    return EXAMPLE.attention(SMALL)


@pytest.fixture(scope="module")
def small_inputs():
    return COMMON.attention_expected(SMALL).given


@pytest.fixture(scope="module")
def moving_inputs(small_inputs):
    """SMALL's inputs with every row's maximum moving by 16 (scaled, log2) on each K/V tile: Q's column 0 is 1 and
    K's grows by 16 / (scale log2 e) per tile of 64 keys, so no warp of the correction skips its rescale."""
    given = dict(small_inputs)
    q, k = given["Q"].astype(np.float32), given["K"].astype(np.float32)
    q[..., 0] = 1.0
    k[..., 0] = np.repeat(np.arange(4, dtype=np.float32), 64) * (16 / (SMALL.softmax_scale * COMMON.LOG2E))
    given["Q"], given["K"] = q.astype(given["Q"].dtype), k.astype(given["K"].dtype)
    return given


def test_the_small_kernel_runs_with_every_wait_and_fence(small, small_inputs):
    result = sim.run(small, small_inputs)
    want = COMMON.attention_reference(SMALL, small_inputs["Q"], small_inputs["K"], small_inputs["V"])
    np.testing.assert_allclose(result["LSE"], want["LSE"], rtol=2**-8)


def _without_wait(kernel, name: str, occurrence: int = 0):
    """``kernel`` with its ``occurrence``-th (program order) ``T.mbarrier_wait`` on buffer ``name`` dropped (or, for
    ``name="tma_store"``, its ``T.tma_store_wait``)."""
    seen = []

    def drop(stmt):
        op = find(stmt)
        if op is None:
            return stmt
        if (name == "tma_store" and op.spec is TMA_STORE_WAIT) or (
            op.spec is MBARRIER_WAIT and op.bar.source.name == name
        ):
            seen.append(stmt)
            if len(seen) - 1 == occurrence:
                return tvm.tirx.Evaluate(0)
        return stmt

    body = tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, drop)], order="pre")
    assert len(seen) > occurrence, f"no wait {occurrence} on {name}"
    return kernel.with_body(body)


def _helper(stmt):
    """The ``tirx_layout_<...>`` helper an ``Evaluate`` of the lowered code calls, and its first argument."""
    call = stmt.value if isinstance(stmt, tvm.tirx.Evaluate) else None
    if not isinstance(call, tvm.ir.Call) or len(call.args) < 1 or not isinstance(call.args[0], tvm.ir.StringImm):
        return None, None
    return call.args[0].value, call.args[1] if len(call.args) > 1 else None


def _on(argument, name: str) -> bool:
    return argument is not None and re.search(rf"\b{name}\[", str(argument)) is not None


def _without_fence(func, fence: str, barrier: str, occurrence: int = 0):
    """The lowered device function ``func`` with the ``occurrence``-th ``tcgen05.fence::<fence>_thread_sync`` that
    the lowering put after a wait on (``after``), or before an arrive on (``before``), mbarrier ``barrier`` dropped."""
    seen = []

    def visit(seq):
        stmts = list(seq.seq)
        for i, stmt in enumerate(stmts):
            name, _ = _helper(stmt)
            if name != f"tirx_layout_tcgen05_fence_{fence}":
                continue
            near = stmts[i - 1 : i] if fence == "after" else stmts[i + 1 : i + 3]
            if any(_helper(s)[0] in WAIT_OR_ARRIVE and _on(_helper(s)[1], barrier) for s in near):
                seen.append(stmt)
                if len(seen) - 1 == occurrence:
                    return tvm.tirx.SeqStmt([*stmts[:i], tvm.tirx.Evaluate(0), *stmts[i + 1 :]])
        return seq

    body = tvm_ffi.structural_map(func.body, [(tvm.tirx.SeqStmt, visit)], order="post")
    assert len(seen) > occurrence, f"no fence::{fence}_thread_sync {occurrence} at {barrier}"
    return func.with_body(body)


WAIT_OR_ARRIVE = ("tirx_layout_mbarrier_wait", "tirx_layout_mbarrier_arrive")


def _run_without_fence(monkeypatch, kernel, inputs, fence, barrier, occurrence=0):
    lower = tirx_layout.sim.lower

    def lowered(*args, **kwargs):
        host, functions = lower(*args, **kwargs)
        return host, [_without_fence(f, fence, barrier, occurrence) for f in functions]

    monkeypatch.setattr(tirx_layout.sim, "lower", lowered)
    return sim.run(kernel, inputs)


def _without_proxy_fence(func, occurrence: int = 0):
    """The lowered ``func`` with the ``occurrence``-th ``fence.proxy.async`` before a TMA store dropped."""
    seen = []

    def visit(seq):
        stmts = list(seq.seq)
        for i, stmt in enumerate(stmts):
            if _helper(stmt)[0] == "tirx_layout_sync_fence_proxy_async" and "tma_store" in str(stmts[i + 1 : i + 3]):
                seen.append(stmt)
                if len(seen) - 1 == occurrence:
                    return tvm.tirx.SeqStmt([*stmts[:i], tvm.tirx.Evaluate(0), *stmts[i + 1 :]])
        return seq

    body = tvm_ffi.structural_map(func.body, [(tvm.tirx.SeqStmt, visit)], order="post")
    assert len(seen) > occurrence, f"no fence.proxy.async {occurrence} before a TMA store"
    return func.with_body(body)


def _drop(monkeypatch, kernel, inputs, what: str, error, message: str):
    """Run ``kernel`` with one wait or fence dropped (``what``: ``wait:<barrier>:<n>``, ``wait:tma_store:<n>``,
    ``fence:<after|before>:<barrier>:<n>`` or ``proxy:<n>``) and expect the simulator to report ``message``."""
    kind, *rest = what.split(":")
    with pytest.raises(error, match=message):
        if kind == "wait":
            sim.run(_without_wait(kernel, rest[0], int(rest[1])), inputs)
        elif kind == "fence":
            _run_without_fence(monkeypatch, kernel, inputs, rest[0], rest[1], int(rest[2]))
        else:
            lower = tirx_layout.sim.lower

            def lowered(*args, **kwargs):
                host, functions = lower(*args, **kwargs)
                return host, [_without_proxy_fence(f, int(rest[0])) for f in functions]

            monkeypatch.setattr(tirx_layout.sim, "lower", lowered)
            sim.run(kernel, inputs)


_TMA_UNSEEN = r"before it has seen the TMA load into {0} issued by thread 384 complete"
_UNORDERED = r"an access by warp 13 after a store by warp {0}, not ordered"
_NO_FENCE_AFTER = r"a tcgen05.ld by warp {0} of a cell a tcgen05.mma .* missing: tcgen05.fence::after_thread_sync"


@pytest.mark.parametrize(
    "what, message",
    [
        # refilling stage 0 before the MMAs of K/V tile 0 are done: the refill is not ordered after the last load
        ("wait:kv_empty:0", r"k_tile\[0\]: a store \(thread 384\) " + _TMA_UNSEEN.format("k_tile")),
    ],
)
def test_dropping_the_producers_wait_is_caught(monkeypatch, small, small_inputs, what, message):
    _drop(monkeypatch, small, small_inputs, what, DataRace, message)


@pytest.mark.parametrize(
    "what, message",
    [
        ("wait:q_full:0", r"q_tile\[0\]: the tcgen05.mma.kind::f16 \(SS\) issued by thread 416 \(A\) .*"),
        ("wait:k_full:0", r"k_tile\[0\]: the tcgen05.mma.kind::f16 \(SS\) issued by thread 416 \(B\) .*"),
        ("wait:v_full:0", r"v_tile\[0\]: the tcgen05.mma.kind::f16 \(TS\) issued by thread 416 \(B\) .*"),
        # O[1] += P[1] V reads P[1] (TMEM, the A operand) before softmax warpgroup 1 (warp 4) has stored it
        ("wait:p_full:1", _UNORDERED.format(4)),
        # O[0] += P V before the correction warpgroup (warp 8) has rescaled O[0] (every row moves: moving_inputs)
        ("wait:o_ready:0", _UNORDERED.format(8)),
    ],
)
def test_dropping_a_wait_of_the_mma_warp_is_caught(monkeypatch, small, small_inputs, moving_inputs, what, message):
    """(The MMA warp's waits each carry a ``fence::after_thread_sync``, but the warp-scope ``T.tile_mma`` lowers to
    ``fence::before``, ``__syncwarp``, ``fence::after`` before its elected issue: that fence orders the MMA, so no
    single fence of this role is needed and none is dropped here.)"""
    _drop(monkeypatch, small, moving_inputs if "o_ready" in what else small_inputs, what, DataRace, message)


@pytest.mark.parametrize(
    "what, message",
    [
        # S loaded before the MMA writing it is seen complete
        ("wait:s_full:0", r"tcgen05.ld by warp 0 of a cell a tcgen05.mma .* missing: an mbarrier wait"),
        ("fence:after:s_full:0", _NO_FENCE_AFTER.format(0)),
        # P stored, then p_full arrived without fence::before_thread_sync: the MMA's read of P is unordered
        ("fence:before:p_full:0", _UNORDERED.format(0)),
    ],
)
def test_dropping_a_wait_or_fence_of_the_softmax_is_caught(monkeypatch, small, small_inputs, what, message):
    _drop(monkeypatch, small, small_inputs, what, DataRace, message)


@pytest.mark.parametrize(
    "what, message",
    [
        # O rescaled before the factor is posted (and before the MMA of the previous tile is seen complete)
        ("wait:scale_full:0", _UNORDERED.format(8)),
        ("fence:after:scale_full:0", _NO_FENCE_AFTER.format(8)),
        ("fence:before:o_ready:0", _UNORDERED.format(8)),
    ],
)
def test_dropping_a_wait_or_fence_of_the_correction_is_caught(monkeypatch, small, moving_inputs, what, message):
    # every row's maximum moves on every K/V tile: every warp makes its O round trip, whose ordering is checked
    _drop(monkeypatch, small, moving_inputs, what, DataRace, message)


@pytest.mark.parametrize(
    "what, message",
    [
        ("wait:stats_full:0", r"sum_s\[0\]: a load after a store by thread 256 and thread 0 with no barrier"),
        # O[0] read before its last O += P V: that MMA then writes over the load
        ("wait:o_done:0", r"an access by warp 13 an MMA's write after a load by warp 8"),
        ("fence:after:o_done:0", _NO_FENCE_AFTER.format(8)),
        ("wait:tma_store:0", r"staging\[0\]: a store by thread 256 while the TMA store issued by thread 256 still"),
        ("proxy:0", r"staging\[0\]: the TMA store issued by thread 256 reads it through the async proxy"),
    ],
)
def test_dropping_a_wait_or_fence_of_the_epilogue_is_caught(monkeypatch, small, small_inputs, what, message):
    _drop(monkeypatch, small, small_inputs, what, DataRace, message)
