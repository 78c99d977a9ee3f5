// CUTLASS's sm90 warp-specialised cooperative GEMM at the configuration of examples/hopper_pipelined_gemm.py's 4096^3
// bf16 kernel, for benchmarks/bench_gemm.py to compare against: D = A @ B.T with A (M, K) row-major and B (N, K)
// K-major (CUTLASS's column-major K x N), bfloat16 in, float32 accumulator and output (no C operand), a 128 x 256 x 64
// CTA tile whose two consumer warpgroups take 64 rows each (wgmma m64n256k16), cluster 1 x 1, 4 stages, CUTLASS's
// persistent tile scheduler, its TMA epilogue. Compiled only to a cubin (no host code runs).
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
using LayoutA = cutlass::layout::RowMajor;
using LayoutB = cutlass::layout::ColumnMajor;
using LayoutD = cutlass::layout::RowMajor;
constexpr int kAlignA = 128 / cutlass::sizeof_bits<ElementA>::value;
constexpr int kAlignB = 128 / cutlass::sizeof_bits<ElementB>::value;
constexpr int kAlignD = 128 / cutlass::sizeof_bits<ElementD>::value;

using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_1, _1, _1>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    void, LayoutD, kAlignD, ElementD, LayoutD, kAlignD,
    cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;

using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlignA, ElementB, LayoutB, kAlignB,
    ElementAccumulator, TileShape, ClusterShape, cutlass::gemm::collective::StageCount<4>,
    cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;

using GemmKernel =
    cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue, void>;

template __global__ void cutlass::device_kernel<GemmKernel>(CUTLASS_GRID_CONSTANT GemmKernel::Params const);

// The dynamic shared memory the kernel's launch asks for (sizeof its SharedStorage), which the cubin does not record:
// bench_gemm.py reads this variable's initialiser from the PTX.
__device__ const int cutlass_shared_storage_bytes = GemmKernel::SharedStorageSize;
