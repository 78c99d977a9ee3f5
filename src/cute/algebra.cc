/*!
 * \file cute/algebra.cc
 * \brief CuTe's layout algebra with exact preconditions: coalesce, filter, composition, complement, the inverses,
 *        and the divides and products built from them.
 *
 * Each operation walks the flat modes (sorted by stride where the definition says so) with a running index,
 * emitting (shape, stride) pairs. Where a definition only holds under a divisibility condition the condition is
 * checked exactly: an input that would make the walk truncate is a ValueError naming the mode, never a layout that
 * computes some other function.
 */
#include <algorithm>
#include <tuple>

#include "tirx_layout/checked.h"
#include "tirx_layout/cute.h"
#include "tirx_layout/error.h"

namespace tirx_layout {
namespace cute {

namespace {

void RequirePlain(const Layout& l, const char* op, const char* role) {
  for (const Mode& m : l.Flatten()) {
    if (!m.stride.IsPlain()) {
      FailValue(op, ": the ", role, " layout ", l.ToString(), " must have integer strides, got ",
                m.stride.ToString());
    }
  }
}

/*! \brief The modes that move: extent > 1 and a nonzero stride, which must be positive. */
std::vector<Mode> MovingModes(const Layout& l, const char* op) {
  std::vector<Mode> out;
  for (const Mode& m : l.Flatten()) {
    if (m.shape == 1 || m.stride.value == 0) continue;
    if (m.stride.value < 0) FailValue(op, ": layout ", l.ToString(), " has a negative stride ", m.stride.value);
    out.push_back(m);
  }
  return out;
}

int64_t CeilDiv(int64_t a, int64_t b) { return CheckedAdd(CheckedDiv(a, b), CheckedMod(a, b) != 0 ? 1 : 0); }

/*! \brief A's coalesced flat modes, and how far the digits B has placed so far reach into each of them. */
struct CompositionWalk {
  const Layout& a;
  const Layout& b;
  std::vector<Mode> flat;
  std::vector<int64_t> reach;

  CompositionWalk(const Layout& a, const Layout& b) : a(a), b(b), flat(Coalesce(a).Flatten()), reach(flat.size(), 0) {}

  [[noreturn]] void Reject(const std::string& why) const {
    FailValue("composition ", a.ToString(), " o ", b.ToString(), ": ", why, " (the coalesced left layout is ",
              Layout::FromModes(flat).ToString(), ")");
  }

  /*! \brief Compose one leaf `shape:stride` of B, recording the largest digit it puts into each mode of A. */
  Layout Leaf(const Layout& leaf) {
    const int64_t shape = leaf.leaf.shape;
    const Stride& stride = leaf.leaf.stride;
    if (!stride.IsPlain()) Reject("the right layout indexes the left one's domain, so its strides must be integers");
    if (stride.value < 0) Reject(Concat("negative stride ", stride.value, " in the right layout"));
    if (stride.value == 0) return Layout::Leaf(shape, Stride(0));
    std::vector<Mode> out;
    int64_t rest_shape = shape, rest_stride = stride.value;
    // Every mode but the last has a bound; the last one extends A past its size, as in CuTe.
    for (size_t k = 0; k + 1 < flat.size() && rest_shape > 1; ++k) {
      const int64_t n = flat[k].shape;
      if (Divides(n, rest_stride)) {  // this leaf steps over the whole mode
        rest_stride = CheckedDiv(rest_stride, n);
        continue;
      }
      if (!Divides(rest_stride, n)) {
        Reject(Concat("stride ", rest_stride, " neither divides nor is a multiple of extent ", n, " of mode ", k));
      }
      const int64_t take = std::min(CheckedDiv(n, rest_stride), rest_shape);
      if (!Divides(take, rest_shape)) {
        Reject(Concat("the remaining ", rest_shape, " elements do not split into whole runs of ", take,
                      " along extent ", n, " of mode ", k));
      }
      out.push_back(Mode{take, flat[k].stride.Scaled(rest_stride)});
      reach[k] = CheckedAdd(reach[k], CheckedMul(take - 1, rest_stride));
      if (reach[k] >= n) {
        Reject(Concat("the modes of the right layout together reach digit ", reach[k], " of mode ", k,
                      " of extent ", n, ": their sum carries, so A o B is no by-mode composition"));
      }
      rest_shape = CheckedDiv(rest_shape, take);
      rest_stride = 1;
    }
    if (rest_shape > 1 || out.empty()) out.push_back(Mode{rest_shape, flat.back().stride.Scaled(rest_stride)});
    return Layout::FromModes(out);
  }

  Layout Compose(const Layout& node) {
    if (node.is_leaf) return Leaf(node);
    std::vector<Layout> modes;
    for (const Layout& mode : node.modes) modes.push_back(Compose(mode));
    return Layout::Tuple(std::move(modes));
  }
};

/*! \brief `l` with 1:0 modes appended up to rank `r` (a leaf stays a leaf when r == 1). */
Layout Append(const Layout& l, int64_t r) {
  if (l.Rank() == r) return l;
  std::vector<Layout> modes = l.is_leaf ? std::vector<Layout>{l} : l.modes;
  while (static_cast<int64_t>(modes.size()) < r) modes.push_back(Layout::Leaf(1, Stride(0)));
  return Layout::Tuple(std::move(modes));
}

Layout ZipProduct(const Layout& a, const Layout& b, bool a_first) {
  const int64_t r = std::max(a.Rank(), b.Rank());
  const Layout pa = Append(a, r), pb = Append(b, r);
  const Layout product = LogicalProduct(pa, pb);
  const Layout& copies = product.modes[1];
  std::vector<Layout> modes;
  for (int64_t i = 0; i < r; ++i) {
    const Layout& ai = pa.Get(i);
    const Layout& bi = r == 1 ? copies : copies.Get(i);  // with one mode, the copies may be a flat tuple
    modes.push_back(a_first ? Layout::Tuple({ai, bi}) : Layout::Tuple({bi, ai}));
  }
  return r == 1 ? modes[0] : Layout::Tuple(std::move(modes));
}

}  // namespace

Layout Coalesce(const Layout& layout) {
  std::vector<Mode> out;
  for (const Mode& m : layout.Flatten()) {
    if (m.shape == 1) continue;
    if (!out.empty() && out.back().stride.Scaled(out.back().shape) == m.stride) {
      out.back().shape = CheckedMul(out.back().shape, m.shape);
      continue;
    }
    out.push_back(m);
  }
  return Layout::FromModes(out);
}

Layout Filter(const Layout& layout) {
  std::vector<Mode> kept;
  for (const Mode& m : layout.Flatten()) {
    if (m.shape != 1 && m.stride.value != 0) kept.push_back(m);
  }
  return Coalesce(Layout::FromModes(kept));
}

Layout Composition(const Layout& a, const Layout& b) {
  CompositionWalk walk(a, b);
  return walk.Compose(b);
}

Layout Complement(const Layout& layout, int64_t cotarget) {
  RequirePlain(layout, "complement", "given");
  if (cotarget < 1) FailValue("complement: the cotarget size must be >= 1, got ", cotarget);
  std::vector<Mode> modes = MovingModes(layout, "complement");
  std::sort(modes.begin(), modes.end(), [](const Mode& x, const Mode& y) {
    return std::tie(x.stride.value, x.shape) < std::tie(y.stride.value, y.shape);
  });
  std::vector<Mode> out;
  int64_t current = 1;  // how far the modes walked so far reach: the next gap starts there
  int64_t reach = 1;    // cosize of the layout and its complement together, so far
  for (const Mode& m : modes) {
    if (m.stride.value < current) {
      FailValue("complement: layout ", layout.ToString(), " overlaps itself: mode ", m.shape, ":", m.stride.value,
                " starts inside the extent ", current, " that the smaller strides already cover");
    }
    // CuTe's gap is the floor quotient: when the stride is no multiple of `current`, the last partial run of
    // positions below it stays uncovered (CuTe's answer for (4,6):(1,6) is 1:0).
    const int64_t gap = CheckedDiv(m.stride.value, current);
    out.push_back(Mode{gap, Stride(current)});
    reach = CheckedAdd(reach, CheckedAdd(CheckedMul(gap - 1, current), CheckedMul(m.shape - 1, m.stride.value)));
    current = CheckedMul(m.shape, m.stride.value);
  }
  const int64_t rest = CeilDiv(cotarget, current);
  reach = CheckedAdd(reach, CheckedMul(rest - 1, current));
  if (reach < cotarget) {
    FailValue("complement: layout ", layout.ToString(), " has no complement in ", cotarget,
              ": its strides leave positions that no layout can fill, so it and its complement reach only ", reach,
              " positions (a stride is not a multiple of the extent the smaller strides cover)");
  }
  out.push_back(Mode{rest, Stride(current)});
  return Coalesce(Layout::FromModes(out));
}

Layout RightInverse(const Layout& layout) {
  RequirePlain(layout, "right_inverse", "given");
  struct Candidate {
    int64_t stride, shape, rstride;
  };
  std::vector<Candidate> candidates;
  int64_t rstride = 1;
  for (const Mode& m : layout.Flatten()) {
    if (m.shape > 1 && m.stride.value > 0) candidates.push_back({m.stride.value, m.shape, rstride});
    rstride = CheckedMul(rstride, m.shape);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
    return std::tie(x.stride, x.shape, x.rstride) < std::tie(y.stride, y.shape, y.rstride);
  });
  std::vector<Mode> out;
  int64_t current = 1;
  for (const Candidate& c : candidates) {
    if (c.stride != current) break;
    out.push_back(Mode{c.shape, Stride(c.rstride)});
    current = CheckedMul(c.shape, c.stride);
  }
  return Coalesce(Layout::FromModes(out));
}

Layout LeftInverse(const Layout& layout) {
  RequirePlain(layout, "left_inverse", "given");
  for (const Mode& m : layout.Flatten()) {
    if (m.shape > 1 && m.stride.value == 0) {
      FailValue("left_inverse: layout ", layout.ToString(), " is not injective (mode ", m.shape, ":0 broadcasts)");
    }
  }
  // CuTe's definition: the right inverse of the layout completed by its complement. It inverts the layout only when
  // that completion is a bijection onto [0, size): else CuTe's answer maps some L(i) elsewhere than i.
  const Layout both = Layout::Tuple({layout, Complement(layout, 1)});
  Layout inverse = RightInverse(both);
  if (inverse.Size() != both.Size()) {
    FailValue("left_inverse: layout ", layout.ToString(), " has no left inverse layout: completed by its complement ",
              both.ToString(), " it is no bijection onto an interval (a stride is not a multiple of the extent the "
              "smaller strides cover)");
  }
  return inverse;
}

Layout LogicalDivide(const Layout& a, const Layout& b) {
  RequirePlain(b, "logical_divide", "tiler");
  return Composition(a, Layout::Tuple({b, Complement(b, a.Size())}));
}

Layout LogicalProduct(const Layout& a, const Layout& b) {
  RequirePlain(a, "logical_product", "left");
  RequirePlain(b, "logical_product", "right");
  return Layout::Tuple({a, Composition(Complement(a, CheckedMul(a.Size(), Cosize(b))), b)});
}

Layout BlockedProduct(const Layout& a, const Layout& b) { return ZipProduct(a, b, true); }

Layout RakedProduct(const Layout& a, const Layout& b) { return ZipProduct(a, b, false); }

}  // namespace cute
}  // namespace tirx_layout
