/*!
 * \file slice.cc
 * \brief slice (SPEC §2): the layout of an axis-aligned sub-box of a buffer, when it is affine in this model.
 */
#include <algorithm>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {
namespace {

/*!
 * \brief Slice one dimension whose coordinate is split by `group` (slowest first) to [begin, begin + count).
 *
 * The sub-range is affine when, for some digit j, it is `m` consecutive values of digit j with every faster digit
 * complete: count = m * Q_j with Q_j the product of the faster extents, begin a multiple of Q_j, and the digit not
 * carrying (digit_j(begin) + m <= E_j). The slowest digits are then fixed at begin's and go to the offset.
 */
bool SliceGroup(const std::vector<IterValue>& group, int64_t begin, int64_t count, std::vector<IterValue>* out,
                LayoutParts* offsets) {
  int64_t faster = 1;  // Q_j
  for (size_t j = group.size(); j-- > 0;) {
    const IterValue& it = group[j];
    if (Divides(faster, count) && Divides(faster, begin)) {
      int64_t m = CheckedDiv(count, faster);
      int64_t digit = FloorMod(CheckedDiv(begin, faster), it.extent);
      if (j == 0 || digit + m <= it.extent) {
        if (j == 0) digit = CheckedDiv(begin, faster);  // the slowest digit is not reduced
        out->push_back({m, it.stride, it.axis});
        for (size_t l = j + 1; l < group.size(); ++l) out->push_back(group[l]);
        offsets->AddOffset(it.axis, CheckedMul(digit, it.stride));
        int64_t slower = CheckedMul(faster, it.extent);
        for (size_t l = j; l-- > 0;) {
          offsets->AddOffset(group[l].axis, CheckedMul(FloorMod(CheckedDiv(begin, slower), group[l].extent), group[l].stride));
          slower = CheckedMul(slower, group[l].extent);
        }
        return true;
      }
    }
    faster = CheckedMul(faster, it.extent);
  }
  return false;
}

std::optional<Grouped> GroupForSlice(const TileLayout& layout, const std::vector<int64_t>& shape) {
  std::string why;
  // The canonical form has the fewest iters per dimension, which makes more sub-boxes affine; a layout whose
  // fused iters straddle the shape still groups in its own form.
  if (auto grouped = TryGroup(Canonicalize(layout, false), shape, &why)) return grouped;
  return TryGroup(layout, shape, &why);
}

/*! \brief Sub-boxes with more elements than this are not searched element by element (see SliceByValues). */
constexpr int64_t kMaxEnumeratedSlice = int64_t{1} << 20;

/*! \brief The places of a sub-box, element by element (row-major over the box), one value per axis of `axes`. */
struct BoxValues {
  std::vector<Axis> axes;
  std::vector<int64_t> values;  // element t, axis a at t * axes.size() + a

  int64_t At(int64_t t, size_t a) const { return values[t * axes.size() + a]; }
};

BoxValues PlacesOfBox(const LayoutParts& parts, const std::vector<int64_t>& shape, const std::vector<int64_t>& begins,
                      const std::vector<int64_t>& extents, int64_t count) {
  BoxValues box;
  auto axis_index = [&](const Axis& axis) {
    for (size_t a = 0; a < box.axes.size(); ++a) {
      if (box.axes[a].same_as(axis)) return a;
    }
    box.axes.push_back(axis);
    return box.axes.size() - 1;
  };
  std::vector<size_t> shard_axis;
  for (const IterValue& it : parts.shard) shard_axis.push_back(axis_index(it.axis));
  std::vector<std::pair<size_t, int64_t>> offset;
  for (const auto& [axis, value] : parts.offset) offset.emplace_back(axis_index(axis), value);
  const size_t width = box.axes.size();
  box.values.assign(static_cast<size_t>(count) * width, 0);
  std::vector<int64_t> coord(shape.size());
  for (int64_t t = 0; t < count; ++t) {
    int64_t rest = t;
    for (size_t d = shape.size(); d-- > 0;) {
      coord[d] = begins[d] + CheckedMod(rest, extents[d]);
      rest = CheckedDiv(rest, extents[d]);
    }
    int64_t flat = 0;  // the buffer's row-major index, then split by the shard extents (slowest first)
    for (size_t d = 0; d < shape.size(); ++d) flat = CheckedAdd(CheckedMul(flat, shape[d]), coord[d]);
    int64_t* row = &box.values[t * width];
    for (size_t i = parts.shard.size(); i-- > 0;) {
      const IterValue& it = parts.shard[i];
      int64_t digit = i == 0 ? flat : CheckedMod(flat, it.extent);
      flat = i == 0 ? 0 : CheckedDiv(flat, it.extent);
      row[shard_axis[i]] = CheckedAdd(row[shard_axis[i]], CheckedMul(digit, it.stride));
    }
    for (const auto& [a, value] : offset) row[a] = CheckedAdd(row[a], value);
  }
  return box;
}

/*!
 * \brief Iters (fastest first) whose mixed-radix sum gives `box` at elements 0, step, 2*step, ... (`n` of them),
 *        relative to element 0; nullopt when none exist. Exhaustive: the fastest iter's extent must divide `n` and
 *        the values must grow linearly along it, so every such extent is tried (largest first) and the rest is the
 *        same question on every extent-th element.
 */
std::optional<std::vector<IterValue>> FactorValues(const BoxValues& box, int64_t step, int64_t n,
                                                   const Axis& zero_axis) {
  if (n == 1) return std::vector<IterValue>{};
  const size_t width = box.axes.size();
  auto delta = [&](int64_t k, size_t a) { return CheckedSub(box.At(k * step, a), box.At(0, a)); };
  std::optional<size_t> moving;
  for (size_t a = 0; a < width; ++a) {
    if (delta(1, a) == 0) continue;
    if (moving) return std::nullopt;  // one step moves two axes: no iter does that
    moving = a;
  }
  Axis axis = moving ? box.axes[*moving] : zero_axis;
  int64_t stride = moving ? delta(1, *moving) : 0;
  auto linear_at = [&](int64_t c) {
    for (size_t a = 0; a < width; ++a) {
      int64_t want = moving && a == *moving ? CheckedMul(c, stride) : 0;
      if (delta(c, a) != want) return false;
    }
    return true;
  };
  int64_t run = 2;
  while (run < n && linear_at(run)) ++run;
  for (int64_t extent = std::min(run, n); extent >= 2; --extent) {
    if (!Divides(extent, n)) continue;
    bool repeats = true;  // element c = the (c / extent)-th block start plus (c % extent) steps
    for (int64_t c = 0; c < n && repeats; ++c) {
      for (size_t a = 0; a < width && repeats; ++a) {
        int64_t within = moving && a == *moving ? CheckedMul(CheckedMod(c, extent), stride) : 0;
        repeats = delta(c, a) == CheckedAdd(delta(c - CheckedMod(c, extent), a), within);
      }
    }
    if (!repeats) continue;
    if (auto rest = FactorValues(box, CheckedMul(step, extent), CheckedDiv(n, extent), zero_axis)) {
      rest->insert(rest->begin(), IterValue{extent, stride, axis});
      return rest;
    }
  }
  return std::nullopt;
}

/*!
 * \brief Slice by the values themselves, for sub-boxes the per-dimension rule misses (a range that carries across
 *        digits, like columns 6..9 of a (4, 4) split): the box's places are computed element by element and
 *        factored into iters exactly, so nullopt means no TileLayout has these places.
 */
std::optional<TileLayout> SliceByValues(const TileLayout& layout, const std::vector<int64_t>& shape,
                                        const std::vector<int64_t>& begins, const std::vector<int64_t>& extents) {
  int64_t count = 1;
  for (int64_t e : extents) count = CheckedMul(count, e);
  if (count > kMaxEnumeratedSlice) return std::nullopt;
  LayoutParts parts = LayoutParts::Of(Canonicalize(layout, false));
  int64_t size = 1;
  for (const IterValue& it : parts.shard) size = CheckedMul(size, it.extent);
  if (size != ShapeSize(shape, "slice shape")) return std::nullopt;  // a buffer of another size: not this layout's
  BoxValues box = PlacesOfBox(parts, shape, begins, extents, count);
  // An iter that does not move takes the axis of a stride-0 iter of the layout (what a broadcast was on), else m.
  Axis zero_axis = Axis::Get("m");
  for (const IterValue& it : parts.shard) {
    if (it.stride == 0 && it.extent > 1) {
      zero_axis = it.axis;
      break;
    }
  }
  std::optional<std::vector<IterValue>> iters = FactorValues(box, 1, count, zero_axis);
  if (!iters) return std::nullopt;
  LayoutParts out;
  out.shard.assign(iters->rbegin(), iters->rend());
  out.replica = parts.replica;
  for (size_t a = 0; a < box.axes.size(); ++a) out.AddOffset(box.axes[a], box.At(0, a));
  return Canonicalize(out.Build(), false);
}

}  // namespace

std::optional<TileLayout> Slice(const TileLayout& layout, const std::vector<int64_t>& shape,
                                const std::vector<std::optional<int64_t>>& begins,
                                const std::vector<int64_t>& extents, std::vector<SymbolicBeginTerm>* symbolic_terms) {
  if (begins.size() != shape.size() || extents.size() != shape.size()) {
    FailValue("slice: region has ", begins.size(), " dimensions but shape ", ShapeString(shape), " has ", shape.size());
  }
  ShapeSize(shape, "slice shape");
  for (size_t d = 0; d < shape.size(); ++d) {
    if (extents[d] < 1) FailValue("slice: region of dimension ", d, " is empty or reversed (extent ", extents[d], ")");
    if (begins[d] && (*begins[d] < 0 || CheckedAdd(*begins[d], extents[d]) > shape[d])) {
      FailValue("slice: region [", *begins[d], ", ", *begins[d] + extents[d], ") of dimension ", d,
                " is outside [0, ", shape[d], ")");
    }
  }
  bool all_static = std::all_of(begins.begin(), begins.end(), [](const auto& b) { return b.has_value(); });
  auto by_values = [&]() -> std::optional<TileLayout> {
    if (!all_static) return std::nullopt;
    std::vector<int64_t> static_begins;
    for (const auto& b : begins) static_begins.push_back(*b);
    return SliceByValues(layout, shape, static_begins, extents);
  };
  std::optional<Grouped> grouped = GroupForSlice(layout, shape);
  if (!grouped) return by_values();

  LayoutParts parts = LayoutParts::Of(grouped->layout);
  LayoutParts out;
  out.replica = parts.replica;
  out.offset = parts.offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<IterValue> group(parts.shard.begin() + grouped->seps[d], parts.shard.begin() + grouped->seps[d + 1]);
    if (!begins[d]) {
      // A symbolic begin moves along the dimension's one iter (unit iters aside); the caller adds begin * stride.
      std::vector<IterValue> moving;
      for (const IterValue& it : group) {
        if (it.extent != 1) moving.push_back(it);
      }
      if (moving.size() > 1) return std::nullopt;
      const IterValue& it = moving.empty() ? group.front() : moving.front();
      out.shard.push_back({extents[d], it.stride, it.axis});
      symbolic_terms->push_back({d, it.axis, it.stride});
      continue;
    }
    if (!SliceGroup(group, *begins[d], extents[d], &out.shard, &out)) return by_values();
  }
  return Canonicalize(out.Build(), false);
}

}  // namespace tirx_layout
