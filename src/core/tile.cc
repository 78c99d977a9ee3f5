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

namespace {

/*! \brief Every chain of thread axes, outermost first, that splits `axis`'s scope into steps of its subscope
 *         (tx: warpid x laneid, wgid x tid_in_wg, wgid x wid_in_wg x laneid), `axis` itself left out. */
void ThreadAxisChains(ExecLevel scope, ExecLevel subscope, std::vector<Axis>* prefix,
                      std::vector<std::vector<Axis>>* out) {
  for (const std::string& name : Axis::KnownNames()) {
    Axis a = Axis::Get(name);
    if (!a->IsThread() || a->scope_level != scope || static_cast<int>(a->subscope_level) > static_cast<int>(subscope)) {
      continue;
    }
    if (ThreadsPerStep(a->subscope_level) == 0) continue;
    prefix->push_back(a);
    if (a->subscope_level == subscope) {
      if (prefix->size() > 1) out->push_back(*prefix);
    } else {
      ThreadAxisChains(a->subscope_level, subscope, prefix, out);
    }
    prefix->pop_back();
  }
}

/*! \brief `it` (on an axis stepping `unit` threads) spread over `chain`; false when an iter straddles a boundary. */
bool SplitOverChain(const IterValue& it, int64_t unit, const std::vector<Axis>& chain, std::vector<IterValue>* out) {
  std::vector<IterValue> parts;  // innermost first
  int64_t extent = it.extent, threads = CheckedMul(it.stride, unit);  // the iter's step, in threads
  for (size_t i = chain.size(); i-- > 0 && extent > 1;) {
    const int64_t step = ThreadsPerStep(chain[i]->subscope_level);
    if (!Divides(step, threads)) return false;
    if (i == 0) {  // the outermost axis takes whatever is left
      parts.push_back({extent, CheckedDiv(threads, step), chain[i]});
      extent = 1;
      break;
    }
    const int64_t reach = ThreadsPerStep(chain[i - 1]->subscope_level);  // one step of the next axis out
    if (Divides(reach, threads)) continue;                                   // the iter lies wholly outside chain[i]
    if (!Divides(threads, reach)) return false;
    const int64_t here = CheckedDiv(reach, threads);  // how many of its values fit inside one step of the next axis out
    if (extent <= here) {
      parts.push_back({extent, CheckedDiv(threads, step), chain[i]});
      extent = 1;
    } else if (Divides(here, extent)) {
      parts.push_back({here, CheckedDiv(threads, step), chain[i]});
      extent = CheckedDiv(extent, here);
      threads = reach;
    } else {
      return false;
    }
  }
  if (parts.empty()) parts.push_back({it.extent, 0, chain.back()});  // a unit or stride-0 iter
  out->insert(out->end(), parts.rbegin(), parts.rend());
  return true;
}

/*! \brief `layout` (fused: its thread axes on the one `axis`) with that axis spread over `chain`, if it splits. */
std::optional<TileLayout> Unfuse(const LayoutParts& fused, const Axis& axis, const std::vector<Axis>& chain) {
  const int64_t unit = ThreadsPerStep(axis->subscope_level);
  LayoutParts out;
  for (auto [from, to] : {std::pair{&fused.shard, &out.shard}, std::pair{&fused.replica, &out.replica}}) {
    for (const IterValue& it : *from) {
      if (!it.axis.same_as(axis)) {
        to->push_back(it);
      } else if (!SplitOverChain(it, unit, chain, to)) {
        return std::nullopt;
      }
    }
  }
  for (const auto& [a, value] : fused.offset) {
    if (!a.same_as(axis)) {
      out.AddOffset(a, value);
      continue;
    }
    int64_t threads = CheckedMul(value, unit);
    for (size_t i = chain.size(); i-- > 0;) {
      int64_t step = ThreadsPerStep(chain[i]->subscope_level);
      int64_t reach = i == 0 ? 0 : ThreadsPerStep(chain[i - 1]->subscope_level);
      int64_t part = i == 0 ? threads : FloorMod(threads, reach);
      out.AddOffset(chain[i], CheckedDiv(part, step));
      threads -= part;
    }
  }
  return out.Build();
}

/*!
 * \brief The recogniser under CUDA fusion: `tiled` canonicalised with fused thread axes may have lost the axes
 *        the factors use, so its fused axis is spread back over each chain of finer axes in turn and the exact
 *        recogniser tried on each; an answer counts when the rebuilt tile fuses to the same layout.
 */
std::optional<TileLayout> RecogniseFused(const TileLayout& known, const TileLayout& tiled,
                                         const std::vector<int64_t>& tiled_shape,
                                         const std::vector<int64_t>& known_shape, bool known_is_first) {
  TileLayout fused = Canonicalize(tiled, true);
  LayoutParts parts = LayoutParts::Of(fused);
  std::optional<Axis> axis;
  for (const auto* iters : {&parts.shard, &parts.replica}) {
    for (const IterValue& it : *iters) {
      if (it.axis->IsThread()) axis = it.axis;
    }
  }
  if (!axis) return std::nullopt;
  std::vector<std::vector<Axis>> chains;
  std::vector<Axis> prefix;
  ThreadAxisChains((*axis)->scope_level, (*axis)->subscope_level, &prefix, &chains);
  for (const std::vector<Axis>& chain : chains) {
    std::optional<TileLayout> unfused = Unfuse(parts, *axis, chain);
    if (!unfused) continue;
    std::optional<TileLayout> answer =
        Deinterleave(known, *unfused, tiled_shape, known_shape, known_is_first, /*scale=*/true);
    if (!answer) continue;
    std::vector<int64_t> other_shape;
    for (size_t d = 0; d < tiled_shape.size(); ++d) other_shape.push_back(CheckedDiv(tiled_shape[d], known_shape[d]));
    try {
      TileLayout rebuilt = known_is_first ? Tile(*answer, known, known_shape, other_shape)
                                          : Tile(known, *answer, other_shape, known_shape);
      if (ffi::StructuralEqual::Equal(Canonicalize(rebuilt, true), fused)) return answer;
    } catch (const ffi::Error&) {
      continue;  // the rebuild overflows or is ill-formed: not an answer
    }
  }
  return std::nullopt;
}

std::optional<TileLayout> Recognise(const TileLayout& known, const TileLayout& tiled,
                                    const std::vector<int64_t>& tiled_shape, const std::vector<int64_t>& known_shape,
                                    bool known_is_first, bool fuse_thread_axes) {
  std::optional<TileLayout> answer =
      Deinterleave(known, tiled, tiled_shape, known_shape, known_is_first, /*scale=*/true);
  if (answer || !fuse_thread_axes) return answer;
  return RecogniseFused(known, tiled, tiled_shape, known_shape, known_is_first);
}

}  // namespace

std::optional<TileLayout> IsTileInner(const TileLayout& inner, const TileLayout& tiled,
                                      const std::vector<int64_t>& tiled_shape,
                                      const std::vector<int64_t>& inner_shape, bool fuse_thread_axes) {
  return Recognise(inner, tiled, tiled_shape, inner_shape, /*known_is_first=*/false, fuse_thread_axes);
}

std::optional<TileLayout> IsTileOuter(const TileLayout& outer, const TileLayout& tiled,
                                      const std::vector<int64_t>& tiled_shape,
                                      const std::vector<int64_t>& outer_shape, bool fuse_thread_axes) {
  return Recognise(outer, tiled, tiled_shape, outer_shape, /*known_is_first=*/true, fuse_thread_axes);
}

}  // namespace tirx_layout
