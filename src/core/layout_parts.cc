/*!
 * \file layout_parts.cc
 * \brief Taking layouts apart into plain values and putting them back; the helpers every algebra file shares.
 */
#include <sstream>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {

LayoutParts LayoutParts::Of(const TileLayout& layout) {
  LayoutParts parts;
  for (const Iter& it : layout->shard) parts.shard.push_back({it->extent, it->stride, it->axis});
  for (const Iter& it : layout->replica) parts.replica.push_back({it->extent, it->stride, it->axis});
  for (const auto& [axis, value] : layout->offset) {
    std::optional<int64_t> v = AsStaticInt(value);
    if (!v) FailType("the layout algebra takes integer offsets; axis '", std::string(axis->name), "' has a symbolic one");
    parts.AddOffset(axis, *v);
  }
  return parts;
}

TileLayout LayoutParts::Build() const {
  auto iters = [](const std::vector<IterValue>& values) {
    ffi::Array<Iter> out;
    for (const IterValue& v : values) out.push_back(Iter(v.extent, v.stride, v.axis));
    return out;
  };
  ffi::Map<Axis, ffi::Any> off;
  for (const auto& [axis, value] : offset) off.Set(axis, value);
  return TileLayout(iters(shard), iters(replica), off);
}

void LayoutParts::AddOffset(const Axis& axis, int64_t value) {
  for (auto& [a, v] : offset) {
    if (a.same_as(axis)) {
      v = CheckedAdd(v, value);
      return;
    }
  }
  offset.emplace_back(axis, value);
}

int64_t LayoutParts::OffsetOn(const Axis& axis) const {
  for (const auto& [a, v] : offset) {
    if (a.same_as(axis)) return v;
  }
  return 0;
}

int64_t LayoutParts::SpanOn(const Axis& axis) const {
  int64_t span = 1;
  for (const auto* iters : {&shard, &replica}) {
    for (const IterValue& it : *iters) {
      if (it.axis.same_as(axis)) span = CheckedAdd(span, CheckedMul(it.extent - 1, it.stride));
    }
  }
  return CheckedAdd(span, OffsetOn(axis));
}

bool LayoutParts::ShardUses(const Axis& axis) const {
  for (const IterValue& it : shard) {
    if (it.extent > 1 && it.axis.same_as(axis)) return true;
  }
  return false;
}

int64_t ShapeSize(const std::vector<int64_t>& shape, const char* what) {
  int64_t size = 1;
  for (int64_t e : shape) {
    if (e < 1) FailValue(what, " ", ShapeString(shape), " has an extent < 1");
    size = CheckedMul(size, e);
  }
  return size;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

namespace {

void PrintIters(std::ostringstream& os, const char* kind, const ffi::Array<Iter>& iters) {
  auto stride = [&](const Iter& it) {
    os << it->stride;
    if (it->axis->name != "m") os << "@" << std::string(it->axis->name);
  };
  os << kind << "[";
  if (iters.size() == 1) {
    os << iters[0]->extent << ":";
    stride(iters[0]);
  } else {
    os << "(";
    for (size_t i = 0; i < iters.size(); ++i) os << (i ? ", " : "") << iters[i]->extent;
    os << ")";
    if (!iters.empty()) {
      os << ":(";
      for (size_t i = 0; i < iters.size(); ++i) {
        if (i) os << ", ";
        stride(iters[i]);
      }
      os << ")";
    }
  }
  os << "]";
}

}  // namespace

std::string LayoutString(const TileLayout& layout) {
  std::ostringstream os;
  PrintIters(os, "S", layout->shard);
  if (!layout->replica.empty()) {
    os << " + ";
    PrintIters(os, "R", layout->replica);
  }
  for (const auto& [axis, value] : layout->offset) {
    os << " + ";
    if (auto v = AsStaticInt(value)) {
      os << *v;
    } else {
      os << "<expr>";
    }
    if (axis->name != "m") os << "@" << std::string(axis->name);
  }
  return os.str();
}

}  // namespace tirx_layout
