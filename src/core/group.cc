/*!
 * \file group.cc
 * \brief group / group_many (SPEC §2): split shard iters so that runs of them line up with a logical shape.
 */
#include <deque>
#include <map>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {

namespace {

/*!
 * \brief The unit iter of a size-1 dimension: it continues the iter before it (same stride and axis), or at the
 *        front sits one step beyond the layout's first iter (stride extent * stride). Its stride means nothing (its
 *        only coordinate is 0); the choice follows upstream so that grouped layouts compare equal.
 */
IterValue UnitIterAt(const std::vector<IterValue>& grouped, const std::vector<IterValue>& original) {
  if (!grouped.empty()) return {1, grouped.back().stride, grouped.back().axis};
  if (original.empty()) return {1, 1, Axis::Get("m")};
  return {1, CheckedMul(original.front().extent, original.front().stride), original.front().axis};
}

}  // namespace

std::optional<Grouped> TryGroup(const TileLayout& layout, const std::vector<int64_t>& shape, std::string* why) {
  const int64_t total = ShapeSize(shape, "group shape");
  const int64_t size = layout->Size(std::nullopt);
  if (total != size) {
    *why = Concat("the layout has ", size, " elements but the shape has ", total);
    return std::nullopt;
  }
  LayoutParts parts = LayoutParts::Of(layout);
  // Unit iters carry nothing: they are dropped, and every size-1 dimension gets a fresh one instead.
  std::deque<IterValue> pending;
  for (const IterValue& it : parts.shard) {
    if (it.extent != 1) pending.push_back(it);
  }
  std::vector<IterValue> grouped;
  std::vector<int64_t> seps{0};
  for (int64_t want : shape) {
    if (want == 1) grouped.push_back(UnitIterAt(grouped, parts.shard));
    while (want > 1) {
      IterValue it = pending.front();  // sizes match, so iters remain while a dimension is unfilled
      pending.pop_front();
      if (Divides(it.extent, want)) {
        grouped.push_back(it);
        want = CheckedDiv(want, it.extent);
      } else if (Divides(want, it.extent)) {
        // The slower part of the iter closes this dimension; the faster part starts the next one.
        grouped.push_back({want, CheckedMul(it.stride, CheckedDiv(it.extent, want)), it.axis});
        pending.push_front({CheckedDiv(it.extent, want), it.stride, it.axis});
        want = 1;
      } else {
        *why = Concat("iter ", it.extent, ":", it.stride, "@", std::string(it.axis->name),
                      " straddles a dimension boundary (", want, " elements left in the dimension)");
        return std::nullopt;
      }
    }
    seps.push_back(static_cast<int64_t>(grouped.size()));
  }
  parts.shard = grouped;
  return Grouped{parts.Build(), seps};
}

std::vector<int64_t> SeparatorsOf(const TileLayout& grouped, const std::vector<int64_t>& shape) {
  std::vector<int64_t> seps{0};
  size_t k = 0;
  for (int64_t want : shape) {
    // A size-1 dimension owns exactly its unit iter; any other consumes iters until their product is reached.
    int64_t have = 1;
    do {
      if (k == grouped->shard.size()) FailValue("layout ", LayoutString(grouped), " is not grouped by ", ShapeString(shape));
      have = CheckedMul(have, grouped->shard[k++]->extent);
    } while (have < want);
    if (have != want) FailValue("layout ", LayoutString(grouped), " is not grouped by ", ShapeString(shape));
    seps.push_back(static_cast<int64_t>(k));
  }
  return seps;
}

Grouped Group(const TileLayout& layout, const std::vector<int64_t>& shape) {
  std::string why;
  std::optional<Grouped> grouped = TryGroup(layout, shape, &why);
  if (!grouped) FailValue("layout ", LayoutString(layout), " cannot be grouped by shape ", ShapeString(shape), ": ", why);
  return *grouped;
}

std::pair<TileLayout, std::vector<std::vector<int64_t>>> GroupMany(const TileLayout& layout,
                                                                   const std::vector<std::vector<int64_t>>& shapes) {
  if (shapes.empty()) FailValue("group_many needs at least one shape");
  // Each shape cuts the flat index range at its cumulative products; the refinement keeps every cut, a repeated
  // cut (a size-1 dimension) as often as some shape repeats it.
  std::vector<std::vector<int64_t>> cuts;
  std::map<int64_t, size_t> multiplicity;
  for (const auto& shape : shapes) {
    int64_t total = ShapeSize(shape, "group_many shape");
    if (total != ShapeSize(shapes[0], "group_many shape")) {
      FailValue("group_many shapes ", ShapeString(shapes[0]), " and ", ShapeString(shape), " have different sizes");
    }
    std::vector<int64_t> c;
    std::map<int64_t, size_t> count;
    int64_t running = 1;
    for (int64_t e : shape) {
      running = CheckedMul(running, e);
      c.push_back(running);
      multiplicity[running] = std::max(multiplicity[running], ++count[running]);
    }
    cuts.push_back(c);
  }
  std::vector<int64_t> refined;
  int64_t previous = 1;
  for (const auto& [cut, times] : multiplicity) {
    if (!Divides(previous, cut)) {
      FailValue("group_many: shapes cut the index range at ", previous, " and ", cut,
                ", which do not nest (no common refinement)");
    }
    refined.push_back(CheckedDiv(cut, previous));
    for (size_t t = 1; t < times; ++t) refined.push_back(1);
    previous = cut;
  }
  Grouped grouped = Group(layout, refined);

  // Position of the k-th occurrence of each cut value in the refined shape, to translate every shape's cuts.
  std::map<int64_t, std::vector<size_t>> position;
  int64_t running = 1;
  for (size_t d = 0; d < refined.size(); ++d) {
    running *= refined[d];
    position[running].push_back(d + 1);
  }
  std::vector<std::vector<int64_t>> seps;
  for (const auto& c : cuts) {
    std::vector<int64_t> s{0};
    std::map<int64_t, size_t> seen;
    for (int64_t cut : c) s.push_back(grouped.seps[position[cut][seen[cut]++]]);
    // Unit dimensions another shape adds after this one's last cut belong to its last dimension.
    if (!c.empty()) s.back() = grouped.seps.back();
    seps.push_back(s);
  }
  return {grouped.layout, seps};
}

}  // namespace tirx_layout
