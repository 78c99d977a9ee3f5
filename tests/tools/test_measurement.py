"""The kernel memory-instruction analysis: measured in the simulator, and in agreement with the static bank model."""

import re

import pytest
import tvm

from tirx_layout import S, TileLayout
from tirx_layout.analysis import bank_conflicts, fragment_accesses
from tirx_layout.tools.kernel_report import find_nvcc, sample_input
from tirx_layout.tools.measurement import (
    kernel_accesses,
    launch_values,
    lower,
    measure_cuda,
    mma_issue_sequence,
    opcode,
    ptx_instructions,
    ptx_loop_around,
    summarize,
    tcgen05_counts,
)

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


# ---- the code of compiled kernels ------------------------------------------------------------------------------

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc is not installed")

# A kernel written by hand in CUDA with inline PTX, so that every count below is known from its text: one
# 4096-byte shared array, 2 tcgen05.mma, 1 commit, 1 ld (+ its wait), alloc / relinquish / dealloc, 3 tcgen05 fences.
HAND_WRITTEN = r"""
extern "C" __global__ void hand(float* out) {
  __shared__ alignas(1024) unsigned char smem[4096];
  unsigned int base = (unsigned int)__cvta_generic_to_shared(smem);
  unsigned int slot = base, bar = base + 8, operand = base + 1024;
  if (threadIdx.x < 32) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 32;" :: "r"(slot) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
  }
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  unsigned int taddr = *(volatile unsigned int*)smem;
  unsigned long long desc = (1ull << 46) | (1ull << 32) | (1ull << 16) | ((operand & 0x3FFFF) >> 4);
  if (threadIdx.x == 0) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n"
                 " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %1, %2, p;\n}"
                 :: "r"(taddr), "l"(desc), "r"(0x08100010u), "r"(0) : "memory");
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n"
                 " tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %1, %2, p;\n}"
                 :: "r"(taddr), "l"(desc + 2), "r"(0x08100010u), "r"(1) : "memory");
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(bar) : "memory");
  }
  asm volatile("{\n .reg .pred done;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
               " @!done bra WAIT_%=;\n}" :: "r"(bar) : "memory");
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
  unsigned int value;
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];" : "=r"(value) : "r"(taddr) : "memory");
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
  out[threadIdx.x] = __uint_as_float(value);
  __syncthreads();
  if (threadIdx.x < 32) asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 32;" :: "r"(taddr) : "memory");
}
"""


@needs_nvcc
def test_the_counts_of_a_hand_written_kernel_are_those_of_its_text():
    code = measure_cuda(HAND_WRITTEN, dynamic_shared_bytes=512)
    assert code.tcgen05 == {
        "mma": 2,
        "commit": 1,
        "ld": 1,
        "st": 0,
        "cp": 0,
        "shift": 0,
        "alloc": 1,
        "dealloc": 1,
        "relinquish_alloc_permit": 1,
        "fence": 3,
        "wait": 1,
    }
    assert (code.static_shared_bytes, code.shared_bytes) == (4096, 4096 + 512)
    assert code.registers > 0
    numbers = code.numbers()
    assert (numbers["tcgen05"], numbers["mma"], numbers["alloc"], numbers["fence"]) == (11, 2, 3, 3)
    # the issue sequence: after the CTA barrier that precedes the MMAs, through the commit
    ptx_issue = mma_issue_sequence(code.ptx, sass=False)
    assert [opcode(i).split(".")[1] for i in ptx_issue if opcode(i).startswith("tcgen05.")] == [
        "fence::after_thread_sync",
        "mma",
        "mma",
        "commit",
    ]
    if code.sass is not None:
        names = [opcode(i) for i in code.issue_sequence]
        assert sum(re.match(r"UTC\w*MMA$", n) is not None for n in names) == 2
        assert names[-1] == "UTCBAR" and "BAR.SYNC" not in " ".join(names)
        assert code.language == "SASS" and code.instructions is code.sass


@needs_nvcc
def test_nvcc_refusing_the_source_is_a_value_error():
    with pytest.raises(ValueError, match="nvcc"):
        measure_cuda('extern "C" __global__ void k() { this is not cuda; }')


def test_ptx_statements_of_inline_assembly_count_one_each():
    ptx = """
.visible .entry k(.param .u64 k_param_0)
{
    .reg .pred %p<2>;
    // begin inline asm
    {
 .reg .pred p;
 setp.ne.b32 p, %r3, 0;
 tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd1, %r2, p;
}
    // end inline asm
$L__BB0_1:
    @%p1 bra $L__BB0_1;
    ret;
}
"""
    assert ptx_instructions(ptx) == [
        "setp.ne.b32 p, %r3, 0",
        "tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd1, %r2, p",
        "@%p1 bra $L__BB0_1",
        "ret",
    ]


def test_an_unknown_tcgen05_kind_is_refused_not_dropped():
    with pytest.raises(ValueError, match="shiny"):
        tcgen05_counts(["tcgen05.shiny.cta_group::1 [%r1]"])


def test_the_issue_sequence_runs_to_the_end_without_a_commit_and_is_empty_without_an_mma():
    assert mma_issue_sequence(["BAR.SYNC 0x0", "UTCHMMA a", "EXIT"]) == ["UTCHMMA a", "EXIT"]
    assert mma_issue_sequence(["BAR.SYNC 0x0", "LDTM.x1 R4", "EXIT"]) == []


def test_launch_values_read_the_threads_a_kernel_launches():
    kernel = tvm.script.from_source(
        """
@T.prim_func
def k(A: T.Buffer((128,), "float32")):
    T.device_entry()
    tx = T.thread_id([128])
    A[tx] = A[tx] + T.float32(1)
"""
    )
    assert launch_values(lower(kernel, "tirx_layout")) == {"threadIdx.x": 128}


def test_the_loop_around_an_instruction_is_the_innermost_one_holding_it():
    ptx = """.visible .entry k()
{
	mov.u32 %r1, 0;
$L__BB0_1:
	add.s32 %r1, %r1, 1;
$L__BB0_2:
	ld.shared.u32 %r3, [%r4];
	setp.eq.s32 %p1, %r3, 0;
	@%p1 bra $L__BB0_2;
	{ tcgen05.mma.cta_group::1.kind::f16 [%r2], %rd1, %rd2, %r5, p; }
	@%p2 bra $L__BB0_1;
	ret;
}"""
    # the spin loop holds the load, the outer loop the MMA (and the spin loop inside it): 7 instructions
    assert ptx_loop_around(ptx, "ld.shared") == [
        "ld.shared.u32 %r3, [%r4]",
        "setp.eq.s32 %p1, %r3, 0",
        "@%p1 bra $L__BB0_2",
    ]
    assert len(ptx_loop_around(ptx, "tcgen05.mma")) == 6
    assert ptx_loop_around(ptx, "mov") == [] and ptx_loop_around(ptx, "cp.async") == []
