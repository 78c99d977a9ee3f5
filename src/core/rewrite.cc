/*!
 * \file rewrite.cc
 * \brief Structural rewrites (SPEC §2 "Rewrites"): is_trivial, storage, pack/unpack, broadcast, permutations.
 */
#include <algorithm>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {

bool IsTrivial(const TileLayout& layout) {
  LayoutParts parts = LayoutParts::Of(Canonicalize(layout, false));
  if (!parts.replica.empty() || !parts.offset.empty() || parts.shard.size() > 1) return false;
  return parts.shard.empty() || (parts.shard[0].axis->IsMemory() && parts.shard[0].stride == 1);
}

TileLayout Storage(const TileLayout& layout) {
  LayoutParts parts = LayoutParts::Of(layout), out;
  for (const IterValue& it : parts.shard) {
    if (!it.axis->IsThread()) out.shard.push_back(it);
  }
  for (const IterValue& it : parts.replica) {
    if (!it.axis->IsThread()) out.replica.push_back(it);
  }
  for (const auto& [axis, value] : parts.offset) {
    if (!axis->IsThread()) out.AddOffset(axis, value);
  }
  return out.Build();
}

TileLayout Unpack(const TileLayout& layout, int64_t n) {
  if (n < 1) FailValue("unpack: the element count must be >= 1, got ", n);
  LayoutParts parts = LayoutParts::Of(layout);
  for (auto* iters : {&parts.shard, &parts.replica}) {
    for (IterValue& it : *iters) {
      if (it.axis->IsMemory()) it.stride = CheckedMul(it.stride, n);
    }
  }
  for (auto& [axis, value] : parts.offset) {
    if (axis->IsMemory()) value = CheckedMul(value, n);
  }
  parts.shard.push_back({n, 1, Axis::Get("m")});
  return parts.Build();
}

TileLayout Pack(const TileLayout& layout, int64_t n) {
  if (n < 1) FailValue("pack: the element count must be >= 1, got ", n);
  LayoutParts parts = LayoutParts::Of(layout);
  if (parts.shard.empty()) FailValue("pack: layout ", LayoutString(layout), " has no shard iter to pack");
  IterValue& inner = parts.shard.back();
  // unpack appends its n:1 iter on m, so only an innermost stride-1 iter on m is one unpack could have made.
  if (!inner.axis.same_as(Axis::Get("m")) || inner.stride != 1 || !Divides(n, inner.extent)) {
    FailValue("pack(", n, "): layout ", LayoutString(layout), " cannot be packed: its innermost iter ", inner.extent,
              ":", inner.stride, "@", std::string(inner.axis->name),
              " must be a stride-1 iter on m whose extent is divisible by ", n);
  }
  inner.extent = CheckedDiv(inner.extent, n);
  auto divide = [&](int64_t value, const char* what) {
    if (!Divides(n, value)) {
      FailValue("pack(", n, "): layout ", LayoutString(layout), " has the ", what, " ", value,
                " on a memory axis, which is not a multiple of ", n);
    }
    return CheckedDiv(value, n);
  };
  for (size_t k = 0; k + 1 < parts.shard.size(); ++k) {
    if (parts.shard[k].axis->IsMemory()) parts.shard[k].stride = divide(parts.shard[k].stride, "stride");
  }
  for (IterValue& it : parts.replica) {
    if (it.axis->IsMemory()) it.stride = divide(it.stride, "replica stride");
  }
  for (auto& [axis, value] : parts.offset) {
    if (axis->IsMemory()) value = divide(value, "offset");
  }
  return parts.Build();
}

TileLayout Broadcast(const TileLayout& layout, int64_t n, int64_t position, const Axis& axis) {
  if (n < 1) FailValue("broadcast: the extent must be >= 1, got ", n);
  LayoutParts parts = LayoutParts::Of(layout);
  const int64_t size = static_cast<int64_t>(parts.shard.size());
  // Negative positions count from the end with -1 meaning "after the last iter".
  int64_t at = position >= 0 ? position : size + 1 + position;
  if (at < 0 || at > size) FailValue("broadcast: position ", position, " is outside a shard of ", size, " iters");
  parts.shard.insert(parts.shard.begin() + at, IterValue{n, 0, axis});
  return parts.Build();
}

TileLayout PermuteDims(const TileLayout& layout, const std::vector<int64_t>& perm) {
  LayoutParts parts = LayoutParts::Of(layout);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool valid = sorted.size() == parts.shard.size();
  for (size_t i = 0; valid && i < sorted.size(); ++i) valid = sorted[i] == static_cast<int64_t>(i);
  if (!valid) {
    FailValue("permute_dims: ", ShapeString(perm), " is not a permutation of the ", parts.shard.size(), " shard iters");
  }
  std::vector<IterValue> shard;
  for (int64_t i : perm) shard.push_back(parts.shard[i]);
  parts.shard = shard;
  return parts.Build();
}

TileLayout PermuteByGroups(const TileLayout& layout, const std::vector<int64_t>& seps,
                           const std::vector<int64_t>& perm) {
  const int64_t size = static_cast<int64_t>(layout->shard.size());
  bool valid = seps.size() >= 1 && seps.front() == 0 && seps.back() == size;
  for (size_t i = 1; valid && i < seps.size(); ++i) valid = seps[i - 1] <= seps[i];
  if (!valid) FailValue("permute_by_groups: separators ", ShapeString(seps), " must rise from 0 to ", size);
  if (perm.size() + 1 != seps.size()) {
    FailValue("permute_by_groups: ", ShapeString(perm), " must permute the ", seps.size() - 1, " groups");
  }
  std::vector<int64_t> order;
  std::vector<bool> used(perm.size(), false);
  for (int64_t g : perm) {
    if (g < 0 || g >= static_cast<int64_t>(perm.size()) || used[g]) {
      FailValue("permute_by_groups: ", ShapeString(perm), " is not a permutation of ", perm.size(), " groups");
    }
    used[g] = true;
    for (int64_t k = seps[g]; k < seps[g + 1]; ++k) order.push_back(k);
  }
  return PermuteDims(layout, order);
}

}  // namespace tirx_layout
