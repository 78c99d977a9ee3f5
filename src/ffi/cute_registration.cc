/*!
 * \file ffi/cute_registration.cc
 * \brief FFI surface of the CuTe algebra: the layout and swizzle objects and the `tirx_layout.Cute*` globals.
 *
 * A layout crosses the boundary as its nested shape (ints and arrays) plus its flat strides (values and axis
 * names), in leaf order; everything else stays in C++.
 */
#include <algorithm>

#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <tvm/ffi/string.h>

#include "tirx_layout/checked.h"
#include "tirx_layout/cute.h"
#include "tirx_layout/error.h"

namespace tirx_layout {
namespace {

namespace refl = tvm::ffi::reflection;
using cute::Layout;

Layout Build(const ffi::Any& shape, const ffi::Array<int64_t>& values, const ffi::Array<ffi::String>& axes,
             size_t* next, int depth = 0) {
  if (auto array = shape.try_cast<ffi::Array<ffi::Any>>()) {
    if (depth >= 64) FailValue("a CuTe shape nests deeper than 64 levels");
    std::vector<Layout> modes;
    for (const ffi::Any& child : *array) modes.push_back(Build(child, values, axes, next, depth + 1));
    if (modes.empty()) FailValue("a CuTe shape tuple must not be empty");
    return Layout::Tuple(std::move(modes));
  }
  auto extent = shape.try_cast<int64_t>();
  if (!extent || shape.type_index() == ffi::TypeIndex::kTVMFFIBool) {
    FailType("a CuTe shape entry must be an int or a tuple, got ", shape.GetTypeKey());
  }
  if (*next >= values.size()) FailValue("the stride has fewer entries than the shape");
  const size_t k = (*next)++;
  return Layout::Leaf(*extent, cute::Stride(values[k], std::string(axes[k])));
}

const Layout& Value(const CuteLayout& l) { return l->value; }

/*!
 * \brief Append `l` in preorder to `out`: a tuple of k modes as -k, a leaf as (extent, stride value, axis index into
 *        `axes`, -1 for a zero stride). One flat integer list crosses the FFI boundary instead of one call per field.
 */
void Encode(const Layout& l, const std::vector<std::string>& axes, std::vector<int64_t>* out) {
  if (!l.is_leaf) {
    out->push_back(-static_cast<int64_t>(l.modes.size()));
    for (const Layout& m : l.modes) Encode(m, axes, out);
    return;
  }
  int64_t axis = -1;
  if (l.leaf.stride.value != 0) {
    axis = static_cast<int64_t>(std::find(axes.begin(), axes.end(), l.leaf.stride.axis) - axes.begin());
  }
  out->insert(out->end(), {l.leaf.shape, l.leaf.stride.value, axis});
}

int64_t* Int64Data(const ffi::Tensor& t, const char* what, int64_t length) {
  DLDataType dtype = t.dtype();
  if (dtype.code != kDLInt || dtype.bits != 64 || dtype.lanes != 1) FailType(what, " must be int64");
  if (t.device().device_type != kDLCPU || !t.IsContiguous()) FailValue(what, " must be a contiguous host array");
  int64_t n = 1;
  for (int64_t extent : t.shape()) n = CheckedMul(n, extent);
  if (length >= 0 && n != length) FailValue(what, " has ", n, " elements, expected ", length);
  return static_cast<int64_t*>(t.data_ptr());
}

template <typename F>
auto Unary(F op) {
  return [op](const CuteLayout& l) { return CuteLayout(op(Value(l))); };
}

template <typename F>
auto Binary(F op) {
  return [op](const CuteLayout& a, const CuteLayout& b) { return CuteLayout(op(Value(a), Value(b))); };
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  refl::ObjectDef<CuteLayoutObj>();
  refl::ObjectDef<CuteSwizzleObj>()
      .def_ro("bits", &CuteSwizzleObj::bits, "Width B of the XOR-ed bit fields.")
      .def_ro("base", &CuteSwizzleObj::base, "Low bits M that never move.")
      .def_ro("shift", &CuteSwizzleObj::shift, "Distance S from the source field down to the target field.");

  refl::GlobalDef()
      .def("tirx_layout.CuteLayoutMake",
           [](const ffi::Any& shape, const ffi::Array<int64_t>& values, const ffi::Array<ffi::String>& axes) {
             if (values.size() != axes.size()) FailValue("malformed CuTe stride list");
             size_t next = 0;
             Layout l = Build(shape, values, axes, &next);
             if (next != values.size()) FailValue("the stride has more entries than the shape");
             return CuteLayout(std::move(l));
           })
      .def("tirx_layout.CuteLayoutParse", [](const ffi::String& text) { return CuteLayout(cute::Parse(text)); })
      .def("tirx_layout.CuteLayoutStr", [](const CuteLayout& l) { return ffi::String(Value(l).ToString()); })
      .def("tirx_layout.CuteLayoutEncoded",
           [](const CuteLayout& l) {
             // Header: the number of axes and the position of the plain one ("", -1 if absent); then the tree.
             const std::vector<std::string>& axes = l->axes;
             const auto plain = std::find(axes.begin(), axes.end(), std::string());
             std::vector<int64_t> out{static_cast<int64_t>(axes.size()),
                                      plain == axes.end() ? -1 : static_cast<int64_t>(plain - axes.begin())};
             Encode(Value(l), axes, &out);
             // As native-endian int64 bytes: Python receives them as `bytes` without a per-element conversion.
             return ffi::Bytes(reinterpret_cast<const char*>(out.data()), out.size() * sizeof(int64_t));
           })
      .def("tirx_layout.CuteLayoutAxes",
           [](const CuteLayout& l) {
             ffi::Array<ffi::String> axes;
             for (const std::string& a : l->axes) axes.push_back(a);
             return axes;
           })
      .def("tirx_layout.CuteLayoutEqual", [](const CuteLayout& a, const CuteLayout& b) { return Value(a) == Value(b); })
      .def("tirx_layout.CuteLayoutTuple",
           [](const ffi::Array<CuteLayout>& modes) {
             if (modes.empty()) FailValue("make_layout needs at least one layout");
             std::vector<Layout> values;
             for (const CuteLayout& m : modes) values.push_back(Value(m));
             return CuteLayout(Layout::Tuple(std::move(values)));
           })
      .def("tirx_layout.CuteLayoutGet", [](const CuteLayout& l, int64_t i) { return CuteLayout(Value(l).Get(i)); })
      .def("tirx_layout.CuteLayoutSize", [](const CuteLayout& l) { return Value(l).Size(); })
      .def("tirx_layout.CuteLayoutRank", [](const CuteLayout& l) { return Value(l).Rank(); })
      .def("tirx_layout.CuteLayoutDepth", [](const CuteLayout& l) { return Value(l).Depth(); })
      .def("tirx_layout.CuteLayoutCosize",
           [](const CuteLayout& l, const ffi::String& axis) { return cute::Cosize(Value(l), cute::Stride(1, axis).axis); })
      .def("tirx_layout.CuteLayoutCall",
           [](const CuteLayout& l, int64_t index) {
             std::vector<int64_t> out(l->axes.size());
             cute::Evaluate(l->flat, l->axes, index, out.data());
             return ffi::Shape(out.begin(), out.end());
           })
      .def("tirx_layout.CuteLayoutCallArray",
           [](const CuteLayout& l, const ffi::Tensor& indices, const ffi::Tensor& out) {
             // out holds one row of len(indices) values per axis of the layout.
             const int64_t* idx = Int64Data(indices, "index array", -1);
             int64_t n = 1;
             for (int64_t extent : indices.shape()) n = CheckedMul(n, extent);
             const int64_t width = static_cast<int64_t>(l->axes.size());
             int64_t* dst = Int64Data(out, "output array", CheckedMul(n, width));
             std::vector<int64_t> place(l->axes.size());
             for (int64_t i = 0; i < n; ++i) {
               cute::Evaluate(l->flat, l->axes, idx[i], place.data());
               for (int64_t a = 0; a < width; ++a) dst[a * n + i] = place[a];
             }
           })
      .def("tirx_layout.CuteCoalesce", Unary(cute::Coalesce))
      .def("tirx_layout.CuteFilter", Unary(cute::Filter))
      .def("tirx_layout.CuteComposition", Binary(cute::Composition))
      .def("tirx_layout.CuteComplement",
           [](const CuteLayout& l, int64_t cotarget) { return CuteLayout(cute::Complement(Value(l), cotarget)); })
      .def("tirx_layout.CuteRightInverse", Unary(cute::RightInverse))
      .def("tirx_layout.CuteLeftInverse", Unary(cute::LeftInverse))
      .def("tirx_layout.CuteLogicalDivide", Binary(cute::LogicalDivide))
      .def("tirx_layout.CuteLogicalProduct", Binary(cute::LogicalProduct))
      .def("tirx_layout.CuteBlockedProduct", Binary(cute::BlockedProduct))
      .def("tirx_layout.CuteRakedProduct", Binary(cute::RakedProduct))
      .def("tirx_layout.CuteSwizzle",
           [](int64_t bits, int64_t base, int64_t shift) { return CuteSwizzle(cute::Swizzle(bits, base, shift)); })
      .def("tirx_layout.CuteSwizzleApply",
           [](const CuteSwizzle& s, int64_t offset) { return s->value().Apply(offset); })
      .def("tirx_layout.CuteSwizzleApplyArray", [](const CuteSwizzle& s, const ffi::Tensor& offsets) {
        int64_t n = 1;
        for (int64_t extent : offsets.shape()) n = CheckedMul(n, extent);
        int64_t* data = Int64Data(offsets, "offset array", n);
        const cute::Swizzle sw = s->value();
        for (int64_t i = 0; i < n; ++i) data[i] = sw.Apply(data[i]);
      });
}

}  // namespace tirx_layout
