/*!
 * \file tirx_layout/tile_layout.h
 * \brief TileLayout: shard iters place a logical tile, replica iters add copies, an offset shifts everything.
 *
 * For a logical coordinate flattened row-major to `flat`, the shard extents split `flat` mixed-radix (last iter
 * fastest, the first component unreduced); component `c_k` contributes `c_k * stride_k` on `axis_k`; the offset
 * is added per axis. Every replica combination adds `sum_t r_t * stride_t` on its axes.
 */
#ifndef TIRX_LAYOUT_TILE_LAYOUT_H_
#define TIRX_LAYOUT_TILE_LAYOUT_H_

#include <tvm/ffi/any.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "axis.h"
#include "iter.h"

namespace tirx_layout {

/*! \brief What the thread axes of a layout say about where it executes. */
struct ScopeChain {
  /*! \brief False when no shard iter is on a thread axis: the layout has no execution scope. */
  bool has_scope = false;
  /*! \brief False when the thread axes do not form one connected chain of levels. */
  bool well_formed = true;
  /*! \brief Why the chain is ill-formed (empty when well-formed). */
  std::string problem;
  /*! \brief Innermost subscope and outermost scope of the chain. */
  ExecLevel inner = ExecLevel::kThread;
  ExecLevel outer = ExecLevel::kKernel;
};

class TileLayoutObj : public ffi::Object {
 public:
  ffi::Array<Iter> shard;
  ffi::Array<Iter> replica;
  /*!
   * \brief Offset per axis: an int or a symbolic expression object (a TVM PrimExpr). The core computes with the
   *        integer offsets; the Python layer adds symbolic ones.
   */
  ffi::Map<Axis, ffi::Any> offset;

  TileLayoutObj(ffi::Array<Iter> shard, ffi::Array<Iter> replica, ffi::Map<Axis, ffi::Any> offset)
      : shard(std::move(shard)), replica(std::move(replica)), offset(std::move(offset)) {}

  /*! \brief Product of the shard extents, of all axes or of those on `axis`. */
  int64_t Size(const std::optional<std::string>& axis) const;
  /*!
   * \brief `1 + sum (e-1)*s + sum offsets` over shard and replica iters and integer offsets on memory axes, or on
   *        `axis` only when given (thread axes included then). Symbolic offsets are left to the caller.
   */
  int64_t StaticSpan(const std::optional<std::string>& axis) const;
  /*! \brief Number of replica places of one element: the product of the replica extents. */
  int64_t NumReplicas() const;
  /*! \brief Resolve the chain of thread-axis levels (see ScopeChain). */
  ScopeChain ResolveScope() const;
  /*! \brief The integer offset on `axis` (0 when absent or symbolic). */
  int64_t StaticOffset(const Axis& axis) const;
  /*! \brief True when the offset has a non-integer (symbolic) entry. */
  bool HasSymbolicOffset() const;

  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.TileLayout", TileLayoutObj, ffi::Object);
};

class TileLayout : public ffi::ObjectRef {
 public:
  /*!
   * \brief Validate and build. Offsets must be ints or objects (symbolic); ValueError when any span or size of
   *        the layout overflows int64.
   */
  TileLayout(ffi::Array<Iter> shard, ffi::Array<Iter> replica, ffi::Map<Axis, ffi::Any> offset);

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(TileLayout, ffi::ObjectRef, TileLayoutObj);
};

/*! \brief The integer value of an offset entry, or nullopt when it is symbolic. */
std::optional<int64_t> AsStaticInt(const ffi::Any& value);

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_TILE_LAYOUT_H_
