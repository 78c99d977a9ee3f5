/*!
 * \file tirx_layout/swizzle.h
 * \brief SwizzleLayout (SPEC §3): the XOR permutation of linear shared-memory element addresses.
 *
 * With q = a >> per_element, the `swizzle_len` bits of q at [0, sl) are XOR-ed with the bits at [al, al + sl)
 * (`swizzle_inner`), or the other way round; the low `per_element` bits (one vector) never move. The map is a
 * bijection, periodic with period 2^(pe + sl + al).
 */
#ifndef TIRX_LAYOUT_SWIZZLE_H_
#define TIRX_LAYOUT_SWIZZLE_H_

#include <tvm/ffi/object.h>

#include <cstdint>

namespace tirx_layout {

namespace ffi = tvm::ffi;

class SwizzleLayoutObj : public ffi::Object {
 public:
  int64_t per_element = 0;
  int64_t swizzle_len = 0;
  int64_t atom_len = 0;
  bool swizzle_inner = true;

  SwizzleLayoutObj(int64_t per_element, int64_t swizzle_len, int64_t atom_len, bool swizzle_inner)
      : per_element(per_element), swizzle_len(swizzle_len), atom_len(atom_len), swizzle_inner(swizzle_inner) {}

  /*! \brief The swizzled address of linear element address `address`. */
  int64_t Apply(int64_t address) const {
    const int64_t mask = (int64_t{1} << swizzle_len) - 1;
    // Inner: bits [pe, pe+sl) take the XOR of bits [pe+al, pe+al+sl); outer: the reverse.
    const int64_t low_field = per_element, high_field = per_element + atom_len;
    if (swizzle_inner) return address ^ (((address >> high_field) & mask) << low_field);
    return address ^ (((address >> low_field) & mask) << high_field);
  }
  /*! \brief 2^(pe + sl + al): the swizzle repeats with this period and permutes each period onto itself. */
  int64_t Period() const { return int64_t{1} << (per_element + swizzle_len + atom_len); }

  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.SwizzleLayout", SwizzleLayoutObj, ffi::Object);
};

class SwizzleLayout : public ffi::ObjectRef {
 public:
  /*! \brief ValueError unless per_element >= 0, swizzle_len >= 0, atom_len >= swizzle_len, period within int64. */
  SwizzleLayout(int64_t per_element, int64_t swizzle_len, int64_t atom_len, bool swizzle_inner);

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(SwizzleLayout, ffi::ObjectRef, SwizzleLayoutObj);
};

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_SWIZZLE_H_
