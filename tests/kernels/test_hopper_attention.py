"""The Hopper attention forward (``examples/hopper_attention.py``): it simulates equal to the float32 numpy reference
of ``attention_common.py`` (O within the tolerance the dtypes give, the log-sum-exp too) for seq_q != seq_kv with
tails, fp16 and a batch of several K/V heads, and (with TIRX_LAYOUT_ATTENTION_MATRIX=1) for the whole matrix {seq 256, 384} x {head_dim 64,
128} x {causal, not} with two query heads per K/V head; the production build holds the instructions its roles fix
and assembles without spilling; and dropping any one wait or fence is a ``DataRace`` (or a missing completion) the
simulator names -- per role: the producer, each consumer warpgroup, the epilogue. (The example table's four entries
are also simulated by ``tests/tools/test_examples.py``.)"""

import re
import types

import numpy as np
import pytest
import tvm
import tvm_ffi

import tirx_layout.ops.mma.wgmma as lower_wgmma
import tirx_layout.ops.tma.lower as lower_tma
from tirx_layout import sim
from tirx_layout.ir.device_calls import called_helper
from tirx_layout.ops import find
from tirx_layout.ops.mbarrier import MBARRIER_WAIT
from tirx_layout.ops.mma import TILE_MMA_WAIT
from tirx_layout.ops.tma import TMA_STORE_WAIT
from tirx_layout.sim import DataRace
from tirx_layout.tools.kernel_report import find_nvcc, kernel_source, load_full_size
from tirx_layout.tools.measurement import measure_cuda
from tirx_layout.transform import build

from kernels import EXAMPLES, attention_matrix, example_module, simulate_attention

EXAMPLE = example_module("hopper_attention")
COMMON = EXAMPLE.COMMON
ARCH = "sm_90a"


def _check(problem, **kwargs):
    simulate_attention(EXAMPLE.hopper_attention(problem, **kwargs), problem, COMMON, ARCH)


@pytest.mark.parametrize(
    "problem, kwargs",
    [
        # more keys than queries, both with tails: causal bottom-right, the last Q tile 72 rows, the last K/V tile 10
        (COMMON.AttentionProblem(1, 2, 1, 200, 330, 64, causal=True), {}),
        # fp16, two batches, four query heads over two K/V heads, three stages, a non-default scale
        (COMMON.AttentionProblem(2, 4, 2, 128, 192, 128, "float16", scale=0.05), {"stages": 3}),
    ],
    ids=["causal_tails_seq_q_200_seq_kv_330", "fp16_batch2_gqa_stages3"],
)
def test_simulates_equal_to_numpy_with_the_log_sum_exp(problem, kwargs):
    _check(problem, **kwargs)


@pytest.mark.slow
@attention_matrix  # 8 kernels, ~12 min
@pytest.mark.parametrize("seq, head_dim, causal", EXAMPLE.MATRIX)
def test_the_whole_matrix_simulates_equal_to_numpy_and_assembles_without_spilling(seq, head_dim, causal):
    problem = COMMON.AttentionProblem(1, 2, 1, seq, seq, head_dim, causal=causal)
    _check(problem)
    if find_nvcc() is not None:  # (test_examples checks the table's half; this is the other)
        assert (
            measure_cuda(build(EXAMPLE.hopper_attention(problem), ARCH).imports[0].inspect_source(), ARCH).spill_bytes
            == 0
        )


@pytest.fixture(scope="module", params=[False, True], ids=["full", "causal"])
def production(request):
    make, arch = load_full_size(EXAMPLES)[f"hopper_attention_8192_d128{'_causal' if request.param else ''}"]
    assert arch == ARCH
    return build(make(), ARCH).imports[0].inspect_source()


def test_the_production_kernel_holds_what_its_roles_fix(production):
    body = kernel_source(production)
    (threads,) = set(re.findall(r"__global__ void __launch_bounds__\((\d+)\) attention_kernel", production))
    assert threads == "384"  # two consumer warpgroups and the producer's
    # one tensor map per global tensor the TMA reads or writes (V's transposed boxes, O's stores included)
    assert set(re.findall(r"const __grid_constant__ CUtensorMap (\w+)_tensormap", production)) == {"Q", "K", "V", "O"}
    # S = Q K^T: m64n64k16 SS from shared; O += P V: m64n128k16 RS, A from registers (head_dim 128, tile_kv 64)
    assert "wgmma_mma_m64n64k16_f32_bf16_bf16_ss" in body and "wgmma_mma_m64n128k16_f32_bf16_bf16_rs" in body
    # the ping-pong: bar.sync on the warpgroup's own barrier, bar.arrive on the other's
    assert "tirx_layout_sync_named_barrier_sync(" in body and "tirx_layout_sync_named_barrier_arrive(" in body
    assert "tcgen05" not in production


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")
def test_the_production_kernel_assembles_for_sm_90a_without_spilling(production):
    code = measure_cuda(production, ARCH)
    assert code.spill_bytes == 0
    assert code.registers <= 168  # 65536 registers over 384 threads


# ---- dropping a wait or a fence -----------------------------------------------------------------------------------
# Four K/V tiles through two stages (tile_kv 64): every stage is refilled, every phase turns over. In program order
# the kernel holds consumer 0, consumer 1, then the producer, each consumer: the Q wait, tile 0 (K wait, its wgmma
# wait 0), the loop (K wait, V wait, wait 1, wait 0), the last P V (V wait, wait 0) and the epilogue.

SMALL = COMMON.AttentionProblem(1, 2, 1, 256, 256, 64)


@pytest.fixture(scope="module")
def small():
    return EXAMPLE.hopper_attention(SMALL, tile_kv=64)


def _run(kernel):
    return sim.run(kernel, dict(COMMON.attention_inputs(SMALL)), ARCH)


def _without(kernel, is_dropped, nth=1):
    """``kernel`` with the ``nth`` statement (in program order) for which ``is_dropped`` holds left out (every one
    for ``nth=None``)."""
    seen = []

    def drop(stmt):
        if is_dropped(stmt):
            seen.append(stmt)
            if nth is None or len(seen) == nth:
                return tvm.tirx.Evaluate(0)
        return stmt

    body = tvm_ffi.structural_map(kernel.body, [(tvm.tirx.Evaluate, drop)], order="pre")
    assert len(seen) >= (nth or 1), "nothing to drop"
    return kernel.with_body(body)


def _mbarrier_wait_on(name):
    def found(stmt):
        op = find(stmt)
        return op is not None and op.spec is MBARRIER_WAIT and op.bar.source.name == name

    return found


def _mma_wait(pending):
    def found(stmt):
        op = find(stmt)
        return op is not None and op.spec is TILE_MMA_WAIT and op.pending == pending

    return found


def _schedule_barrier(stmt):
    helper = called_helper(stmt)
    return helper is not None and helper.what.startswith("named_barrier")


def test_the_small_kernel_runs_with_every_wait(small):
    result = _run(small)
    inputs = COMMON.attention_inputs(SMALL)
    want = COMMON.attention_reference(SMALL, inputs["Q"], inputs["K"], inputs["V"])
    np.testing.assert_allclose(result["LSE"], want["LSE"], rtol=2**-7, atol=2**-7)


_TMA_RACE = r"data race on shared {}\[{}\]: the wgmma.mma_async.m64n64k16.f32.bf16.bf16 \({}\) of warpgroup {}: {} "
_FRAGMENT_RACE = r"registers {}_flat\[0\] of thread {}: ordinary code {} them while the wgmma.mma_async.*\({}\) of "


@pytest.mark.parametrize(
    "dropped, nth, message",
    [
        # the producer refills stage 0 before the consumers released it (nor has it seen its first fill land)
        (_mbarrier_wait_on("empty_k"), 1, r"k_tile\[0\]: a store \(thread 256\) before it has seen the TMA load"),
        (_mbarrier_wait_on("empty_v"), 1, r"v_tile\[0\]: a store \(thread 256\) before it has seen the TMA load"),
    ],
    ids=["empty_k", "empty_v"],
)
def test_dropping_a_producer_wait_is_a_data_race(small, dropped, nth, message):
    with pytest.raises(DataRace, match=message):
        _run(_without(small, dropped, nth))


def _consumer_cases(w: int) -> list:
    """The waits of consumer warpgroup ``w`` (its occurrences in program order come after consumer 0's)."""
    thread = 128 * w
    cases = [
        # its wgmma reads Q before the TMA landed it
        (_mbarrier_wait_on("full_q"), 1 + w, _TMA_RACE.format("q_tile", 4096 * w, "SS", w, "A")),
        # S_j read by the softmax while its wgmma group is pending (wait 1 retires S, wait 0 of tile 0 too)
        (_mma_wait(1), 1 + w, _FRAGMENT_RACE.format("acc_s", thread, "reads", "SS")),
        (_mma_wait(0), 1 + 3 * w, _FRAGMENT_RACE.format("acc_s", thread, "reads", "SS")),
        # the loop's wait 0: P rewritten while the RS wgmma of P V still reads it
        (_mma_wait(0), 2 + 3 * w, _FRAGMENT_RACE.format("p", thread, "writes", "RS")),
    ]
    if w == 0:
        # K and V read before they landed (consumer 1's waits on the same phases follow consumer 0's, which
        # bar.arrive publishes to it: see test_consumer_1s_tile_waits_are_implied_by_the_schedule_barrier)
        cases += [
            (_mbarrier_wait_on("full_k"), 1, _TMA_RACE.format("k_tile", 0, "SS", 0, "B")),
            (_mbarrier_wait_on("full_k"), 2, _TMA_RACE.format("k_tile", 4096, "SS", 0, "B")),
            (_mbarrier_wait_on("full_v"), 1, _TMA_RACE.format("v_tile", 0, "RS", 0, "B")),
            (_mbarrier_wait_on("full_v"), 2, _TMA_RACE.format("v_tile", 4096, "RS", 0, "B")),
        ]
    return cases


_CONSUMER_IDS = ["full_q", "tile_mma_wait_1", "tile_mma_wait_0_tile_0", "tile_mma_wait_0_loop"]


@pytest.mark.parametrize(
    "dropped, nth, message",
    _consumer_cases(0),
    ids=[*_CONSUMER_IDS, "full_k_tile_0", "full_k_loop", "full_v_loop", "full_v_last"],
)
def test_dropping_a_wait_of_consumer_0_is_a_data_race(small, dropped, nth, message):
    with pytest.raises(DataRace, match=message):
        _run(_without(small, dropped, nth))


@pytest.mark.parametrize("dropped, nth, message", _consumer_cases(1), ids=_CONSUMER_IDS)
def test_dropping_a_wait_of_consumer_1_is_a_data_race(small, dropped, nth, message):
    with pytest.raises(DataRace, match=message):
        _run(_without(small, dropped, nth))


@pytest.mark.parametrize("name, nth", [("full_k", 3), ("full_v", 3)])
def test_consumer_1s_tile_waits_are_implied_by_the_schedule_barrier(small, name, nth):
    # consumer 1's bar.sync completes only after consumer 0 waited on the same K/V phase and then bar.arrive'd
    # (PTX ISA, bar: the arrivers' earlier accesses are performed relative to the waiters): without its own wait
    # consumer 1 is still ordered after the TMA's writes. The kernel keeps the waits, as FlashAttention-3 does, so
    # that the data never rest on the schedule: without the schedule barriers the same drop is a race.
    _run(_without(small, _mbarrier_wait_on(name), nth))
    unscheduled = _without(small, _schedule_barrier, None)
    _run(unscheduled)  # the schedule orders issue only: the kernel is correct without it
    with pytest.raises(DataRace, match=rf"{name[-1]}_tile\[\d+\]: the wgmma.* of warpgroup 1: B \(thread 128\)"):
        _run(_without(unscheduled, _mbarrier_wait_on(name), nth))


def _dropping_the_nth(module, attribute: str, helper: str, nth: int):
    """A stand-in for ``module.<attribute>`` (a helpers module) whose ``nth`` call of ``helper`` lowers to
    nothing; every other name is the module's."""
    real = getattr(module, attribute)
    calls = []

    def dropped(*args):
        calls.append(args)
        return tvm.tirx.Evaluate(0) if len(calls) == nth else getattr(real, helper)(*args)

    stand_in = types.SimpleNamespace(**{n: getattr(real, n) for n in dir(real) if not n.startswith("__")})
    setattr(stand_in, helper, dropped)
    return stand_in


@pytest.mark.parametrize("w", [0, 1])
@pytest.mark.parametrize(
    "nth, error, message",
    [
        # the lowering meets each consumer's tile_mma in program order: S_0, S_j, P V_j-1, P V_last
        (1, sim.SimulationError, r"of warpgroup {w} before any wgmma.fence of its warpgroup"),
        # S_j's D: the softmax wrote S (and P, O) since the last fence
        (
            2,
            DataRace,
            r"registers acc_s_flat\[0\] of thread {t}: ordinary code wrote them after the .*last wgmma.fence",
        ),
        # the last P V's D: O was rescaled since the last fence
        (
            4,
            DataRace,
            r"registers acc_o_flat\[0\] of thread {t}: ordinary code wrote them after the .*last wgmma.fence",
        ),
    ],
    ids=["first", "s_loop", "p_v_last"],
)
def test_dropping_a_wgmma_fence_is_reported(small, monkeypatch, w, nth, error, message):
    # (the fence tile_mma puts before the loop's P V is implied by the one before S_j, issued just before it with
    # no register access between: the simulator rightly reports nothing when it alone is dropped)
    monkeypatch.setattr(lower_wgmma, "wgmma", _dropping_the_nth(lower_wgmma, "wgmma", "fence", nth + 4 * w))
    with pytest.raises(error, match=message.format(w=w, t=128 * w)):
        _run(small)


@pytest.mark.parametrize(
    "dropped, nth, message",
    [
        # the epilogue reads O while the last P V group still writes it
        (_mma_wait(0), 3, _FRAGMENT_RACE.format("acc_o", 0, "reads", "RS")),
        (_mma_wait(0), 6, _FRAGMENT_RACE.format("acc_o", 128, "reads", "RS")),
    ],
    ids=["consumer_0_last_tile_mma_wait_0", "consumer_1_last_tile_mma_wait_0"],
)
def test_dropping_an_epilogue_wait_is_a_data_race(small, dropped, nth, message):
    with pytest.raises(DataRace, match=message):
        _run(_without(small, dropped, nth))


def test_dropping_the_epilogue_store_wait_is_reported(small):
    with pytest.raises(
        sim.SimulationError, match=r"the kernel ends while the TMA store issued by thread 0 still reads"
    ):
        _run(_without(small, lambda stmt: (lambda op: op is not None and op.spec is TMA_STORE_WAIT)(find(stmt))))


def test_dropping_the_epilogue_proxy_fence_is_a_data_race(small, monkeypatch):
    monkeypatch.setattr(lower_tma, "sync", _dropping_the_nth(lower_tma, "sync", "fence_proxy_async", 1))
    with pytest.raises(DataRace, match=r"q_tile\[0\]: the TMA store .* thread 0 wrote it with no fence.proxy.async"):
        _run(small)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tile_kv": 96}, r"tile_kv = 96 is not one of \(64, 128\)"),
        ({"stages": 1}, r"stages = 1; the ring needs at least 2"),
        # Q (128 x 128) and 4 stages of K and V (128 x 128 each), bf16: 32768 + 4 * 65536 bytes
        ({"tile_kv": 128, "stages": 4}, r"4 stages of K and V need 294912 bytes of shared memory; a CTA has 232448"),
    ],
)
def test_a_plan_that_cannot_run_is_refused_naming_the_numbers(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EXAMPLE.hopper_attention(COMMON.AttentionProblem(1, 2, 1, 256, 256, 128), **kwargs)


def test_a_problem_the_kernels_cannot_take_is_refused_by_its_check():
    with pytest.raises(ValueError, match=r"head_dim 96 is not one of \(64, 128\)"):
        EXAMPLE.hopper_attention(COMMON.AttentionProblem(1, 2, 1, 256, 256, 96))
