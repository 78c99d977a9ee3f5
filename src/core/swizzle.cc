/*!
 * \file swizzle.cc
 * \brief SwizzleLayout and ComposeLayout construction with validation, and the swizzle of many addresses.
 */
#include "tirx_layout/compose.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"

namespace tirx_layout {

SwizzleLayout::SwizzleLayout(int64_t per_element, int64_t swizzle_len, int64_t atom_len, bool swizzle_inner) {
  if (per_element < 0) FailValue("SwizzleLayout: per_element must be >= 0, got ", per_element);
  if (swizzle_len < 0) FailValue("SwizzleLayout: swizzle_len must be >= 0, got ", swizzle_len);
  if (atom_len < swizzle_len) {
    FailValue("SwizzleLayout: atom_len must be >= swizzle_len (", swizzle_len, "), got ", atom_len);
  }
  // Each part is bounded before the sum is formed, so the sum cannot wrap (swizzle_len <= atom_len is checked).
  if (per_element > 62 || atom_len > 62 || per_element + swizzle_len + atom_len > 62) {
    FailValue("SwizzleLayout: period 2^(", per_element, " + ", swizzle_len, " + ", atom_len, ") does not fit in int64");
  }
  data_ = ffi::make_object<SwizzleLayoutObj>(per_element, swizzle_len, atom_len, swizzle_inner);
}

ComposeLayout::ComposeLayout(SwizzleLayout swizzle, TileLayout tile_layout) {
  auto reject = [&](const Axis& axis, const char* where) {
    FailValue("ComposeLayout: the tile must map only to the linear axis m, but ", LayoutString(tile_layout), " has ",
              where, " on axis '", std::string(axis->name), "'");
  };
  for (const Iter& it : tile_layout->shard) {
    if (it->axis->name != "m") reject(it->axis, "a shard iter");
  }
  for (const Iter& it : tile_layout->replica) {
    if (it->axis->name != "m") reject(it->axis, "a replica iter");
  }
  for (const auto& [axis, value] : tile_layout->offset) {
    if (axis->name != "m") reject(axis, "an offset");
  }
  data_ = ffi::make_object<ComposeLayoutObj>(std::move(swizzle), std::move(tile_layout));
}

}  // namespace tirx_layout
