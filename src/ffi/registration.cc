/*!
 * \file registration.cc
 * \brief FFI surface of the core: object reflection and the global functions the Python layer calls.
 *
 * Everything here converts arguments, calls the model and converts results back; the algebra lives elsewhere.
 */
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include "tirx_layout/apply.h"
#include "tirx_layout/checked.h"
#include "tirx_layout/compose.h"
#include "tirx_layout/error.h"
#include "tirx_layout/tile_algebra.h"
#include "tirx_layout/tile_layout.h"

namespace tirx_layout {
namespace {

namespace refl = tvm::ffi::reflection;

std::optional<std::string> OptionalName(const ffi::Optional<ffi::String>& name) {
  if (!name) return std::nullopt;
  Axis::Get(std::string(*name));  // unknown names are a KeyError, not a silent zero
  return std::string(*name);
}

ffi::Array<ffi::String> AxisNames(const Placer& placer) {
  ffi::Array<ffi::String> names;
  for (const Axis& a : placer.axes()) names.push_back(a->name);
  return names;
}

/*!
 * \brief The arguments both apply entry points share, unpacked from a variadic call
 *        `(layout, form, with_replicas, [out,] num_shape, shape..., coords...)`. Variadic so that Python passes ints
 *        and tensors straight through, without building FFI arrays: per-call overhead is what per-element apply
 *        pays.
 */
struct ApplyCall {
  TileLayout layout;
  CoordForm form;
  bool with_replicas;
  std::vector<int64_t> shape;
  ffi::PackedArgs coords;

  ApplyCall(ffi::PackedArgs args, int fixed)
      : layout(args[0].cast<TileLayout>()),
        form(ParseCoordForm(args[1].cast<int64_t>())),
        with_replicas(args[2].cast<bool>()),
        coords(args.Slice(0, 0)) {
    int64_t num_shape = args[fixed].cast<int64_t>();
    if (num_shape < 0 || fixed + 1 + num_shape > args.size()) FailValue("malformed apply call");
    for (int64_t d = 0; d < num_shape; ++d) shape.push_back(args[fixed + 1 + d].cast<int64_t>());
    coords = args.Slice(fixed + 1 + static_cast<int>(num_shape));
  }
};

/*!
 * \brief Map one integer coordinate: `(layout, form, with_replicas, num_shape, shape..., coords...)`. The result is
 *        places() rows of axis values, flattened, as a Shape (it reaches Python as a plain tuple).
 */
void ApplyInt(ffi::PackedArgs args, ffi::Any* result) {
  ApplyCall call(args, 3);
  Placer placer(*call.layout.get(), call.with_replicas);
  placer.CheckArity(call.form, call.coords.size(), call.shape);
  std::vector<int64_t> coords;
  for (int i = 0; i < call.coords.size(); ++i) coords.push_back(call.coords[i].cast<int64_t>());
  std::vector<const int64_t*> columns;
  for (const int64_t& c : coords) columns.push_back(&c);
  std::vector<int64_t> out(static_cast<size_t>(placer.places()) * placer.axes().size());
  placer.Place(call.form, columns.data(), call.shape, 1, out.data());
  *result = ffi::Shape(out.begin(), out.end());
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
 * \brief Map many coordinates at once: `(layout, form, with_replicas, out, num_shape, shape..., coords...)`.
 *        Each coordinate tensor holds that coordinate of every element (all of one length N); `out` is a
 *        contiguous int64 buffer of places() x axes x N.
 */
void ApplyArray(ffi::PackedArgs args, ffi::Any* result) {
  ApplyCall call(args, 4);
  auto out = args[3].cast<ffi::Tensor>();
  Placer placer(*call.layout.get(), call.with_replicas);
  placer.CheckArity(call.form, call.coords.size(), call.shape);
  if (call.coords.size() == 0) FailValue("apply needs at least one coordinate array");

  std::vector<ffi::Tensor> tensors;
  for (int i = 0; i < call.coords.size(); ++i) tensors.push_back(call.coords[i].cast<ffi::Tensor>());
  int64_t n = 1;
  for (int64_t extent : tensors[0].shape()) n = CheckedMul(n, extent);
  std::vector<const int64_t*> columns;
  for (const ffi::Tensor& c : tensors) {
    CheckInt64Vector(c, "coordinate array", n);
    columns.push_back(static_cast<const int64_t*>(c.data_ptr()));
  }
  const int64_t width = CheckedMul(placer.places(), static_cast<int64_t>(placer.axes().size()));
  CheckInt64Vector(out, "output array", CheckedMul(width, n));
  int64_t* dst = static_cast<int64_t*>(out.data_ptr());

  placer.Place(call.form, columns.data(), call.shape, n, dst);
}

std::vector<int64_t> Ints(const ffi::Array<int64_t>& values) { return {values.begin(), values.end()}; }

ffi::Shape ToShape(const std::vector<int64_t>& values) { return ffi::Shape(values.begin(), values.end()); }

ffi::Optional<TileLayout> ToOptional(const std::optional<TileLayout>& layout) {
  if (layout) return *layout;
  return std::nullopt;
}

/*!
 * \brief slice with begins that are ints or None (symbolic); returns (layout, [(dim, axis, stride)]) or None. The
 *        all-static case has its own entry point returning just the layout, which is cheaper to hand back.
 */
ffi::Optional<ffi::Tuple<TileLayout, ffi::Array<ffi::Tuple<int64_t, ffi::String, int64_t>>>> SliceEntry(
    const TileLayout& layout, const ffi::Array<int64_t>& shape, const ffi::Array<ffi::Any>& begins,
    const ffi::Array<int64_t>& extents) {
  std::vector<std::optional<int64_t>> begin_values;
  for (const ffi::Any& b : begins) begin_values.push_back(b == nullptr ? std::nullopt : AsStaticInt(b));
  std::vector<SymbolicBeginTerm> terms;
  std::optional<TileLayout> sliced = Slice(layout, Ints(shape), begin_values, Ints(extents), &terms);
  if (!sliced) return std::nullopt;
  ffi::Array<ffi::Tuple<int64_t, ffi::String, int64_t>> out;
  for (const SymbolicBeginTerm& t : terms) {
    out.push_back(ffi::Tuple<int64_t, ffi::String, int64_t>(static_cast<int64_t>(t.dim), t.axis->name, t.stride));
  }
  return ffi::Tuple<TileLayout, ffi::Array<ffi::Tuple<int64_t, ffi::String, int64_t>>>(*sliced, out);
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  using Shape = ffi::Array<int64_t>;
  refl::GlobalDef()
      .def("tirx_layout.TileLayoutCanonicalize", Canonicalize)
      // Group and its separators come back through two calls: a Shape at top level reaches Python as a tuple,
      // one nested in a returned pair costs several times the whole grouping.
      .def("tirx_layout.TileLayoutGroup",
           [](const TileLayout& layout, const Shape& shape) { return Group(layout, Ints(shape)).layout; })
      .def("tirx_layout.TileLayoutSeparators",
           [](const TileLayout& grouped, const Shape& shape) { return ToShape(SeparatorsOf(grouped, Ints(shape))); })
      .def("tirx_layout.TileLayoutHasSymbolicOffset",
           [](const TileLayout& layout) { return layout->HasSymbolicOffset(); })
      .def("tirx_layout.TileLayoutGroupMany",
           [](const TileLayout& layout, const ffi::Array<Shape>& shapes) {
             std::vector<std::vector<int64_t>> values;
             for (const Shape& s : shapes) values.push_back(Ints(s));
             auto [grouped, seps] = GroupMany(layout, values);
             ffi::Array<ffi::Shape> out;
             for (const auto& s : seps) out.push_back(ToShape(s));
             return ffi::Tuple<TileLayout, ffi::Array<ffi::Shape>>(grouped, out);
           })
      .def("tirx_layout.TileLayoutTile",
           [](const TileLayout& inner, const TileLayout& outer, const Shape& outer_shape, const Shape& inner_shape) {
             return Tile(inner, outer, Ints(outer_shape), Ints(inner_shape));
           })
      .def("tirx_layout.TileLayoutIsTileInner",
           [](const TileLayout& inner, const TileLayout& tiled, const Shape& tiled_shape, const Shape& inner_shape,
              bool fuse_thread_axes) {
             return ToOptional(IsTileInner(inner, tiled, Ints(tiled_shape), Ints(inner_shape), fuse_thread_axes));
           })
      .def("tirx_layout.TileLayoutIsTileOuter",
           [](const TileLayout& outer, const TileLayout& tiled, const Shape& tiled_shape, const Shape& outer_shape,
              bool fuse_thread_axes) {
             return ToOptional(IsTileOuter(outer, tiled, Ints(tiled_shape), Ints(outer_shape), fuse_thread_axes));
           })
      .def("tirx_layout.TileLayoutDirectSum",
           [](const TileLayout& right, const TileLayout& left, const Shape& left_shape, const Shape& right_shape) {
             return DirectSum(right, left, Ints(left_shape), Ints(right_shape));
           })
      .def("tirx_layout.TileLayoutIsDirectSumRight",
           [](const TileLayout& right, const TileLayout& sum, const Shape& sum_shape, const Shape& right_shape) {
             return ToOptional(IsDirectSumRight(right, sum, Ints(sum_shape), Ints(right_shape)));
           })
      .def("tirx_layout.TileLayoutIsDirectSumLeft",
           [](const TileLayout& left, const TileLayout& sum, const Shape& sum_shape, const Shape& left_shape) {
             return ToOptional(IsDirectSumLeft(left, sum, Ints(sum_shape), Ints(left_shape)));
           })
      .def("tirx_layout.TileLayoutSlice",
           [](const TileLayout& layout, const Shape& shape, const Shape& begins, const Shape& extents) {
             std::vector<std::optional<int64_t>> begin_values(begins.begin(), begins.end());
             std::vector<SymbolicBeginTerm> unused;
             return ToOptional(Slice(layout, Ints(shape), begin_values, Ints(extents), &unused));
           })
      .def("tirx_layout.TileLayoutSliceSymbolic", SliceEntry)
      .def("tirx_layout.TileLayoutIsTrivial", IsTrivial)
      .def("tirx_layout.TileLayoutStorage", Storage)
      .def("tirx_layout.TileLayoutUnpack", Unpack)
      .def("tirx_layout.TileLayoutPack", Pack)
      .def("tirx_layout.TileLayoutBroadcast", Broadcast)
      .def("tirx_layout.TileLayoutPermuteDims",
           [](const TileLayout& layout, const Shape& perm) { return PermuteDims(layout, Ints(perm)); })
      .def("tirx_layout.TileLayoutPermuteByGroups",
           [](const TileLayout& layout, const Shape& seps, const Shape& perm) {
             return PermuteByGroups(layout, Ints(seps), Ints(perm));
           })
      .def("tirx_layout.SwizzleLayout",
           [](int64_t per_element, int64_t swizzle_len, int64_t atom_len, bool swizzle_inner) {
             return SwizzleLayout(per_element, swizzle_len, atom_len, swizzle_inner);
           })
      .def("tirx_layout.ComposeLayout",
           [](const SwizzleLayout& swizzle, const TileLayout& tile) { return ComposeLayout(swizzle, tile); })
      .def("tirx_layout.SwizzleApplyInt",
           [](const SwizzleLayout& swizzle, int64_t address) { return swizzle->Apply(address); })
      .def("tirx_layout.SwizzleApplyArray",
           [](const SwizzleLayout& swizzle, const ffi::Tensor& addresses) {
             // In place: the caller hands a contiguous int64 array it owns.
             int64_t n = 1;
             for (int64_t extent : addresses.shape()) n = CheckedMul(n, extent);
             CheckInt64Vector(addresses, "address array", n);
             int64_t* data = static_cast<int64_t*>(addresses.data_ptr());
             for (int64_t i = 0; i < n; ++i) data[i] = swizzle->Apply(data[i]);
           })
      .def("tirx_layout.TileLayoutTrainium",
           [](const ffi::String& annotation, const Shape& shape) { return Trainium(std::string(annotation), Ints(shape)); })
      .def("tirx_layout.TileLayoutToPsum", ToPsum)
      .def("tirx_layout.TrainiumPsumGeometry", []() { return ToShape({kPsumBankElements, kPsumBanks}); });
}

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
  refl::ObjectDef<SwizzleLayoutObj>()
      .def_ro("per_element", &SwizzleLayoutObj::per_element, "Low address bits that never move (log2 vector).")
      .def_ro("swizzle_len", &SwizzleLayoutObj::swizzle_len, "Width of the XOR-ed bit field.")
      .def_ro("atom_len", &SwizzleLayoutObj::atom_len, "Distance between the two bit fields.")
      .def_ro("swizzle_inner", &SwizzleLayoutObj::swizzle_inner, "XOR the high field into the low one (True).");
  refl::ObjectDef<ComposeLayoutObj>()
      .def_ro("swizzle", &ComposeLayoutObj::swizzle, "The swizzle applied to the tile's address.")
      .def_ro("tile_layout", &ComposeLayoutObj::tile_layout, "The tile, mapping onto m only.");
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
      .def_packed("tirx_layout.TileLayoutApplyInt", ApplyInt)
      .def_packed("tirx_layout.TileLayoutApplyArray", ApplyArray);
}

}  // namespace tirx_layout
