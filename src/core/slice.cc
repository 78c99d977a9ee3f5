/*!
 * \file slice.cc
 * \brief slice (SPEC §2): the layout of an axis-aligned sub-box of a buffer, when it is affine in this model.
 */
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
  std::optional<Grouped> grouped = GroupForSlice(layout, shape);
  if (!grouped) return std::nullopt;

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
    if (!SliceGroup(group, *begins[d], extents[d], &out.shard, &out)) return std::nullopt;
  }
  return Canonicalize(out.Build(), false);
}

}  // namespace tirx_layout
