/*!
 * \file tile.cc
 * \brief tile, is_tile_inner, is_tile_outer (SPEC §2), on the interleaving shared with the direct sum.
 */
#include <tvm/ffi/extra/structural_equal.h>

#include <algorithm>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {
namespace {

void CheckRanks(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const char* what) {
  if (a.size() != b.size()) {
    FailValue(what, ": shapes ", ShapeString(a), " and ", ShapeString(b), " must have the same rank");
  }
}

/*! \brief What the first factor's stride on `axis` is multiplied by when it is interleaved with `second`. */
int64_t ScaleOn(const LayoutParts& second, const Axis& axis, bool scale) {
  return scale && second.ShardUses(axis) ? second.SpanOn(axis) : 1;
}

}  // namespace

TileLayout Interleave(const TileLayout& first, const TileLayout& second, const std::vector<int64_t>& first_shape,
                      const std::vector<int64_t>& second_shape, bool scale) {
  CheckRanks(first_shape, second_shape, scale ? "tile" : "direct_sum");
  Grouped a = Group(Canonicalize(first, false), first_shape);
  Grouped b = Group(Canonicalize(second, false), second_shape);
  LayoutParts pa = LayoutParts::Of(a.layout), pb = LayoutParts::Of(b.layout), out;
  for (size_t d = 0; d < first_shape.size(); ++d) {
    for (int64_t k = a.seps[d]; k < a.seps[d + 1]; ++k) {
      IterValue it = pa.shard[k];
      it.stride = CheckedMul(it.stride, ScaleOn(pb, it.axis, scale));
      out.shard.push_back(it);
    }
    for (int64_t k = b.seps[d]; k < b.seps[d + 1]; ++k) out.shard.push_back(pb.shard[k]);
  }
  out.replica = pa.replica;
  out.replica.insert(out.replica.end(), pb.replica.begin(), pb.replica.end());
  for (const auto* parts : {&pa, &pb}) {
    for (const auto& [axis, value] : parts->offset) out.AddOffset(axis, value);
  }
  return Canonicalize(out.Build(), false);
}

std::optional<TileLayout> Deinterleave(const TileLayout& known, const TileLayout& combined,
                                       const std::vector<int64_t>& combined_shape,
                                       const std::vector<int64_t>& known_shape, bool known_is_first, bool scale) {
  CheckRanks(combined_shape, known_shape, "layout recogniser");
  std::vector<int64_t> other_shape, interleaved;
  for (size_t d = 0; d < combined_shape.size(); ++d) {
    if (known_shape[d] < 1 || !Divides(known_shape[d], combined_shape[d])) return std::nullopt;
    other_shape.push_back(CheckedDiv(combined_shape[d], known_shape[d]));
    int64_t first = known_is_first ? known_shape[d] : other_shape[d];
    int64_t second = known_is_first ? other_shape[d] : known_shape[d];
    interleaved.push_back(first);
    interleaved.push_back(second);
  }
  std::string why;
  TileLayout canonical = Canonicalize(combined, false);
  std::optional<Grouped> grouped = TryGroup(canonical, interleaved, &why);
  if (!grouped) return std::nullopt;

  LayoutParts whole = LayoutParts::Of(grouped->layout);
  LayoutParts k = LayoutParts::Of(Canonicalize(known, false));
  LayoutParts other;
  for (size_t d = 0; d < combined_shape.size(); ++d) {
    size_t group = 2 * d + (known_is_first ? 1 : 0);
    for (int64_t i = grouped->seps[group]; i < grouped->seps[group + 1]; ++i) {
      IterValue it = whole.shard[i];
      if (!known_is_first && it.extent > 1) {  // a unit iter's stride means nothing: nothing to undo
        // The unknown is the first factor: undo the scaling by the known second's span.
        int64_t factor = ScaleOn(k, it.axis, scale);
        if (factor == 0) {
          // A zero span scales every stride to 0, so any stride rebuilds a 0: take 0 itself.
          if (it.stride != 0) return std::nullopt;
        } else if (std::optional<int64_t> undone = ExactQuotient(it.stride, factor)) {
          it.stride = *undone;
        } else {
          return std::nullopt;  // no int64 stride scales to this one (a span of -1 included: INT64_MIN / -1)
        }
      }
      other.shard.push_back(it);
    }
  }
  // Replicas: the combined list is both factors' lists, so the unknown has what is left after removing the known's.
  other.replica = whole.replica;
  for (const IterValue& r : k.replica) {
    auto pos = std::find_if(other.replica.begin(), other.replica.end(), [&](const IterValue& it) {
      return it.extent == r.extent && it.stride == r.stride && it.axis.same_as(r.axis);
    });
    if (pos == other.replica.end()) return std::nullopt;
    other.replica.erase(pos);
  }
  for (const auto& [axis, value] : whole.offset) other.AddOffset(axis, value);
  for (const auto& [axis, value] : k.offset) other.AddOffset(axis, CheckedSub(0, value));

  TileLayout candidate = Canonicalize(other.Build(), false);
  // Exactness: the answer must rebuild `combined`; anything the construction cannot express is rejected here.
  try {
    TileLayout rebuilt = known_is_first ? Interleave(known, candidate, known_shape, other_shape, scale)
                                        : Interleave(candidate, known, other_shape, known_shape, scale);
    if (!ffi::StructuralEqual::Equal(rebuilt, canonical)) return std::nullopt;
  } catch (const ffi::Error&) {
    return std::nullopt;
  }
  // Hand the factor back in the shape the caller named, one group of iters per dimension.
  return Group(candidate, other_shape).layout;
}

TileLayout Tile(const TileLayout& inner, const TileLayout& outer, const std::vector<int64_t>& outer_shape,
                const std::vector<int64_t>& inner_shape) {
  return Interleave(outer, inner, outer_shape, inner_shape, /*scale=*/true);
}

std::optional<TileLayout> IsTileInner(const TileLayout& inner, const TileLayout& tiled,
                                      const std::vector<int64_t>& tiled_shape,
                                      const std::vector<int64_t>& inner_shape) {
  return Deinterleave(inner, tiled, tiled_shape, inner_shape, /*known_is_first=*/false, /*scale=*/true);
}

std::optional<TileLayout> IsTileOuter(const TileLayout& outer, const TileLayout& tiled,
                                      const std::vector<int64_t>& tiled_shape,
                                      const std::vector<int64_t>& outer_shape) {
  return Deinterleave(outer, tiled, tiled_shape, outer_shape, /*known_is_first=*/true, /*scale=*/true);
}

}  // namespace tirx_layout
