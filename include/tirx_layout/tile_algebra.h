/*!
 * \file tirx_layout/tile_algebra.h
 * \brief The TileLayout algebra of SPEC §2: canonicalize, group, tile, direct sum, slice, recognisers, rewrites.
 *
 * Every operation works on integer offsets only; the Python layer takes symbolic offsets out before calling in
 * and puts them back (they only ever add, scale or cancel). Operations that can fail for structural reasons
 * ("does not decompose") return std::nullopt; invalid arguments throw through error.h.
 */
#ifndef TIRX_LAYOUT_TILE_ALGEBRA_H_
#define TIRX_LAYOUT_TILE_ALGEBRA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tile_layout.h"

namespace tirx_layout {

/*! \brief One iter as a plain value, for building layouts step by step. */
struct IterValue {
  int64_t extent;
  int64_t stride;
  Axis axis;
};

/*! \brief A TileLayout taken apart into plain values; offsets keep their first-seen axis order. */
struct LayoutParts {
  std::vector<IterValue> shard;
  std::vector<IterValue> replica;
  std::vector<std::pair<Axis, int64_t>> offset;

  /*! \brief TypeError when the layout has a symbolic offset (the Python layer strips those first). */
  static LayoutParts Of(const TileLayout& layout);
  TileLayout Build() const;
  /*! \brief Add `value` to the offset on `axis` (offsets on one axis add up). */
  void AddOffset(const Axis& axis, int64_t value);
  int64_t OffsetOn(const Axis& axis) const;
  /*! \brief `1 + sum (e-1)*s + offset` over shard, replica and offset on `axis` (SPEC span(axis)). */
  int64_t SpanOn(const Axis& axis) const;
  /*! \brief Whether a shard iter of extent > 1 moves along `axis` (a unit iter moves nowhere). */
  bool ShardUses(const Axis& axis) const;
};

/*! \brief Product of a shape; ValueError for extents < 1 (named with `what`). */
int64_t ShapeSize(const std::vector<int64_t>& shape, const char* what);
std::string ShapeString(const std::vector<int64_t>& shape);
std::string LayoutString(const TileLayout& layout);

// ---- canonicalize.cc ----------------------------------------------------------------------------------------
/*!
 * \brief Normal form with the same meaning: drop unit shard iters and zero offsets, fuse adjacent shard iters
 *        on one axis, sort replicas. With `fuse_thread_axes` (an active CUDA target), thread axes are first rewritten
 *        onto the single widest axis of the layout's scope (laneid+warpid -> tx, ...).
 */
TileLayout Canonicalize(const TileLayout& layout, bool fuse_thread_axes);
/*! \brief Threads in one step of each level up to a warpgroup; 0 for a CTA and above (their size is not fixed). */
int64_t ThreadsPerStep(ExecLevel level);

// ---- group.cc -----------------------------------------------------------------------------------------------
struct Grouped {
  TileLayout layout;
  /*! \brief len(shape)+1 separators: group d is shard[seps[d]:seps[d+1]]. */
  std::vector<int64_t> seps;
};
/*! \brief Split shard iters so that consecutive runs multiply to each shape entry; nullopt (with `why`) if impossible. */
std::optional<Grouped> TryGroup(const TileLayout& layout, const std::vector<int64_t>& shape, std::string* why);
/*! \brief The separators of a layout that Group returned for `shape` (recomputed from its extents). */
std::vector<int64_t> SeparatorsOf(const TileLayout& grouped, const std::vector<int64_t>& shape);
/*! \brief TryGroup, raising ValueError("... cannot be grouped by shape ...") when impossible. */
Grouped Group(const TileLayout& layout, const std::vector<int64_t>& shape);
/*! \brief Group by the common refinement of several shapes; one separator list per input shape. */
std::pair<TileLayout, std::vector<std::vector<int64_t>>> GroupMany(const TileLayout& layout,
                                                                   const std::vector<std::vector<int64_t>>& shapes);

// ---- tile.cc ------------------------------------------------------------------------------------------------
/*!
 * \brief The construction tile and direct sum share: canonicalize both, group `first` by `first_shape` and `second`
 *        by `second_shape`, and emit per dimension d the first's group d then the second's; replicas concatenate,
 *        offsets add, the result is canonical. With `scale`, first iters on an axis the second's shard uses have
 *        their stride multiplied by second.span(axis) (tiling); without, nothing is scaled (direct sum).
 */
TileLayout Interleave(const TileLayout& first, const TileLayout& second, const std::vector<int64_t>& first_shape,
                      const std::vector<int64_t>& second_shape, bool scale);
/*!
 * \brief Inverse of Interleave: given `combined` over `combined_shape` (per-dimension products) and one factor
 *        `known` with its shape, the other factor, or nullopt when `combined` does not decompose that way.
 *        `known_is_first` says which side `known` is. Exact: re-interleaving the answer gives back `combined`.
 *        The answer is canonical, then grouped by its shape (one run of iters per dimension).
 */
std::optional<TileLayout> Deinterleave(const TileLayout& known, const TileLayout& combined,
                                       const std::vector<int64_t>& combined_shape,
                                       const std::vector<int64_t>& known_shape, bool known_is_first, bool scale);

/*! \brief `inner` tiled by `outer`: per dimension, outer iters (strides scaled by inner.span on shared axes) then inner. */
TileLayout Tile(const TileLayout& inner, const TileLayout& outer, const std::vector<int64_t>& outer_shape,
                const std::vector<int64_t>& inner_shape);
/*!
 * \brief The outer O with inner.Tile(O) == tiled (canonically), or nullopt. With `fuse_thread_axes` (an active CUDA
 *        target) `tiled` may be in the fused form Canonicalize(..., true) gives (S[64:1@tx] for warpid x laneid):
 *        the answer is then one whose tile canonicalises, fused, to the same layout.
 */
std::optional<TileLayout> IsTileInner(const TileLayout& inner, const TileLayout& tiled,
                                      const std::vector<int64_t>& tiled_shape, const std::vector<int64_t>& inner_shape,
                                      bool fuse_thread_axes = false);
/*! \brief The inner I with I.Tile(outer) == tiled (canonically), or nullopt; `fuse_thread_axes` as for IsTileInner. */
std::optional<TileLayout> IsTileOuter(const TileLayout& outer, const TileLayout& tiled,
                                      const std::vector<int64_t>& tiled_shape, const std::vector<int64_t>& outer_shape,
                                      bool fuse_thread_axes = false);

// ---- direct_sum.cc ------------------------------------------------------------------------------------------
/*! \brief On the interleaved domain, (p, q, i, j) -> left(p, i) + right(q, j); no stride scaling. */
TileLayout DirectSum(const TileLayout& right, const TileLayout& left, const std::vector<int64_t>& left_shape,
                     const std::vector<int64_t>& right_shape);
/*! \brief The left addend A with right.DirectSum(A) == sum (canonically), or nullopt. */
std::optional<TileLayout> IsDirectSumRight(const TileLayout& right, const TileLayout& sum,
                                           const std::vector<int64_t>& sum_shape,
                                           const std::vector<int64_t>& right_shape);
/*! \brief The right addend B with B.DirectSum(left) == sum (canonically), or nullopt. */
std::optional<TileLayout> IsDirectSumLeft(const TileLayout& left, const TileLayout& sum,
                                          const std::vector<int64_t>& sum_shape,
                                          const std::vector<int64_t>& left_shape);

// ---- slice.cc -----------------------------------------------------------------------------------------------
/*! \brief A symbolic begin of dimension `dim` adds begin * stride on `axis` to the offset. */
struct SymbolicBeginTerm {
  size_t dim;
  Axis axis;
  int64_t stride;
};
/*!
 * \brief The layout of the sub-box [begin, begin+extent) of a buffer of `shape`, or nullopt when it is not affine
 *        in this model. A dimension whose begin is nullopt is symbolic: allowed when its group is one iter, and
 *        reported in `symbolic_terms` for the caller to add.
 */
std::optional<TileLayout> Slice(const TileLayout& layout, const std::vector<int64_t>& shape,
                                const std::vector<std::optional<int64_t>>& begins,
                                const std::vector<int64_t>& extents, std::vector<SymbolicBeginTerm>* symbolic_terms);

// ---- rewrite.cc ---------------------------------------------------------------------------------------------
bool IsTrivial(const TileLayout& layout);
TileLayout Storage(const TileLayout& layout);
TileLayout Unpack(const TileLayout& layout, int64_t n);
TileLayout Pack(const TileLayout& layout, int64_t n);
TileLayout Broadcast(const TileLayout& layout, int64_t n, int64_t position, const Axis& axis);
TileLayout PermuteDims(const TileLayout& layout, const std::vector<int64_t>& perm);
TileLayout PermuteByGroups(const TileLayout& layout, const std::vector<int64_t>& seps,
                           const std::vector<int64_t>& perm);

// ---- trainium.cc --------------------------------------------------------------------------------------------
/*! \brief A PSUM bank's elements and the number of banks (seed 002's `kPSUMMaxElemPerBank`, `kPSUMBankNum`). */
constexpr int64_t kPsumBankElements = 512;
constexpr int64_t kPsumBanks = 8;
/*! \brief Partition/free layout of a Trainium tile from its "P"/"F" annotation (SPEC: TileLayout.trainium). */
TileLayout Trainium(const std::string& annotation, const std::vector<int64_t>& shape);
/*! \brief Rewrite the F axis into PSUM banks (512 elements each, 8 banks). */
TileLayout ToPsum(const TileLayout& layout);

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_TILE_ALGEBRA_H_
