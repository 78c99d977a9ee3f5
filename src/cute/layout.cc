/*!
 * \file cute/layout.cc
 * \brief The CuTe layout model: construction, flattening, printing and parsing in CuTe's spelling, evaluation,
 *        and the Swizzle functor.
 */
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "tirx_layout/checked.h"
#include "tirx_layout/cute.h"
#include "tirx_layout/error.h"

namespace tirx_layout {
namespace cute {

Stride::Stride(int64_t value, std::string axis) : value(value), axis(std::move(axis)) {
  if (this->axis == "m" || value == 0) this->axis.clear();
}

Stride Stride::Scaled(int64_t k) const { return Stride(CheckedMul(value, k), axis); }

std::string Stride::ToString() const { return axis.empty() ? std::to_string(value) : Concat(value, "@", axis); }

Layout Layout::Leaf(int64_t shape, Stride stride) {
  if (shape < 1) FailValue("a CuTe layout extent must be >= 1, got ", shape);
  Layout l;
  l.leaf = Mode{shape, std::move(stride)};
  return l;
}

Layout Layout::Tuple(std::vector<Layout> modes) {
  Layout l;
  l.is_leaf = false;
  l.modes = std::move(modes);
  return l;
}

Layout Layout::FromModes(const std::vector<Mode>& modes) {
  if (modes.empty()) return Leaf(1, Stride(0));
  if (modes.size() == 1) return Leaf(modes[0].shape, modes[0].stride);
  std::vector<Layout> out;
  for (const Mode& m : modes) out.push_back(Leaf(m.shape, m.stride));
  return Tuple(std::move(out));
}

namespace {

void Collect(const Layout& l, std::vector<Mode>* out) {
  if (l.is_leaf) {
    out->push_back(l.leaf);
    return;
  }
  for (const Layout& m : l.modes) Collect(m, out);
}

template <typename F>
std::string Join(const Layout& l, F leaf) {
  if (l.is_leaf) return leaf(l.leaf);
  std::string s = "(";
  for (size_t i = 0; i < l.modes.size(); ++i) {
    if (i) s += ",";
    s += Join(l.modes[i], leaf);
  }
  return s + ")";
}

}  // namespace

std::vector<Mode> Layout::Flatten() const {
  std::vector<Mode> out;
  Collect(*this, &out);
  return out;
}

int64_t Layout::Depth() const {
  if (is_leaf) return 0;
  int64_t d = 0;
  for (const Layout& m : modes) d = std::max(d, m.Depth());
  return d + 1;
}

int64_t Layout::Size() const {
  int64_t n = 1;
  for (const Mode& m : Flatten()) n = CheckedMul(n, m.shape);
  return n;
}

const Layout& Layout::Get(int64_t i) const {
  if (i < 0 || i >= Rank()) FailValue("mode index ", i, " is out of range for a layout of rank ", Rank());
  return is_leaf ? *this : modes[static_cast<size_t>(i)];
}

bool Layout::IsPlain() const {
  for (const Mode& m : Flatten()) {
    if (!m.stride.IsPlain()) return false;
  }
  return true;
}

std::vector<std::string> Layout::Axes() const {
  std::vector<std::string> axes;
  for (const Mode& m : Flatten()) {
    if (m.stride.value == 0) continue;
    if (std::find(axes.begin(), axes.end(), m.stride.axis) == axes.end()) axes.push_back(m.stride.axis);
  }
  return axes;
}

std::string Layout::ShapeString() const {
  return Join(*this, [](const Mode& m) { return std::to_string(m.shape); });
}

std::string Layout::StrideString() const {
  return Join(*this, [](const Mode& m) { return m.stride.ToString(); });
}

std::string Layout::ToString() const { return ShapeString() + ":" + StrideString(); }

bool Layout::operator==(const Layout& other) const {
  if (is_leaf != other.is_leaf) return false;
  if (is_leaf) return leaf.shape == other.leaf.shape && leaf.stride == other.leaf.stride;
  if (modes.size() != other.modes.size()) return false;
  for (size_t i = 0; i < modes.size(); ++i) {
    if (modes[i] != other.modes[i]) return false;
  }
  return true;
}

// ---- parsing ---------------------------------------------------------------------------------------------------

namespace {

/*! \brief An integer tree as parsed: leaves carry the value and, for strides, an axis. */
struct Parsed {
  bool is_leaf = true;
  Stride value;
  std::vector<Parsed> children;
};

class Parser {
 public:
  /*! \brief Nesting bound: deeper input is refused rather than allowed to exhaust the stack. */
  static constexpr int kMaxDepth = 64;

  explicit Parser(const std::string& text) : text_(text) {}

  Layout Run() {
    Parsed shape = Tree(false);
    Expect(':');
    Parsed stride = Tree(true);
    Skip();
    if (pos_ != text_.size()) Fail("unexpected text");
    return Build(shape, stride);
  }

 private:
  void Skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[noreturn]] void Fail(const std::string& what) {
    FailValue("cannot parse CuTe layout '", text_, "': ", what, " at position ", pos_);
  }
  void Expect(char c) {
    Skip();
    if (pos_ >= text_.size() || text_[pos_] != c) Fail(Concat("expected '", c, "'"));
    ++pos_;
  }
  int64_t Integer() {
    Skip();
    if (pos_ < text_.size() && text_[pos_] == '_') ++pos_;  // CuTe prints static integers as _4
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::string digits = text_.substr(start, pos_ - start);
    if (digits.empty() || digits == "-") Fail("expected an integer");
    errno = 0;
    long long v = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) Fail(Concat("integer ", digits, " does not fit in int64"));
    return static_cast<int64_t>(v);
  }
  std::string Name() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (start == pos_ || std::isdigit(static_cast<unsigned char>(text_[start]))) Fail("expected an axis name");
    return text_.substr(start, pos_ - start);
  }
  Parsed Tree(bool stride, int depth = 0) {
    Skip();
    Parsed node;
    if (pos_ < text_.size() && text_[pos_] == '(') {
      if (depth >= kMaxDepth) Fail(Concat("nesting deeper than ", kMaxDepth, " levels"));
      ++pos_;
      node.is_leaf = false;
      while (true) {
        node.children.push_back(Tree(stride, depth + 1));
        Skip();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        Expect(')');
        break;
      }
      return node;
    }
    int64_t v = Integer();
    std::string axis;
    Skip();
    if (stride && pos_ < text_.size() && text_[pos_] == '@') {
      ++pos_;
      Skip();
      axis = Name();
    }
    node.value = Stride(v, axis);
    return node;
  }
  Layout Build(const Parsed& shape, const Parsed& stride) {
    if (shape.is_leaf != stride.is_leaf || shape.children.size() != stride.children.size()) {
      FailValue("cannot parse CuTe layout '", text_, "': the shape and the stride are not congruent");
    }
    if (shape.is_leaf) return Layout::Leaf(shape.value.value, stride.value);
    std::vector<Layout> modes;
    for (size_t i = 0; i < shape.children.size(); ++i) modes.push_back(Build(shape.children[i], stride.children[i]));
    return Layout::Tuple(std::move(modes));
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

Layout Parse(const std::string& text) { return Parser(text).Run(); }

// ---- evaluation ------------------------------------------------------------------------------------------------

void Evaluate(const std::vector<Mode>& flat, const std::vector<std::string>& axes, int64_t index, int64_t* out) {
  if (index < 0) FailValue("a CuTe layout index must be >= 0, got ", index);
  for (size_t a = 0; a < axes.size(); ++a) out[a] = 0;
  for (size_t k = 0; k < flat.size(); ++k) {
    const Mode& m = flat[k];
    const bool last = k + 1 == flat.size();
    const int64_t c = last ? index : CheckedMod(index, m.shape);
    if (!last) index = CheckedDiv(index, m.shape);
    if (m.stride.value == 0 || c == 0) continue;
    const size_t a = static_cast<size_t>(std::find(axes.begin(), axes.end(), m.stride.axis) - axes.begin());
    out[a] = CheckedAdd(out[a], CheckedMul(c, m.stride.value));
  }
}

int64_t Cosize(const Layout& layout, const std::string& axis) {
  int64_t total = 1;
  for (const Mode& m : layout.Flatten()) {
    if (m.stride.value == 0 || m.stride.axis != axis) continue;
    if (m.stride.value < 0) FailValue("cosize needs non-negative strides, got ", m.stride.ToString());
    total = CheckedAdd(total, CheckedMul(m.shape - 1, m.stride.value));
  }
  return total;
}

// ---- swizzle ---------------------------------------------------------------------------------------------------

Swizzle::Swizzle(int64_t bits, int64_t base, int64_t shift) : bits(bits), base(base), shift(shift) {
  if (bits < 0 || base < 0) FailValue("Swizzle<", bits, ",", base, ",", shift, ">: bits and base must be >= 0");
  if (bits > 62 || base > 62 || shift < -62 || shift > 62) {
    FailValue("Swizzle<", bits, ",", base, ",", shift, ">: period exceeds 2^62");
  }
  const int64_t span = shift < 0 ? -shift : shift;
  if (span < bits) {
    FailValue("Swizzle<", bits, ",", base, ",", shift, ">: |shift| must be >= bits (the two bit fields overlap)");
  }
  if (bits + base + span > 62) FailValue("Swizzle<", bits, ",", base, ",", shift, ">: period exceeds 2^62");
}

int64_t Swizzle::Apply(int64_t offset) const {
  const int64_t mask = (int64_t{1} << bits) - 1;
  if (shift >= 0) return offset ^ (((offset >> (base + shift)) & mask) << base);
  return offset ^ (((offset >> base) & mask) << (base - shift));
}

}  // namespace cute

CuteLayout::CuteLayout(cute::Layout value) {
  value.Size();  // a size beyond int64 is rejected once, here
  // Every tree the FFI holds is this shallow, so the recursive walks over trees stay far from the stack limit.
  if (value.Depth() > 64) FailValue("a CuTe layout may nest at most 64 levels deep");
  data_ = ffi::make_object<CuteLayoutObj>(std::move(value));
}

CuteSwizzle::CuteSwizzle(const cute::Swizzle& s) { data_ = ffi::make_object<CuteSwizzleObj>(s); }

}  // namespace tirx_layout
