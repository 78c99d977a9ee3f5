/*!
 * \file registration.cc
 * \brief FFI surface of the core: object reflection and the global functions the Python layer calls.
 *
 * Everything here converts arguments, calls the model and converts results back; the algebra lives elsewhere.
 */
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include "tirx_layout/apply.h"
#include "tirx_layout/checked.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_layout.h"

namespace tirx_layout {
namespace {

namespace refl = tvm::ffi::reflection;

std::optional<std::string> OptionalName(const ffi::Optional<ffi::String>& name) {
  if (!name) return std::nullopt;
  Axis::Get(std::string(*name));  // unknown names are a KeyError, not a silent zero
  return std::string(*name);
}

std::vector<int64_t> ToVector(const ffi::Array<int64_t>& values) { return {values.begin(), values.end()}; }

ffi::Array<ffi::String> AxisNames(const Placer& placer) {
  ffi::Array<ffi::String> names;
  for (const Axis& a : placer.axes()) names.push_back(a->name);
  return names;
}

/*! \brief Map one integer coordinate; the result is places() rows of axis values, flattened. */
ffi::Array<int64_t> ApplyInt(const TileLayout& layout, int64_t form_code, const ffi::Array<int64_t>& coords,
                             const ffi::Array<int64_t>& shape, bool with_replicas) {
  Placer placer(*layout.get(), with_replicas);
  CoordForm form = ParseCoordForm(form_code);
  std::vector<int64_t> shape_v = ToVector(shape), coords_v = ToVector(coords);
  placer.CheckArity(form, coords_v.size(), shape_v);
  std::vector<int64_t> out(static_cast<size_t>(placer.places()) * placer.axes().size());
  placer.Place(form, coords_v.data(), 1, shape_v, out.data());
  return ffi::Array<int64_t>(out.begin(), out.end());
}

void CheckInt64Vector(const ffi::TensorView& t, const char* what, int64_t length) {
  DLDataType dtype = t.dtype();
  if (dtype.code != kDLInt || dtype.bits != 64 || dtype.lanes != 1) FailType(what, " must be int64");
  if (t.device().device_type != kDLCPU) FailValue(what, " must live in host memory");
  int64_t n = 1;
  for (int64_t extent : t.shape()) n = CheckedMul(n, extent);
  if (n != length) FailValue(what, " has ", n, " elements, expected ", length);
  if (!t.IsContiguous()) FailValue(what, " must be contiguous");
}

/*!
 * \brief Map many coordinates at once. `coords[j]` holds the j-th coordinate value of every element (all of one
 *        length N); `out` is a contiguous int64 buffer of places() x axes x N.
 */
void ApplyArray(const TileLayout& layout, int64_t form_code, const ffi::Array<ffi::Tensor>& coords,
                const ffi::Array<int64_t>& shape, const ffi::Tensor& out, bool with_replicas) {
  Placer placer(*layout.get(), with_replicas);
  CoordForm form = ParseCoordForm(form_code);
  std::vector<int64_t> shape_v = ToVector(shape);
  placer.CheckArity(form, coords.size(), shape_v);
  if (coords.empty()) FailValue("apply needs at least one coordinate array");

  int64_t n = 1;
  for (int64_t extent : coords[0].shape()) n = CheckedMul(n, extent);
  std::vector<const int64_t*> columns;
  for (const ffi::Tensor& c : coords) {
    CheckInt64Vector(c, "coordinate array", n);
    columns.push_back(static_cast<const int64_t*>(c.data_ptr()));
  }
  const int64_t num_axes = static_cast<int64_t>(placer.axes().size());
  const int64_t places = placer.places();
  CheckInt64Vector(out, "output array", CheckedMul(CheckedMul(places, num_axes), n));
  int64_t* dst = static_cast<int64_t*>(out.data_ptr());

  std::vector<int64_t> coord(columns.size());
  std::vector<int64_t> row(static_cast<size_t>(places * num_axes));
  for (int64_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < columns.size(); ++j) coord[j] = columns[j][i];
    placer.Place(form, coord.data(), 1, shape_v, row.data());
    for (int64_t p = 0; p < places * num_axes; ++p) dst[p * n + i] = row[p];
  }
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  refl::ObjectDef<AxisObj>()
      .def_ro("name", &AxisObj::name, "The axis name, unique in the registry.")
      .def_ro("kind", &AxisObj::kind, "'thread' or 'memory'.")
      .def_ro("scope", &AxisObj::scope, "For a thread axis, the execution level it indexes within.")
      .def_ro("subscope", &AxisObj::subscope, "For a thread axis, the execution level one step is.");
  refl::ObjectDef<IterObj>()
      .def_ro("extent", &IterObj::extent, "Number of positions (>= 1).")
      .def_ro("stride", &IterObj::stride, "Step per position on the axis.")
      .def_ro("axis", &IterObj::axis, "The axis the iter moves along.");
  refl::ObjectDef<TileLayoutObj>()
      .def_ro("shard", &TileLayoutObj::shard, "Iters that place the logical tile.")
      .def_ro("replica", &TileLayoutObj::replica, "Iters that enumerate extra copies of every element.")
      .def_ro("offset", &TileLayoutObj::offset, "Per-axis shift added to every place.");

  refl::GlobalDef()
      .def("tirx_layout.AxisGet", [](const ffi::String& name) { return Axis::Get(std::string(name)); })
      .def("tirx_layout.AxisRegister",
           [](const ffi::String& name, const ffi::String& kind, ffi::Optional<ffi::String> scope,
              ffi::Optional<ffi::String> subscope) {
             auto to_std = [](const ffi::Optional<ffi::String>& s) {
               return s ? std::optional<std::string>(std::string(*s)) : std::nullopt;
             };
             return Axis::Register(std::string(name), std::string(kind), to_std(scope), to_std(subscope));
           })
      .def("tirx_layout.AxisKnownNames",
           []() {
             ffi::Array<ffi::String> out;
             for (const auto& n : Axis::KnownNames()) out.push_back(n);
             return out;
           })
      .def("tirx_layout.Iter",
           [](int64_t extent, int64_t stride, const Axis& axis) { return Iter(extent, stride, axis); })
      .def("tirx_layout.TileLayout",
           [](ffi::Array<Iter> shard, ffi::Array<Iter> replica, ffi::Map<Axis, ffi::Any> offset) {
             return TileLayout(shard, replica, offset);
           })
      .def("tirx_layout.TileLayoutSize",
           [](const TileLayout& layout, ffi::Optional<ffi::String> axis) { return layout->Size(OptionalName(axis)); })
      .def("tirx_layout.TileLayoutStaticSpan",
           [](const TileLayout& layout, ffi::Optional<ffi::String> axis) {
             return layout->StaticSpan(OptionalName(axis));
           })
      .def("tirx_layout.TileLayoutNumReplicas", [](const TileLayout& layout) { return layout->NumReplicas(); })
      .def("tirx_layout.TileLayoutScope",
           [](const TileLayout& layout) {
             // (has_scope, well_formed, problem, inner, outer)
             ScopeChain chain = layout->ResolveScope();
             return ffi::Tuple<bool, bool, ffi::String, ffi::String, ffi::String>(
                 chain.has_scope, chain.well_formed, chain.problem, ExecLevelName(chain.inner),
                 ExecLevelName(chain.outer));
           })
      .def("tirx_layout.TileLayoutOutputAxes",
           [](const TileLayout& layout, bool with_replicas) {
             return AxisNames(Placer(*layout.get(), with_replicas));
           })
      .def("tirx_layout.TileLayoutApplyInt", ApplyInt)
      .def("tirx_layout.TileLayoutApplyArray", ApplyArray);
}

}  // namespace tirx_layout
