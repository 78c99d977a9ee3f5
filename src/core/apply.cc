/*!
 * \file apply.cc
 * \brief Integer forward map of a TileLayout (SPEC §2 "Forward map"), for one coordinate or many.
 */
#include "tirx_layout/apply.h"

#include <algorithm>

#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"

namespace tirx_layout {

CoordForm ParseCoordForm(int64_t form) {
  if (form < 0 || form > 2) FailValue("unknown coordinate form ", form);
  return static_cast<CoordForm>(form);
}

Placer::Placer(const TileLayoutObj& layout, bool with_replicas) {
  auto index_of = [this](const Axis& axis) {
    auto pos = std::find_if(axes_.begin(), axes_.end(), [&](const Axis& a) { return a.same_as(axis); });
    if (pos != axes_.end()) return static_cast<size_t>(pos - axes_.begin());
    axes_.push_back(axis);
    return axes_.size() - 1;
  };
  for (const Iter& it : layout.shard) {
    int64_t e = it->extent;
    int log2 = (e & (e - 1)) == 0 ? __builtin_ctzll(static_cast<uint64_t>(e)) : -1;
    shard_.push_back(Term{e, it->stride, index_of(it->axis), log2});
  }
  for (const auto& [axis, value] : layout.offset) index_of(axis);
  if (with_replicas) {
    for (const Iter& it : layout.replica) index_of(it->axis);
  }

  const size_t num_axes = axes_.size();
  base_offset_.assign(num_axes, 0);
  for (const auto& [axis, value] : layout.offset) base_offset_[index_of(axis)] = layout.StaticOffset(axis);

  places_ = with_replicas ? layout.NumReplicas() : 1;
  replica_delta_.assign(static_cast<size_t>(places_) * num_axes, 0);
  if (!with_replicas) return;
  // Replica combination r enumerates the replica iters row-major (first iter slowest), like the shard split.
  for (int64_t r = 0; r < places_; ++r) {
    int64_t rest = r;
    int64_t* row = &replica_delta_[static_cast<size_t>(r) * num_axes];
    for (size_t t = layout.replica.size(); t-- > 0;) {
      const Iter& it = layout.replica[t];
      int64_t step = CheckedMod(rest, it->extent);
      rest = CheckedDiv(rest, it->extent);
      size_t a = index_of(it->axis);
      row[a] = CheckedAdd(row[a], CheckedMul(step, it->stride));
    }
  }
}

void Placer::CheckArity(CoordForm form, size_t num_coords, const std::vector<int64_t>& shape) const {
  switch (form) {
    case CoordForm::kFlat:
      if (num_coords != 1) FailValue("a flat coordinate is one value, got ", num_coords);
      return;
    case CoordForm::kShard:
      if (num_coords != shard_.size()) {
        FailValue("apply takes one flat index or one coordinate per shard iter (", shard_.size(), "), got ",
                  num_coords, " coordinates; pass shape=... to apply a coordinate of another logical shape");
      }
      return;
    case CoordForm::kShaped:
      if (num_coords != shape.size()) {
        FailValue("coordinate has ", num_coords, " values but shape has ", shape.size(), " dimensions");
      }
      for (int64_t s : shape) {
        if (s < 1) FailValue("shape extents must be >= 1, got ", s);
      }
      return;
  }
}

void Placer::Place(CoordForm form, const int64_t* const* columns, const std::vector<int64_t>& shape, int64_t n,
                   int64_t* out) const {
  // Everything the loop reads, in locals: `out` may not alias them, so the compiler keeps them in registers.
  const size_t num_axes = axes_.size(), num_terms = shard_.size(), rank = shape.size();
  const Term* terms = shard_.data();
  const int64_t* base = base_offset_.data();
  const int64_t* dims = shape.data();
  int64_t* __restrict__ dst = out;
  for (int64_t i = 0; i < n; ++i) {
    for (size_t a = 0; a < num_axes; ++a) dst[static_cast<int64_t>(a) * n + i] = base[a];
    auto add = [&](const Term& t, int64_t c) {
      int64_t& v = dst[static_cast<int64_t>(t.axis_index) * n + i];
      v = CheckedAdd(v, CheckedMul(c, t.stride));
    };

    if (form == CoordForm::kShard) {
      for (size_t k = 0; k < num_terms; ++k) add(terms[k], columns[k][i]);
    } else {
      int64_t flat = 0;
      if (form == CoordForm::kFlat) {
        flat = columns[0][i];
      } else {
        for (size_t d = 0; d < rank; ++d) flat = CheckedAdd(CheckedMul(flat, dims[d]), columns[d][i]);
      }
      // Last iter fastest; the first component takes what is left, unreduced, so out-of-range input spills there.
      for (size_t k = num_terms; k-- > 1;) {
        const Term& t = terms[k];
        if (t.log2_extent >= 0) {
          // Two's complement: the mask is the floor modulo, the arithmetic shift the floor quotient, negatives too.
          add(t, flat & (t.extent - 1));
          flat >>= t.log2_extent;
        } else {
          add(t, FloorMod(flat, t.extent));
          flat = FloorDiv(flat, t.extent);
        }
      }
      if (num_terms > 0) add(terms[0], flat);
    }

    for (int64_t r = 1; r < places_; ++r) {
      const int64_t* delta = &replica_delta_[static_cast<size_t>(r) * num_axes];
      for (size_t a = 0; a < num_axes; ++a) {
        dst[static_cast<int64_t>(r * num_axes + a) * n + i] = CheckedAdd(dst[static_cast<int64_t>(a) * n + i], delta[a]);
      }
    }
  }
}

}  // namespace tirx_layout
