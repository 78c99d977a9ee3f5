// CUTLASS's sm80 GEMM at the tiling of examples/ampere_gemm.py's ampere_gemm_float16_float32, for
// benchmarks/bench_mma_sync.py to compare against: D = A @ B.T with A (M, K) row-major and B (N, K) K-major (CUTLASS's
// column-major K x N), float16 in, float32 accumulator and output; a 64 x 64 x 64 CTA tile over 2 x 2 warps of
// 32 x 32 x 64, mma.sync m16n8k16 (Sm80 tensor-op), 3 stages (CUTLASS's MmaMultistage: cp.async + ldmatrix).
// Compiled only to a cubin (no host code runs): the explicit instantiation below makes nvcc emit the kernel.
#include <cutlass/gemm/device/gemm.h>

using CutlassSm80Gemm = cutlass::gemm::device::Gemm<
    cutlass::half_t, cutlass::layout::RowMajor,     // A (M, K)
    cutlass::half_t, cutlass::layout::ColumnMajor,  // B (K, N) column-major = (N, K) K-major
    float, cutlass::layout::RowMajor,               // C / D
    float,                                          // accumulator
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<64, 64, 64>,  // CTA tile
    cutlass::gemm::GemmShape<32, 32, 64>,  // warp tile: 2 x 2 warps
    cutlass::gemm::GemmShape<16, 8, 16>,   // mma.sync.m16n8k16
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>,
    3>;  // stages

template __global__ void cutlass::Kernel<CutlassSm80Gemm::GemmKernel>(CutlassSm80Gemm::GemmKernel::Params);
