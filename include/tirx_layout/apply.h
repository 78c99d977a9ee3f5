/*!
 * \file tirx_layout/apply.h
 * \brief Integer application of a TileLayout: logical coordinates to physical places, one or many at a time.
 */
#ifndef TIRX_LAYOUT_APPLY_H_
#define TIRX_LAYOUT_APPLY_H_

#include <cstdint>
#include <vector>

#include "tile_layout.h"

namespace tirx_layout {

/*! \brief How the caller's coordinates are given. */
enum class CoordForm : int {
  /*! One already-flattened logical index. */
  kFlat = 0,
  /*! One coordinate per shard iter; no flattening or splitting. */
  kShard = 1,
  /*! One coordinate per dimension of a given logical shape, flattened row-major first. */
  kShaped = 2,
};

CoordForm ParseCoordForm(int64_t form);

/*!
 * \brief A layout prepared for repeated application: output axes fixed, replica offsets tabulated.
 *
 * Output axes are the shard axes in order of first occurrence, then offset axes, then (with replicas) the
 * replica axes, each once.
 */
class Placer {
 public:
  Placer(const TileLayoutObj& layout, bool with_replicas);

  const std::vector<Axis>& axes() const { return axes_; }
  /*! \brief Number of places written per element: the replica count with replicas, else 1. */
  int64_t places() const { return places_; }
  /*! \brief Check the coordinate count for `form` (ValueError naming the arity otherwise). */
  void CheckArity(CoordForm form, size_t num_coords, const std::vector<int64_t>& shape) const;
  /*!
   * \brief Map `n` elements. Coordinate j of element i is `columns[j][i]` (arity already checked with CheckArity);
   *        the value on output axis a of replica place r of element i goes to `out[(r * axes + a) * n + i]`.
   *        One element is `n == 1` with each column pointing at one value.
   */
  void Place(CoordForm form, const int64_t* const* columns, const std::vector<int64_t>& shape, int64_t n,
             int64_t* out) const;

 private:
  struct Term {
    int64_t extent;
    int64_t stride;
    size_t axis_index;
    /*! log2(extent) when the extent is a power of two, else -1: splitting then needs no division. */
    int log2_extent;
  };
  std::vector<Axis> axes_;
  std::vector<Term> shard_;
  std::vector<int64_t> base_offset_;
  /*! Replica displacement table: places_ rows of axes_.size() values. */
  std::vector<int64_t> replica_delta_;
  int64_t places_ = 1;
};

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_APPLY_H_
