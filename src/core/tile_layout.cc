/*!
 * \file tile_layout.cc
 * \brief The TileLayout model: construction with validation, size, span, replica count and execution scope.
 */
#include "tirx_layout/tile_layout.h"

#include <map>
#include <string_view>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"

namespace tirx_layout {

Iter::Iter(int64_t extent, int64_t stride, Axis axis) {
  if (extent < 1) FailValue("iter extent must be >= 1, got ", extent, " (stride ", stride, " on axis ",
                            std::string(axis->name), ")");
  data_ = ffi::make_object<IterObj>(extent, stride, std::move(axis));
}

std::optional<int64_t> AsStaticInt(const ffi::Any& value) {
  if (value.type_index() == ffi::TypeIndex::kTVMFFIInt) return value.cast<int64_t>();
  return std::nullopt;
}

namespace {

/*!
 * \brief Whether `value` is a TVM expression (its type or an ancestor is "ir.Expr"; the Python layer has checked
 *        it is an integer PrimExpr). The core has no TVM IR headers, so it asks the FFI type table. Any other object
 *        is not an offset: in particular an `ffi.BigInt`, an int beyond int64, is never taken for a symbolic term.
 */
bool IsExpr(const ffi::Any& value) {
  if (value.type_index() < ffi::TypeIndex::kTVMFFIStaticObjectBegin) return false;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(value.type_index());
  auto is_expr = [](const TVMFFITypeInfo* t) {
    return std::string_view(t->type_key.data, t->type_key.size) == "ir.Expr";
  };
  if (info == nullptr) return false;
  if (is_expr(info)) return true;
  for (int32_t depth = 0; depth < info->type_depth; ++depth) {
    if (is_expr(info->type_ancestors[depth])) return true;
  }
  return false;
}

}  // namespace

TileLayout::TileLayout(ffi::Array<Iter> shard, ffi::Array<Iter> replica, ffi::Map<Axis, ffi::Any> offset) {
  for (const auto& [axis, value] : offset) {
    if (value.type_index() != ffi::TypeIndex::kTVMFFIInt && !IsExpr(value)) {
      FailType("offset on axis '", std::string(axis->name), "' must be an int or a symbolic expression, got ",
               value.GetTypeKey());
    }
  }
  auto node = ffi::make_object<TileLayoutObj>(std::move(shard), std::move(replica), std::move(offset));
  // Reject layouts whose size, replica count or span on some axis is not representable, once, here: every later
  // computation on the layout then stays within int64 for in-range coordinates.
  node->Size(std::nullopt);
  node->NumReplicas();
  node->StaticSpan(std::nullopt);
  for (const auto& iters : {node->shard, node->replica}) {
    for (const Iter& it : iters) node->StaticSpan(std::string(it->axis->name));
  }
  for (const auto& [axis, value] : node->offset) node->StaticSpan(std::string(axis->name));
  data_ = std::move(node);
}

int64_t TileLayoutObj::Size(const std::optional<std::string>& axis) const {
  int64_t size = 1;
  for (const Iter& it : shard) {
    if (!axis || it->axis->name == *axis) size = CheckedMul(size, it->extent);
  }
  return size;
}

int64_t TileLayoutObj::NumReplicas() const {
  int64_t count = 1;
  for (const Iter& it : replica) count = CheckedMul(count, it->extent);
  return count;
}

int64_t TileLayoutObj::StaticSpan(const std::optional<std::string>& axis) const {
  auto counts = [&](const Axis& a) { return axis ? a->name == *axis : a->IsMemory(); };
  int64_t span = 1;
  for (const auto& iters : {shard, replica}) {
    for (const Iter& it : iters) {
      if (counts(it->axis)) span = CheckedAdd(span, CheckedMul(it->extent - 1, it->stride));
    }
  }
  for (const auto& [a, value] : offset) {
    if (!counts(a)) continue;
    if (auto v = AsStaticInt(value)) span = CheckedAdd(span, *v);
  }
  return span;
}

int64_t TileLayoutObj::StaticOffset(const Axis& axis) const {
  auto it = offset.find(axis);
  if (it == offset.end()) return 0;
  return AsStaticInt((*it).second).value_or(0);
}

bool TileLayoutObj::HasSymbolicOffset() const {
  for (const auto& [axis, value] : offset) {
    if (!AsStaticInt(value)) return true;
  }
  return false;
}

ScopeChain TileLayoutObj::ResolveScope() const {
  ScopeChain chain;
  for (const Iter& it : shard) chain.has_scope |= it->axis->IsThread();

  // Each thread axis is one link "subscope -> scope". A well-formed layout has at most one link out of every
  // level, and the links starting at the innermost level reach every link.
  std::map<int, std::pair<int, std::string>> link;  // subscope rank -> (scope rank, axis that set it)
  auto add_link = [&](const Axis& axis) {
    if (!axis->IsThread() || !chain.well_formed) return;
    int from = static_cast<int>(axis->subscope_level);
    int to = static_cast<int>(axis->scope_level);
    auto [pos, inserted] = link.emplace(from, std::make_pair(to, std::string(axis->name)));
    if (!inserted && pos->second.first != to) {
      chain.well_formed = false;
      chain.problem = Concat("axes '", pos->second.second, "' and '", std::string(axis->name),
                             "' both step over ", std::string(*axis->subscope), "s but index within different levels (",
                             ExecLevelName(static_cast<ExecLevel>(pos->second.first)), " vs ",
                             std::string(*axis->scope), ")");
    }
  };
  for (const Iter& it : shard) add_link(it->axis);
  for (const Iter& it : replica) add_link(it->axis);
  for (const auto& [axis, value] : offset) add_link(axis);
  if (!chain.well_formed || link.empty()) return chain;

  int inner = link.rbegin()->first;
  int level = inner;
  size_t visited = 0;
  for (auto pos = link.find(level); pos != link.end(); pos = link.find(level)) {
    ++visited;
    level = pos->second.first;
  }
  if (visited != link.size()) {
    chain.well_formed = false;
    std::string axes;
    for (const auto& [from, entry] : link) axes += (axes.empty() ? "" : ", ") + entry.second;
    chain.problem = Concat("thread axes ", axes, " do not form one connected chain of levels from ",
                           ExecLevelName(static_cast<ExecLevel>(inner)), " outwards");
    return chain;
  }
  chain.inner = static_cast<ExecLevel>(inner);
  chain.outer = static_cast<ExecLevel>(level);
  return chain;
}

}  // namespace tirx_layout
