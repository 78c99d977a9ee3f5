/*!
 * \file tirx_layout/cute.h
 * \brief CuTe layouts over named axes: hierarchical (shape : stride) trees, their algebra, and XOR swizzles.
 *
 * A layout is a leaf mode `s:d` or a tuple of layouts. Its domain is the column-major (first mode fastest) index
 * space of its shape; an integer index splits colexicographically over the flattened modes, the last mode taking
 * whatever is left. A stride is an integer, optionally scaled onto a named axis (`2@laneid`); a plain integer is
 * on the memory axis `m`, so `1@m` is written `1`, and a zero stride carries no axis.
 *
 * Every operation checks its preconditions exactly and throws a ValueError naming the offending mode instead of
 * returning a layout that does not compute the defined function. All arithmetic is overflow-checked.
 */
#ifndef TIRX_LAYOUT_CUTE_H_
#define TIRX_LAYOUT_CUTE_H_

#include <tvm/ffi/object.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tirx_layout {

namespace ffi = tvm::ffi;

namespace cute {

/*! \brief An integer stride scaled onto a named axis; the empty name is the plain integer (axis `m`). */
struct Stride {
  int64_t value = 0;
  std::string axis;

  Stride() = default;
  /*! \brief Normalises `m` to the plain form and a zero value to no axis. */
  Stride(int64_t value, std::string axis = "");

  bool IsPlain() const { return axis.empty(); }
  bool operator==(const Stride& other) const { return value == other.value && axis == other.axis; }
  bool operator!=(const Stride& other) const { return !(*this == other); }
  /*! \brief `value * k` on the same axis (checked). */
  Stride Scaled(int64_t k) const;
  std::string ToString() const;
};

/*! \brief One flat mode: extent and stride. */
struct Mode {
  int64_t shape = 1;
  Stride stride;
};

/*! \brief A hierarchical layout: a leaf mode or a tuple of sub-layouts (value type). */
struct Layout {
  bool is_leaf = true;
  Mode leaf;
  std::vector<Layout> modes;

  /*! \brief A leaf `shape:stride`; ValueError when `shape < 1`. */
  static Layout Leaf(int64_t shape, Stride stride);
  /*! \brief The tuple of `modes` (any number, including one). */
  static Layout Tuple(std::vector<Layout> modes);
  /*! \brief A leaf for one flat mode, else the flat tuple of the modes; `1:0` when there are none. */
  static Layout FromModes(const std::vector<Mode>& modes);

  /*! \brief The leaves, fastest first. */
  std::vector<Mode> Flatten() const;
  /*! \brief Number of top-level modes (1 for a leaf). */
  int64_t Rank() const { return is_leaf ? 1 : static_cast<int64_t>(modes.size()); }
  /*! \brief Nesting depth: 0 for a leaf. */
  int64_t Depth() const;
  /*! \brief Product of the extents. */
  int64_t Size() const;
  /*! \brief Top-level mode `i` (a leaf is its own mode 0); ValueError when out of range. */
  const Layout& Get(int64_t i) const;
  /*! \brief True when every stride is a plain integer. */
  bool IsPlain() const;
  /*! \brief The axes of the strides, in order of first appearance ("" for plain integers). */
  std::vector<std::string> Axes() const;
  /*! \brief CuTe spelling: `((2,4),3):((1@laneid,2),8)`. */
  std::string ToString() const;
  std::string ShapeString() const;
  std::string StrideString() const;

  bool operator==(const Layout& other) const;
  bool operator!=(const Layout& other) const { return !(*this == other); }
};

/*! \brief Parse the CuTe spelling (`s:d`, nested parentheses, `v@axis` strides, optional `_` before integers). */
Layout Parse(const std::string& text);

/*!
 * \brief The place of the index `index` (>= 0) on every axis of `axes` (as returned by Axes()); the last flat
 *        mode is unbounded, as in CuTe.
 */
void Evaluate(const std::vector<Mode>& flat, const std::vector<std::string>& axes, int64_t index, int64_t* out);

/*! \brief `L(size-1) + 1` on `axis` ("" = plain integers); the layout must have non-negative strides there. */
int64_t Cosize(const Layout& layout, const std::string& axis = "");

// ---- algebra (src/cute/algebra.cc) -------------------------------------------------------------------------------

/*! \brief Flatten and merge neighbouring modes with `s0*d0 == d1`; drop extent-1 modes. Same function. */
Layout Coalesce(const Layout& layout);
/*! \brief Coalesce after dropping stride-0 modes (the image without broadcasts); `1:0` when nothing is left. */
Layout Filter(const Layout& layout);
/*!
 * \brief `A o B`: the layout `i -> A(B(i))` with B's shape, composed leaf by leaf of B. ValueError unless every leaf
 *        splits A's coalesced modes into whole runs and the leaves' digits never carry into the next mode of A.
 */
Layout Composition(const Layout& a, const Layout& b);
/*! \brief The layout of the positions below `cotarget` that `layout` does not reach, ordered by stride. */
Layout Complement(const Layout& layout, int64_t cotarget);
/*! \brief The longest `R` with `L(R(i)) == i` on `[0, size(R))`: partial when `size(R) < size(L)`. */
Layout RightInverse(const Layout& layout);
/*! \brief `R` with `R(L(i)) == i` for every `i` in L's domain; L must be injective. */
Layout LeftInverse(const Layout& layout);
/*! \brief `A o (B, complement(B, size(A)))`: B's tiles of A, then the tile index. */
Layout LogicalDivide(const Layout& a, const Layout& b);
/*! \brief `(A, complement(A, size(A) * cosize(B)) o B)`: A repeated at B's places. */
Layout LogicalProduct(const Layout& a, const Layout& b);
/*! \brief The logical product zipped mode by mode, A's mode first: `((A0,B0'),(A1,B1'),...)`. */
Layout BlockedProduct(const Layout& a, const Layout& b);
/*! \brief As BlockedProduct with B's mode first: A's elements interleave across the copies. */
Layout RakedProduct(const Layout& a, const Layout& b);

// ---- swizzle -------------------------------------------------------------------------------------------------

/*! \brief CuTe's Swizzle<B, M, S>: XOR the B bits at M + max(0,S) into the B bits at M - min(0,S). */
struct Swizzle {
  int64_t bits = 0;
  int64_t base = 0;
  int64_t shift = 0;

  /*! \brief ValueError unless bits, base >= 0, |shift| >= bits and the period fits in 62 bits. */
  Swizzle(int64_t bits, int64_t base, int64_t shift);
  int64_t Apply(int64_t offset) const;
};

}  // namespace cute

/*! \brief The FFI object of a CuTe layout; the tree lives in `value` and is read through global functions. */
class CuteLayoutObj : public ffi::Object {
 public:
  cute::Layout value;
  /*! \brief The flat modes and stride axes, precomputed for evaluation. */
  std::vector<cute::Mode> flat;
  std::vector<std::string> axes;

  explicit CuteLayoutObj(cute::Layout v) : value(std::move(v)), flat(value.Flatten()), axes(value.Axes()) {}

  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.cute.Layout", CuteLayoutObj, ffi::Object);
};

class CuteLayout : public ffi::ObjectRef {
 public:
  explicit CuteLayout(cute::Layout value);

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(CuteLayout, ffi::ObjectRef, CuteLayoutObj);
};

class CuteSwizzleObj : public ffi::Object {
 public:
  int64_t bits;
  int64_t base;
  int64_t shift;

  explicit CuteSwizzleObj(const cute::Swizzle& s) : bits(s.bits), base(s.base), shift(s.shift) {}
  cute::Swizzle value() const { return cute::Swizzle(bits, base, shift); }

  static constexpr TVMFFISEqHashKind _type_s_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("tirx_layout.cute.Swizzle", CuteSwizzleObj, ffi::Object);
};

class CuteSwizzle : public ffi::ObjectRef {
 public:
  explicit CuteSwizzle(const cute::Swizzle& s);

  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(CuteSwizzle, ffi::ObjectRef, CuteSwizzleObj);
};

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_CUTE_H_
