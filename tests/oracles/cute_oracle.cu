// CuTe as an oracle (issue 34, point 7): CUTLASS's own builders, compiled on the host against the headers of the
// pinned nvidia-cutlass package, print what they compute for the cases tests/hw/test_cute_oracle.py compares with
// the project's encoders field by field. Nothing here runs on a GPU:
//
//   * shared-memory descriptors: UMMA::make_umma_desc and SM90::GMMA::make_gmma_desc, reached the way CuTe's MMA
//     atoms reach them (MakeTensor<smem_desc<Major>> over the operand split into one-instruction K blocks), for
//     operands tiled from CuTe's canonical atoms (UMMA::Layout_{K,MN}_*_Atom);
//   * instruction descriptors: UMMA::make_instr_desc;
//   * TMA: the arguments make_tma_copy hands cuTensorMapEncodeTiled, caught by defining that driver entry point
//     here (CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL makes CuTe call it by name; libcuda is never linked).
//
// Every line printed is one result, tab-separated, its kind first:
//   LAYOUT  bits major mode rows cols  byte offset of every element (row-major over (rows, cols)), swizzle applied
//   UMMA / GMMA  bits major mode rows cols kblock descriptor (hex)
//   IDESC   a b d M N a_major b_major descriptor (hex)
//   IDESC2  a b d M N a_major b_major descriptor (hex) of a 2x1SM (cta_group::2) atom, its MMA_Traits' idesc_
//   PAIR    M N K a_rows b_rows: the rows of A and of B one CTA of the pair holds (partition_shape_A/B of the
//           2x1SM atom's TiledMMA for thread-in-pair 0)
//   TMA     case data_type rank global_dim... global_strides... box_dim... element_strides... interleave swizzle
//           l2_promotion oob_fill
// On the host CuTe cannot turn a shared pointer into a shared-window address (cast_smem_ptr_to_uint prints an
// ERROR line and gives 0): every descriptor starts at shared byte 0, K block k at its offset from there.
//
// Cost: each (element width, majorness, swizzle, shape) is one instantiation of CuTe's layout algebra, the expensive
// part. Descriptors depend on the element type only through its width (make_umma_desc recasts to uint128_t), so one
// type per width stands for all of that width. The suite's sample is the default build; -DCUTE_ORACLE_SWEEP=1
// builds every case the project's own oracles cover.

#include <cstdio>
#include <cstdint>

#include <cuda.h>

#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>

using namespace cute;

// ---- TMA: the driver entry point make_tma_copy calls, recording its arguments ---------------------------------

static char const* current_tma_case = "?";

extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType data_type, cuuint32_t rank, void*,
                                           cuuint64_t const* dims, cuuint64_t const* strides, cuuint32_t const* box,
                                           cuuint32_t const* element_strides, CUtensorMapInterleave interleave,
                                           CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                           CUtensorMapFloatOOBfill oob) {
  printf("TMA\t%s\t%d\t%u", current_tma_case, int(data_type), rank);
  for (cuuint32_t i = 0; i < rank; ++i) printf("\t%llu", (unsigned long long)dims[i]);
  for (cuuint32_t i = 0; i + 1 < rank; ++i) printf("\t%llu", (unsigned long long)strides[i]);
  for (cuuint32_t i = 0; i < rank; ++i) printf("\t%u", box[i]);
  for (cuuint32_t i = 0; i < rank; ++i) printf("\t%u", element_strides[i]);
  printf("\t%d\t%d\t%d\t%d\n", int(interleave), int(swizzle), int(l2), int(oob));
  return CUDA_SUCCESS;
}

// ---- operand layouts from CuTe's canonical atoms --------------------------------------------------------------

enum Mode { NONE = 0, SW32 = 1, SW64 = 2, SW128 = 3, SW128_BASE32B = 4 };
static char const* const MODE_NAME[] = {"none", "32B", "64B", "128B", "128B_base32B"};

// Bytes of one row of a mode's atom: a 16-byte core matrix without a swizzle, else the swizzle's width.
constexpr int row_bytes(int mode) { return mode == NONE ? 16 : mode == SW128_BASE32B ? 128 : 16 << mode; }

template <class T, int M, bool MN>
auto atom() {
  if constexpr (MN) {
    if constexpr (M == NONE) return UMMA::Layout_MN_INTER_Atom<T>{};
    else if constexpr (M == SW32) return UMMA::Layout_MN_SW32_Atom<T>{};
    else if constexpr (M == SW64) return UMMA::Layout_MN_SW64_Atom<T>{};
    else if constexpr (M == SW128) return UMMA::Layout_MN_SW128_Atom<T>{};
    else return UMMA::Layout_MN_SW128_32B_Atom<T>{};
  } else {
    if constexpr (M == NONE) return UMMA::Layout_K_INTER_Atom<T>{};
    else if constexpr (M == SW32) return UMMA::Layout_K_SW32_Atom<T>{};
    else if constexpr (M == SW64) return UMMA::Layout_K_SW64_Atom<T>{};
    else return UMMA::Layout_K_SW128_Atom<T>{};
  }
}

// The (rows, cols) operand: K-major atoms fill the rows first, then K (CuTe's default column-major tiling);
// MN-major atoms fill K first, then the rows (the order tirx_layout's mma_shared_layout documents).
template <class T, int M, bool MN, int R, int C>
auto operand_layout() {
  if constexpr (MN) return tile_to_shape(atom<T, M, MN>(), Shape<Int<R>, Int<C>>{}, Step<_2, _1>{});
  else return tile_to_shape(atom<T, M, MN>(), Shape<Int<R>, Int<C>>{});
}

static char const* major_name(bool mn) { return mn ? "MN" : "K"; }

template <class T, int M, bool MN, int R, int C>
void smem_case() {
  constexpr int bits = sizeof_bits_v<T>;
  constexpr int k_block = 256 / bits;  // one instruction reads 32 bytes of K
  static_assert(C % k_block == 0, "the operand holds whole K blocks");
  auto layout = operand_layout<T, M, MN, R, C>();
  T* base = reinterpret_cast<T*>(uintptr_t(1) << 20);  // never dereferenced; aligned beyond every swizzle repeat
  auto tensor = make_tensor(make_smem_ptr(base), layout);

  printf("LAYOUT\t%d\t%s\t%s\t%d\t%d\t", bits, major_name(MN), MODE_NAME[M], R, C);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      printf("%ld ", long(reinterpret_cast<char const*>(&tensor(r, c)) - reinterpret_cast<char const*>(base)));
  printf("\n");

  auto blocks = zipped_divide(tensor, Shape<Int<R>, Int<k_block>>{});  // ((R, k_block), (1, C / k_block))
  constexpr auto umma_major = MN ? UMMA::Major::MN : UMMA::Major::K;
  auto umma = MakeTensor<UMMA::smem_desc<umma_major>>{}(blocks);
  for (int k = 0; k < C / k_block; ++k)
    printf("UMMA\t%d\t%s\t%s\t%d\t%d\t%d\t%016llx\n", bits, major_name(MN), MODE_NAME[M], R, C, k,
           (unsigned long long)uint64_t(umma(0, k)));
  if constexpr (M != SW128_BASE32B) {  // Hopper has no 128B swizzle with 32-byte atoms
    constexpr auto gmma_major = MN ? SM90::GMMA::Major::MN : SM90::GMMA::Major::K;
    auto gmma = MakeTensor<SM90::GMMA::smem_desc<gmma_major>>{}(blocks);
    for (int k = 0; k < C / k_block; ++k)
      printf("GMMA\t%d\t%s\t%s\t%d\t%d\t%d\t%016llx\n", bits, major_name(MN), MODE_NAME[M], R, C, k,
             (unsigned long long)uint64_t(gmma(0, k)));
  }
}

// The shapes tests/hw/test_smem_descriptor_isa.py gives every (type, majorness, swizzle): one atom, several along
// the rows, several along K, several along both.
template <class T, int M, bool MN>
void smem_shapes() {
  constexpr int bytes = sizeof(T);
  constexpr int width = row_bytes(M);
  constexpr int k_block = 32 / bytes;
  if constexpr (MN) {
    constexpr int line = width / bytes;
    smem_case<T, M, MN, line, k_block>();
    smem_case<T, M, MN, 2 * line, k_block>();
    smem_case<T, M, MN, line, 3 * k_block>();
    smem_case<T, M, MN, 2 * line, 2 * k_block>();
  } else {
    constexpr int atom_k = (width / bytes > k_block) ? width / bytes : k_block;
    smem_case<T, M, MN, 8, atom_k>();
    smem_case<T, M, MN, 32, atom_k>();
    smem_case<T, M, MN, 8, 2 * atom_k>();
    smem_case<T, M, MN, 24, 3 * atom_k>();
  }
}

// ---- instruction descriptors ----------------------------------------------------------------------------------

template <class A, class B, class D, int M, int N, UMMA::Major AM, UMMA::Major BM>
void idesc_case(char const* a, char const* b, char const* d) {
  UMMA::InstrDescriptor desc = UMMA::make_instr_desc<A, B, D, M, N, AM, BM>();
  printf("IDESC\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%08x\n", a, b, d, M, N, major_name(AM == UMMA::Major::MN),
         major_name(BM == UMMA::Major::MN), uint32_t(desc));
}

template <class A, class B, class D, int M, UMMA::Major AM, UMMA::Major BM, int... Ns>
void idesc_ns(char const* a, char const* b, char const* d) {
  (idesc_case<A, B, D, M, Ns, AM, BM>(a, b, d), ...);
}

// Every M and majorness of tests/hw/test_tcgen05_mma.py's table, N in {8, 16, 112, 256}.
template <class A, class B, class D>
void idesc_all(char const* a, char const* b, char const* d) {
  constexpr auto K = UMMA::Major::K;
  constexpr auto MN = UMMA::Major::MN;
  idesc_ns<A, B, D, 64, K, K, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 64, MN, K, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 64, K, MN, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 64, MN, MN, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 128, K, K, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 128, MN, K, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 128, K, MN, 8, 16, 112, 256>(a, b, d);
  idesc_ns<A, B, D, 128, MN, MN, 8, 16, 112, 256>(a, b, d);
}

// ---- the CTA pair (cta_group::2): the 2x1SM atoms' instruction descriptors and each CTA's share ---------------

template <class Traits>
void idesc_pair_print(char const* a, char const* b, char const* d, int m, int n, bool a_mn, bool b_mn) {
  Traits traits{};
  printf("IDESC2\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%08x\n", a, b, d, m, n, major_name(a_mn), major_name(b_mn),
         uint32_t(traits.idesc_));
}

// One 2x1SM atom per kind family: F16BF16 (16-bit), TF32, S8 and F8F6F4 (the last takes its types as traits
// parameters).
template <class A, class B, class D, int M, int N, UMMA::Major AM, UMMA::Major BM>
void idesc_pair_case(char const* a, char const* b, char const* d) {
  constexpr bool a_mn = AM == UMMA::Major::MN, b_mn = BM == UMMA::Major::MN;
  if constexpr (sizeof_bits_v<A> == 16) {
    idesc_pair_print<MMA_Traits<SM100_MMA_F16BF16_2x1SM_SS<A, B, D, M, N, AM, BM>>>(a, b, d, M, N, a_mn, b_mn);
  } else if constexpr (sizeof_bits_v<A> == 32) {
    idesc_pair_print<MMA_Traits<SM100_MMA_TF32_2x1SM_SS<A, B, D, M, N, AM, BM>>>(a, b, d, M, N, a_mn, b_mn);
  } else if constexpr (cute::is_same_v<A, int8_t> || cute::is_same_v<A, uint8_t>) {
    idesc_pair_print<MMA_Traits<SM100_MMA_S8_2x1SM_SS<A, B, D, M, N, AM, BM>>>(a, b, d, M, N, a_mn, b_mn);
  } else {
    using One = cute::integral_constant<UMMA::ScaleIn, UMMA::ScaleIn::One>;
    idesc_pair_print<MMA_Traits<SM100_MMA_F8F6F4_2x1SM_SS, A, B, D, cute::C<M>, cute::C<N>,
                                cute::integral_constant<UMMA::Major, AM>, cute::integral_constant<UMMA::Major, BM>,
                                One, One>>(a, b, d, M, N, a_mn, b_mn);
  }
}

template <class A, class B, class D, int M, UMMA::Major AM, UMMA::Major BM, int... Ns>
void idesc_pair_ns(char const* a, char const* b, char const* d) {
  (idesc_pair_case<A, B, D, M, Ns, AM, BM>(a, b, d), ...);
}

// Every M of the pair table and the four majornesses, N at the grid's ends and inside it (32..256 for i8).
template <class A, class B, class D, int N0>
void idesc_pair_all(char const* a, char const* b, char const* d) {
  constexpr auto K = UMMA::Major::K;
  constexpr auto MN = UMMA::Major::MN;
  idesc_pair_ns<A, B, D, 128, K, K, N0, 96, 256>(a, b, d);
  idesc_pair_ns<A, B, D, 256, K, K, N0, 96, 256>(a, b, d);
  idesc_pair_ns<A, B, D, 256, MN, K, N0, 256>(a, b, d);
  idesc_pair_ns<A, B, D, 128, K, MN, 32, 256>(a, b, d);
  idesc_pair_ns<A, B, D, 256, MN, MN, 64>(a, b, d);
}

// The rows of A and of B each CTA of the pair holds, as CuTe's TiledMMA of the 2x1SM atom partitions an (M, K) A
// and an (N, K) B for the first CTA of the pair.
template <int M, int N>
void pair_share() {
  auto mma = make_tiled_mma(SM100_MMA_F16BF16_2x1SM_SS<half_t, half_t, float, M, N, UMMA::Major::K,
                                                       UMMA::Major::K>{});
  constexpr int K = 64;
  auto a = partition_shape_A(mma, Shape<Int<M>, Int<K>>{});  // ((MMA_M, MMA_K), REST_M, REST_K)
  auto b = partition_shape_B(mma, Shape<Int<N>, Int<K>>{});
  printf("PAIR\t%d\t%d\t%d\t%d\t%d\n", M, N, K, int(size<0, 0>(a) * size<1>(a)), int(size<0, 0>(b) * size<1>(b)));
}

// ---- TMA ------------------------------------------------------------------------------------------------------

// One operand box (rows x cols of `name`) copied from a global tensor of (rows_total, cols_total) elements: K-major
// with K contiguous; MN-major with the rows contiguous (a global (K, MN) buffer, the box K rows of one atom of MN).
template <class T, int M, bool MN, int R, int C>
void tma_case(char const* name, int rows_total, int cols_total) {
  char label[128];
  snprintf(label, sizeof label, "%s:%s:%s:%d:%d:%d:%d", name, major_name(MN), MODE_NAME[M], R, C, rows_total,
           cols_total);
  current_tma_case = label;
  T* g = reinterpret_cast<T*>(uintptr_t(1) << 24);  // never dereferenced; aligned for every swizzle
  auto shape = make_shape(rows_total, cols_total);
  if constexpr (MN) {
    auto global = make_tensor(make_gmem_ptr(g), make_layout(shape, make_stride(_1{}, rows_total)));
    (void)make_tma_copy(SM90_TMA_LOAD{}, global, operand_layout<T, M, MN, R, C>());
  } else {
    auto global = make_tensor(make_gmem_ptr(g), make_layout(shape, make_stride(cols_total, _1{})));
    (void)make_tma_copy(SM90_TMA_LOAD{}, global, operand_layout<T, M, MN, R, C>());
  }
}

// tests/hw/test_tma.py's derived maps: a 512 x (4 atoms) tensor, boxes of 8, 64, 256 rows of one atom of K.
template <class T, int M>
void tma_k_major(char const* name) {
  constexpr int width = row_bytes(M);
  constexpr int cols = width / int(sizeof(T));
  tma_case<T, M, false, 8, cols>(name, 512, 4 * cols);
  tma_case<T, M, false, 64, cols>(name, 512, 4 * cols);
  tma_case<T, M, false, 256, cols>(name, 512, 4 * cols);
}

// tests/hw/test_tma.py's MN-major maps: one atom of MN by 8, 16, 32 K rows from a (64, 8 atoms) global buffer.
template <class T, int M>
void tma_mn_major(char const* name) {
  constexpr int width = row_bytes(M);
  constexpr int rows = width / int(sizeof(T));
  tma_case<T, M, true, rows, 8>(name, 8 * rows, 64);
  tma_case<T, M, true, rows, 16>(name, 8 * rows, 64);
  tma_case<T, M, true, rows, 32>(name, 8 * rows, 64);
}

int main() {
#if defined(CUTE_ORACLE_SWEEP)
  smem_shapes<uint8_t, NONE, false>();
  smem_shapes<uint8_t, SW32, false>();
  smem_shapes<uint8_t, SW64, false>();
  smem_shapes<uint8_t, SW128, false>();
  smem_shapes<half_t, NONE, false>();
  smem_shapes<half_t, SW32, false>();
  smem_shapes<half_t, SW64, false>();
  smem_shapes<half_t, SW128, false>();
  smem_shapes<float, NONE, false>();
  smem_shapes<float, SW32, false>();
  smem_shapes<float, SW64, false>();
  smem_shapes<float, SW128, false>();
  smem_shapes<uint8_t, NONE, true>();
  smem_shapes<uint8_t, SW32, true>();
  smem_shapes<uint8_t, SW64, true>();
  smem_shapes<uint8_t, SW128, true>();
  smem_shapes<half_t, NONE, true>();
  smem_shapes<half_t, SW32, true>();
  smem_shapes<half_t, SW64, true>();
  smem_shapes<half_t, SW128, true>();
  smem_shapes<float, SW128_BASE32B, true>();

  idesc_all<half_t, half_t, float>("float16", "float16", "float32");
  idesc_all<half_t, half_t, half_t>("float16", "float16", "float16");
  idesc_all<bfloat16_t, bfloat16_t, float>("bfloat16", "bfloat16", "float32");
  idesc_all<tfloat32_t, tfloat32_t, float>("float32", "float32", "float32");
  idesc_all<float_e4m3_t, float_e4m3_t, float>("float8_e4m3fn", "float8_e4m3fn", "float32");
  idesc_all<float_e4m3_t, float_e4m3_t, half_t>("float8_e4m3fn", "float8_e4m3fn", "float16");
  idesc_all<float_e5m2_t, float_e5m2_t, float>("float8_e5m2", "float8_e5m2", "float32");
  idesc_all<float_e5m2_t, float_e5m2_t, half_t>("float8_e5m2", "float8_e5m2", "float16");
  idesc_all<int8_t, int8_t, int32_t>("int8", "int8", "int32");
  idesc_all<uint8_t, uint8_t, int32_t>("uint8", "uint8", "int32");

  idesc_pair_all<half_t, half_t, float, 16>("float16", "float16", "float32");
  idesc_pair_all<half_t, half_t, half_t, 16>("float16", "float16", "float16");
  idesc_pair_all<bfloat16_t, bfloat16_t, float, 16>("bfloat16", "bfloat16", "float32");
  idesc_pair_all<tfloat32_t, tfloat32_t, float, 16>("float32", "float32", "float32");
  idesc_pair_all<float_e4m3_t, float_e4m3_t, float, 16>("float8_e4m3fn", "float8_e4m3fn", "float32");
  idesc_pair_all<float_e5m2_t, float_e4m3_t, half_t, 16>("float8_e5m2", "float8_e4m3fn", "float16");
  idesc_pair_all<int8_t, int8_t, int32_t, 32>("int8", "int8", "int32");
  idesc_pair_all<uint8_t, int8_t, int32_t, 32>("uint8", "int8", "int32");
  pair_share<128, 64>();
  pair_share<256, 16>();
  pair_share<256, 256>();
  // each CTA's halves of a 256x256x64 pair and of a 128x64x128 8-bit pair
  smem_case<half_t, SW128, false, 128, 64>();
  smem_case<uint8_t, SW64, false, 32, 128>();
  smem_case<half_t, SW32, true, 128, 32>();

  tma_k_major<half_t, NONE>("float16");
  tma_k_major<half_t, SW32>("float16");
  tma_k_major<half_t, SW64>("float16");
  tma_k_major<half_t, SW128>("float16");
  tma_k_major<bfloat16_t, SW128>("bfloat16");
  tma_k_major<float, NONE>("float32");
  tma_k_major<float, SW32>("float32");
  tma_k_major<float, SW64>("float32");
  tma_k_major<float, SW128>("float32");
  tma_k_major<tfloat32_t, SW128>("tfloat32");
  tma_k_major<float_e4m3_t, SW128>("float8_e4m3fn");
  tma_k_major<int8_t, NONE>("int8");
  tma_k_major<int8_t, SW32>("int8");
  tma_k_major<int8_t, SW64>("int8");
  tma_k_major<int8_t, SW128>("int8");
  tma_mn_major<float, SW128_BASE32B>("float32");
  tma_mn_major<bfloat16_t, SW128>("bfloat16");
  tma_mn_major<bfloat16_t, SW64>("bfloat16");
  tma_mn_major<half_t, SW32>("float16");
  tma_mn_major<float_e4m3_t, SW128>("float8_e4m3fn");
  tma_mn_major<bfloat16_t, NONE>("bfloat16");
#else
  // The suite's sample: one case of each kind of layout, instruction and map the sweep has.
  smem_case<half_t, SW128, false, 24, 3 * 64>();   // K-major 128B, atoms along both directions
  smem_case<uint8_t, NONE, false, 32, 32>();       // K-major without a swizzle: LBO and SBO both read
  smem_case<half_t, SW64, true, 64, 32>();         // MN-major 64B, two atoms of MN, two K blocks
  smem_case<float, SW128_BASE32B, true, 64, 16>(); // MN-major tf32: 128B with 32-byte atoms
  idesc_ns<bfloat16_t, bfloat16_t, float, 128, UMMA::Major::K, UMMA::Major::K, 8, 256>("bfloat16", "bfloat16",
                                                                                       "float32");
  idesc_ns<float_e4m3_t, float_e5m2_t, half_t, 64, UMMA::Major::MN, UMMA::Major::K, 16>("float8_e4m3fn",
                                                                                        "float8_e5m2", "float16");
  idesc_ns<int8_t, uint8_t, int32_t, 128, UMMA::Major::K, UMMA::Major::MN, 112>("int8", "uint8", "int32");
  idesc_ns<tfloat32_t, tfloat32_t, float, 64, UMMA::Major::MN, UMMA::Major::MN, 256>("float32", "float32",
                                                                                     "float32");
  tma_case<bfloat16_t, SW128, false, 64, 64>("bfloat16", 512, 256);
  tma_case<tfloat32_t, SW128, false, 8, 32>("tfloat32", 512, 128);
  tma_case<float, SW128_BASE32B, true, 32, 16>("float32", 256, 64);
  // the pair (cta_group::2): a 2x1SM atom's descriptor, each CTA's share, and one CTA's half of A (128 x 64 bf16)
  idesc_pair_case<bfloat16_t, bfloat16_t, float, 256, 256, UMMA::Major::K, UMMA::Major::K>("bfloat16", "bfloat16",
                                                                                           "float32");
  pair_share<256, 256>();
  smem_case<bfloat16_t, SW128, false, 128, 64>();
#endif
  return 0;
}
