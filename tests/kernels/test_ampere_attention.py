"""examples/ampere_attention.py (FlashAttention-2's forward on sm_80) beyond what tests/tools/test_examples.py checks
of every example (built for its architecture, assembled without local memory, simulated equal to the reference,
each output element written once): the instructions it is made of, O and LSE against numpy each (and a wrong
reference caught), the ring's waits and the epilogue's barrier each needed (weakened, the simulator reports the
read of a tile in flight or of rows another thread stored), and the whole problem matrix (slow)."""

from __future__ import annotations

import os
import re
import shutil

import numpy as np
import pytest

from tirx_layout import sim
from tirx_layout.tools.kernel_report import kernel_source, load_example_module, report
from tirx_layout.transform import build

from kernels import EXAMPLES, example_module

FA2 = example_module("ampere_attention")
COMMON = FA2.COMMON
#: The environment variable that asks for the whole problem matrix (CI runs the main job's kernels only).
MATRIX_VARIABLE = "TIRX_LAYOUT_ATTENTION_MATRIX"
WHOLE_MATRIX = bool(os.environ.get(MATRIX_VARIABLE))
#: A small problem: 2 query heads over 1 K/V head, 128 queries over 192 keys (3 K/V tiles, 2 query tiles per head).
SMALL = COMMON.AttentionProblem(1, 2, 1, 128, 192, 64, "bfloat16", causal=True)


@pytest.mark.parametrize("name", sorted(FA2.PROBLEMS))
def test_each_kernel_is_cp_async_ldmatrix_mma_sync_and_quad_shuffles(name):
    problem, arch = FA2.PROBLEMS[name]
    kernel, _, _, entry_arch = FA2.KERNELS[name]
    assert entry_arch == arch
    cuda = build(kernel, arch).imports[0].inspect_source()
    body = kernel_source(cuda)
    ptx = {"bfloat16": "bf16", "float16": "f16"}[problem.dtype]
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{ptx}.{ptx}.f32" in cuda
    # per warp and K/V tile: S = 16 x 64 over head_dim (8 blocks x head_dim / 16 steps), O += P V (head_dim / 8
    # blocks x 4 steps of 16 keys)
    d = problem.head_dim
    assert len(re.findall(r"tirx_layout_mmasync_mma_\w+\(", body)) == 8 * (d // 16) + (d // 8) * 4
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in cuda  # Q and K
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in cuda  # V's rows into the B operand
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in cuda
    for pending in (0, 1, 2):
        assert f"cp.async.wait_group {pending};" in cuda
    masks = re.findall(r"__shfl_xor_sync\(\(uint\)4294967295, \w+\[\d\], (\d+), 32\)", body)
    # a row's max and sum over its lane quad, nothing wider: per reduction two masks for each of a thread's two rows
    assert sorted(masks) == ["1"] * 4 + ["2"] * 4
    # P: the C fragment's float32 pairs converted into the A fragment's 16-bit pairs, slot for slot (no shuffle)
    pair = {"bfloat16": "nv_bfloat162", "float16": "half2"}[problem.dtype]
    pairs = re.findall(rf"\*\({pair}\*\)\(pr_ptr \+ (\d+)\)", body)
    assert sorted(map(int, pairs)) == list(range(0, 32, 2))
    assert "exp2f(" in body and "logf(" in body
    assert "tcgen05" not in cuda and "wgmma" not in cuda and "local_view" not in body


def test_o_and_lse_each_match_numpy_and_a_wrong_reference_does_not():
    kernel = FA2.flash_attention(SMALL)
    inputs = COMMON.attention_inputs(SMALL)
    got = sim.run(kernel, [inputs["Q"], inputs["K"], inputs["V"]], "sm_80")
    want = COMMON.attention_reference(SMALL, inputs["Q"], inputs["K"], inputs["V"])
    check = COMMON.attention_expected(SMALL)
    for name in ("O", "LSE"):
        assert got[name].shape == want[name].shape
        np.testing.assert_allclose(
            got[name].astype(np.float32), want[name].astype(np.float32), rtol=check.rtol, atol=check.atol
        )
    # the check is not vacuous: without the causal mask (or with log2 for ln) the reference is another one
    unmasked = COMMON.attention_reference(SMALL._replace(causal=False), inputs["Q"], inputs["K"], inputs["V"])
    assert not np.allclose(got["O"].astype(np.float32), unmasked["O"].astype(np.float32), atol=check.atol)
    assert not np.allclose(got["LSE"], unmasked["LSE"], atol=check.atol)
    assert not np.allclose(got["LSE"] / np.log(2), want["LSE"], atol=check.atol)


def weakened(tmp_path, old: str, new: str):
    """The example module with statement ``old`` (exactly once in it) replaced by ``new``."""
    source = (EXAMPLES / "ampere_attention.py").read_text()
    statement = re.compile(rf"^(\s+){re.escape(old)}$", re.MULTILINE)  # the whole line: a statement, its comment
    assert len(statement.findall(source)) == 1
    (tmp_path / "ampere_attention.py").write_text(statement.sub(lambda m: m.group(1) + new, source))
    shutil.copy(EXAMPLES / "attention_common.py", tmp_path / "attention_common.py")
    return load_example_module(tmp_path / "ampere_attention.py")


@pytest.mark.parametrize(
    ("old", "new", "race"),
    [
        # Q's tile read before its group (the oldest of three) retired
        ("T.tile_copy_async_wait(2)  # Q has landed", "T.tile_copy_async_wait(3)", r"Qs\[\d+\]: a load by thread"),
        # waiting for none of K and V of tile t: S reads K's stage while its cp.async is in flight
        (
            "T.tile_copy_async_wait(1)  # K of tile t has landed (its V may be in flight)",
            "T.tile_copy_async_wait(3)",
            r"Ks\[\d+\]: a load by thread \d+ while the cp",
        ),
        # leaving V of tile t in flight: P V reads V's stage while its cp.async is in flight
        ("T.tile_copy_async_wait(2)", "T.tile_copy_async_wait(3)", r"Vs\[\d+\]: a load by thread \d+ while the cp"),
        # no barrier between the epilogue's stores into Q's tile and the 16-byte reads of its rows
        (
            "T.cuda.cta_sync()  # the tile's rows were written by other threads than the ones storing them",
            "T.evaluate(0)",
            r"Qs\[\d+\]: a load after a store by thread",
        ),
    ],
    ids=["Q-wait", "K-wait", "V-wait", "epilogue-barrier"],
)
def test_each_wait_and_the_epilogue_barrier_is_needed(tmp_path, old, new, race):
    module = weakened(tmp_path, old, new)  # the kernel as written simulates without a race: the test above
    expected = COMMON.attention_expected(SMALL)
    with pytest.raises(sim.DataRace, match=race):
        report("weakened", module.flash_attention(SMALL), expected, None, "sm_80")


@pytest.mark.slow
@pytest.mark.skipif(
    not WHOLE_MATRIX, reason=f"the whole problem matrix (16 kernels, ~8 min) runs with {MATRIX_VARIABLE}=1"
)
@pytest.mark.parametrize("name", sorted(FA2.FULL_MATRIX))
def test_the_whole_matrix_simulates_equal_to_numpy(name):
    problem = FA2.FULL_MATRIX[name]
    found = report(name, FA2.flash_attention(problem), COMMON.attention_expected(problem), None, "sm_80")
    assert found.ok, found.verdict()
    assert found.in_registers, found.local_memory
