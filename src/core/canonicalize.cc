/*!
 * \file canonicalize.cc
 * \brief canonicalize (SPEC §2): the normal form of a TileLayout, optionally fusing thread axes for CUDA.
 */
#include <algorithm>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {

int64_t ThreadsPerStep(ExecLevel level) {
  switch (level) {
    case ExecLevel::kThread:
      return 1;
    case ExecLevel::kWarp:
      return 32;
    case ExecLevel::kWarpgroup:
      return 128;
    default:
      return 0;
  }
}

namespace {

/*! \brief The built-in axis that indexes `inner` steps within `outer`, if there is one. */
std::optional<Axis> WidestAxis(ExecLevel inner, ExecLevel outer) {
  struct Entry {
    ExecLevel inner, outer;
    const char* axis;
  };
  static const Entry table[] = {
      {ExecLevel::kThread, ExecLevel::kCta, "tx"},          {ExecLevel::kThread, ExecLevel::kWarpgroup, "tid_in_wg"},
      {ExecLevel::kThread, ExecLevel::kWarp, "laneid"},     {ExecLevel::kWarp, ExecLevel::kCta, "warpid"},
      {ExecLevel::kWarp, ExecLevel::kWarpgroup, "wid_in_wg"}, {ExecLevel::kWarpgroup, ExecLevel::kCta, "wgid"},
  };
  for (const Entry& e : table) {
    if (e.inner == inner && e.outer == outer) return Axis::Get(e.axis);
  }
  return std::nullopt;
}

/*!
 * \brief Rewrite every thread axis onto the one axis that spans the layout's whole scope (laneid + warpid -> tx: a
 *        warp step is 32 threads, a warpgroup step 128 threads or 4 warps). A scope no single axis spans (one that
 *        reaches the cluster or the grid) is left as it is.
 */
void FuseThreadAxes(LayoutParts* parts) {
  ScopeChain chain = parts->Build()->ResolveScope();
  if (!chain.has_scope || !chain.well_formed) return;
  std::optional<Axis> target = WidestAxis(chain.inner, chain.outer);
  if (!target) return;
  const int64_t inner_step = ThreadsPerStep(chain.inner);
  auto factor = [&](const Axis& a) { return CheckedDiv(ThreadsPerStep(a->subscope_level), inner_step); };

  for (auto* iters : {&parts->shard, &parts->replica}) {
    for (IterValue& it : *iters) {
      if (!it.axis->IsThread()) continue;
      it.stride = CheckedMul(it.stride, factor(it.axis));
      it.axis = *target;
    }
  }
  std::vector<std::pair<Axis, int64_t>> offsets;
  offsets.swap(parts->offset);
  for (const auto& [axis, value] : offsets) {
    parts->AddOffset(axis->IsThread() ? *target : axis, axis->IsThread() ? CheckedMul(value, factor(axis)) : value);
  }
}

/*! \brief Merge runs of adjacent shard iters on one axis whose strides continue each other. */
std::vector<IterValue> FuseAdjacent(const std::vector<IterValue>& iters) {
  std::vector<IterValue> out;
  for (const IterValue& it : iters) {
    if (!out.empty()) {
      IterValue& prev = out.back();
      // (e1, s1) then (e2, s2) with e2 * s2 == s1 walk one arithmetic progression: (e1 * e2, s2).
      int64_t reach;
      if (prev.axis.same_as(it.axis) && !__builtin_mul_overflow(it.extent, it.stride, &reach) &&
          reach == prev.stride) {
        prev.extent = CheckedMul(prev.extent, it.extent);
        prev.stride = it.stride;
        continue;
      }
    }
    out.push_back(it);
  }
  return out;
}

bool SameIters(const std::vector<IterValue>& values, const ffi::Array<Iter>& iters) {
  if (values.size() != iters.size()) return false;
  for (size_t i = 0; i < values.size(); ++i) {
    const Iter& it = iters[i];
    if (values[i].extent != it->extent || values[i].stride != it->stride || !values[i].axis.same_as(it->axis)) {
      return false;
    }
  }
  return true;
}

/*! \brief Whether `parts` is exactly `layout` (same iters in order, same offsets). */
bool Unchanged(const LayoutParts& parts, const TileLayout& layout) {
  if (!SameIters(parts.shard, layout->shard) || !SameIters(parts.replica, layout->replica)) return false;
  if (parts.offset.size() != layout->offset.size()) return false;
  for (const auto& [axis, value] : parts.offset) {
    auto it = layout->offset.find(axis);
    if (it == layout->offset.end() || AsStaticInt((*it).second) != value) return false;
  }
  return true;
}

}  // namespace

TileLayout Canonicalize(const TileLayout& layout, bool fuse_thread_axes) {
  LayoutParts parts = LayoutParts::Of(layout);
  // SPEC §2 order: unit shard iters, zero offsets, thread-axis fusion (on what is left), adjacent-iter fusion.
  std::vector<IterValue> shard;
  for (const IterValue& it : parts.shard) {
    if (it.extent != 1) shard.push_back(it);
  }
  if (shard.empty() && !parts.shard.empty()) shard.push_back({1, 1, parts.shard.front().axis});
  parts.shard = shard;
  parts.offset.erase(std::remove_if(parts.offset.begin(), parts.offset.end(),
                                    [](const auto& entry) { return entry.second == 0; }),
                     parts.offset.end());
  if (fuse_thread_axes) FuseThreadAxes(&parts);
  parts.shard = FuseAdjacent(parts.shard);

  // Extent-1 replicas add no place; the rest get one deterministic order.
  parts.replica.erase(std::remove_if(parts.replica.begin(), parts.replica.end(),
                                     [](const IterValue& it) { return it.extent == 1; }),
                      parts.replica.end());
  std::stable_sort(parts.replica.begin(), parts.replica.end(), [](const IterValue& a, const IterValue& b) {
    std::string an(a.axis->name), bn(b.axis->name);
    if (an != bn) return an < bn;
    if (a.stride != b.stride) return a.stride < b.stride;
    return a.extent < b.extent;
  });
  // Most layouts reaching here are canonical already: hand the same object back instead of rebuilding it.
  return Unchanged(parts, layout) ? layout : parts.Build();
}

}  // namespace tirx_layout
