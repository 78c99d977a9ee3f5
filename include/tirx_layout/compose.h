/*!
 * \file tirx_layout/compose.h
 * \brief ComposeLayout (SPEC §3): a TileLayout onto the linear axis `m`, then a swizzle of that address.
 */
#ifndef TIRX_LAYOUT_COMPOSE_H_
#define TIRX_LAYOUT_COMPOSE_H_

#include "swizzle.h"
#include "tile_layout.h"

namespace tirx_layout {

class ComposeLayoutObj : public ffi::Object {
 public:
  SwizzleLayout swizzle;
  TileLayout tile_layout;

  ComposeLayoutObj(SwizzleLayout swizzle, TileLayout tile_layout)
      : swizzle(std::move(swizzle)), tile_layout(std::move(tile_layout)) {}

  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.ComposeLayout", ComposeLayoutObj, ffi::Object);
};

class ComposeLayout : public ffi::ObjectRef {
 public:
  /*! \brief ValueError when the tile has an iter or offset on any axis but `m` (naming it). */
  ComposeLayout(SwizzleLayout swizzle, TileLayout tile_layout);

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(ComposeLayout, ffi::ObjectRef, ComposeLayoutObj);
};

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_COMPOSE_H_
