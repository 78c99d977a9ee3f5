/*!
 * \file tirx_layout/axis.h
 * \brief Named axes: the hardware or storage coordinates a layout maps onto, interned by name.
 *
 * A thread axis indexes one execution level inside another (laneid: threads within a warp); its `scope` is the
 * level it indexes within and its `subscope` the level one step is. A memory axis (m, TLane, TCol, ...) is a
 * storage coordinate and has neither.
 */
#ifndef TIRX_LAYOUT_AXIS_H_
#define TIRX_LAYOUT_AXIS_H_

#include <tvm/ffi/object.h>
#include <tvm/ffi/optional.h>
#include <tvm/ffi/string.h>

#include <optional>
#include <string>
#include <vector>

namespace tirx_layout {

namespace ffi = tvm::ffi;

/*! \brief Execution levels, outermost first; the numeric value is the scope rank. */
enum class ExecLevel : int { kKernel = 0, kCluster = 1, kCta = 2, kWarpgroup = 3, kWarp = 4, kThread = 5 };

const char* ExecLevelName(ExecLevel level);
/*! \brief Parse a level name ("kernel", "cluster", "cta", "warpgroup", "warp", "thread"); ValueError otherwise. */
ExecLevel ParseExecLevel(const std::string& name);

class AxisObj : public ffi::Object {
 public:
  ffi::String name;
  /*! \brief "thread" or "memory". */
  ffi::String kind;
  ffi::Optional<ffi::String> scope;
  ffi::Optional<ffi::String> subscope;

  bool IsThread() const { return kind == "thread"; }
  bool IsMemory() const { return kind == "memory"; }
  /*! \brief Scope and subscope as levels (C++ only; meaningful for thread axes). */
  ExecLevel scope_level = ExecLevel::kKernel;
  ExecLevel subscope_level = ExecLevel::kKernel;

  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.Axis", AxisObj, ffi::Object);
};

class Axis : public ffi::ObjectRef {
 public:
  /*! \brief The interned axis called `name`; KeyError listing the known axes when there is none. */
  static Axis Get(const std::string& name);
  /*!
   * \brief Register a user axis (idempotent for identical attributes).
   * \param kind "thread" or "memory".
   * \param scope, subscope Level names for a thread axis (scope strictly outside subscope); none for memory axes.
   */
  static Axis Register(const std::string& name, const std::string& kind, std::optional<std::string> scope,
                       std::optional<std::string> subscope);
  /*! \brief Names of every registered axis, built-in first, in registration order. */
  static std::vector<std::string> KnownNames();

  explicit Axis(ffi::ObjectPtr<AxisObj> node) : ffi::ObjectRef(std::move(node)) {}

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(Axis, ffi::ObjectRef, AxisObj);
};

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_AXIS_H_
