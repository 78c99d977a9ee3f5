/*!
 * \file direct_sum.cc
 * \brief direct_sum and its recognisers (SPEC §2): tiling without stride scaling.
 */
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {

TileLayout DirectSum(const TileLayout& right, const TileLayout& left, const std::vector<int64_t>& left_shape,
                     const std::vector<int64_t>& right_shape) {
  return Interleave(left, right, left_shape, right_shape, /*scale=*/false);
}

std::optional<TileLayout> IsDirectSumRight(const TileLayout& right, const TileLayout& sum,
                                           const std::vector<int64_t>& sum_shape,
                                           const std::vector<int64_t>& right_shape) {
  return Deinterleave(right, sum, sum_shape, right_shape, /*known_is_first=*/false, /*scale=*/false);
}

std::optional<TileLayout> IsDirectSumLeft(const TileLayout& left, const TileLayout& sum,
                                          const std::vector<int64_t>& sum_shape,
                                          const std::vector<int64_t>& left_shape) {
  return Deinterleave(left, sum, sum_shape, left_shape, /*known_is_first=*/true, /*scale=*/false);
}

}  // namespace tirx_layout
