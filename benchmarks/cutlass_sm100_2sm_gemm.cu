// CUTLASS's sm100 2-SM warp-specialised GEMM at the configuration of examples/pipelined_gemm.py's 4096^3 bf16 CTA-pair
// kernel (cta_group=2), for benchmarks/bench_gemm.py to compare against: D = A @ B.T with A (M, K) row-major and B
// (N, K) K-major (CUTLASS's column-major K x N), bfloat16 in, float32 accumulator and output (no C operand), a
// 256 x 256 x 64 MMA tile on a pair of SMs (tcgen05.mma cta_group::2), cluster 2 x 1, 4 stages, CUTLASS's persistent
// tile scheduler, its TMA epilogue. Compiled only to a cubin (no host code runs): the explicit instantiation below
// makes nvcc emit the kernel.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/device_kernel.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

using namespace cute;

using ElementA = cutlass::bfloat16_t;
using ElementB = cutlass::bfloat16_t;
using ElementD = float;
using ElementAccumulator = float;
using LayoutA = cutlass::layout::RowMajor;     // A (M, K), K contiguous
using LayoutB = cutlass::layout::ColumnMajor;  // B (K, N) column-major = (N, K) K-major
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignA = 128 / cutlass::sizeof_bits<ElementA>::value;  // 16-byte accesses
constexpr int kAlignB = 128 / cutlass::sizeof_bits<ElementB>::value;
constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;

using MmaTileShape = Shape<_256, _256, _64>;  // the pair's tile
using ClusterShape = Shape<_2, _1, _1>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, MmaTileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    void, LayoutD, kAlignD,  // no C
    ElementD, LayoutD, kAlignD, cutlass::epilogue::TmaWarpSpecialized2Sm>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignA, ElementB, LayoutB, kAlignB,
    ElementAccumulator, MmaTileShape, ClusterShape, cutlass::gemm::collective::StageCount<4>,
    cutlass::gemm::KernelTmaWarpSpecialized2SmSm100>::CollectiveOp;

using GemmKernel =
    cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue, void>;

template __global__ void cutlass::device_kernel<GemmKernel>(CUTLASS_GRID_CONSTANT GemmKernel::Params const);

// The dynamic shared memory the kernel's launch asks for (sizeof its SharedStorage), which the cubin does not record:
// bench_gemm.py reads this variable's initialiser from the PTX.
__device__ const int cutlass_shared_storage_bytes = GemmKernel::SharedStorageSize;
