/*!
 * \file tirx_layout/iter.h
 * \brief One (extent, stride, axis) triple of a shard or replica list.
 */
#ifndef TIRX_LAYOUT_ITER_H_
#define TIRX_LAYOUT_ITER_H_

#include <cstdint>

#include "axis.h"

namespace tirx_layout {

class IterObj : public ffi::Object {
 public:
  /*! \brief Number of positions, >= 1. */
  int64_t extent = 1;
  /*! \brief Step on `axis` per position; may be zero (broadcast) or negative. */
  int64_t stride = 0;
  Axis axis;

  explicit IterObj(int64_t extent, int64_t stride, Axis axis) : extent(extent), stride(stride), axis(axis) {}

  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.Iter", IterObj, ffi::Object);
};

class Iter : public ffi::ObjectRef {
 public:
  /*! \brief ValueError when `extent < 1`. */
  Iter(int64_t extent, int64_t stride, Axis axis);

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(Iter, ffi::ObjectRef, IterObj);
};

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_ITER_H_
