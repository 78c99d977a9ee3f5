"""The kernel memory-instruction analysis: measured in the simulator, and in agreement with the static bank model."""

import pytest

from tirx_layout import S, TileLayout
from tirx_layout.analysis import bank_conflicts, fragment_accesses
from tirx_layout.tools.kernel_report import sample_input
from tirx_layout.tools.measurement import kernel_accesses, summarize

from kernels import example_kernels, example_module

COPIES = sorted(name for name in example_kernels() if name.startswith("copy_"))


def measured(kernel):
    return summarize(kernel_accesses(kernel, [sample_input(kernel)]))


def example(name: str):
    return example_kernels()[name][0]


@pytest.mark.parametrize("name", COPIES)
def test_fill_is_vectorised_and_conflict_free(name):
    summary = measured(example(name))
    fill_load, fill_store = summary[("load", "global")], summary[("store", "shared")]
    wide = 8 if name.startswith("copy_tcgen05") and name.endswith("matched") else 16
    assert fill_load.vector_bytes == fill_store.vector_bytes == (wide,)
    assert fill_store.conflict_free


@pytest.mark.parametrize("name", [n for n in COPIES if n.endswith("matched") or "wg_local" in n])
def test_matched_and_row_per_thread_staging_is_conflict_free_everywhere(name):
    summary = measured(example(name))
    assert summary[("load", "shared")].conflict_free and summary[("store", "shared")].conflict_free


def _fragment_and_staging(kernel):
    from tirx_layout.script import buffer_layouts

    layouts = {b.scope(): layout for b, layout in buffer_layouts(kernel).items()}
    return layouts["local"], layouts["shared"]


@pytest.mark.parametrize(
    "name", ["copy_warp_fp16_128B", "copy_tcgen05_16x64b_fp32_64B", "copy_wg_local_bf16_32B", "copy_warp_fp32_matched"]
)
def test_static_fragment_model_predicts_the_measured_wavefronts(name):
    kernel = example(name)
    fragment, staging = _fragment_and_staging(kernel)
    shape = tuple(int(e) for e in kernel.params[0].shape)
    dtype = str(kernel.params[0].dtype)
    predicted = [bank_conflicts(staging, dtype, a) for a in fragment_accesses(fragment, shape, dtype)]
    loads = measured(kernel)[("load", "shared")]
    assert sum(p.wavefronts for p in predicted) == loads.wavefronts
    assert sum(p.minimum for p in predicted) == loads.minimum_wavefronts
    assert len(predicted) == loads.warp_executions


def test_a_plain_row_major_staging_tile_shows_its_conflicts():
    tile_copies = example_module("tile_copies")
    original = tile_copies.staging_layout
    tile_copies.staging_layout = lambda dtype, swizzle, fragment: TileLayout(S[(128, 64)])
    try:
        kernel = tile_copies.round_trip_kernel("float16", "plain", "wg_local")
    finally:
        tile_copies.staging_layout = original
    loads = measured(kernel)[("load", "shared")]
    # each lane reads 16 bytes at the start of its own 128-byte row: 8 lanes per phase on the same 4 banks
    assert (loads.wavefronts, loads.minimum_wavefronts) == (32 * loads.warp_executions, 4 * loads.warp_executions)
