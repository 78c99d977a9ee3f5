/*!
 * \file tirx_layout/checked.h
 * \brief Overflow-checked int64 arithmetic and floor division for the layout algebra.
 *
 * Layout extents, strides and coordinates are int64. Every product and sum the algebra forms goes through
 * these helpers, and every quotient and remainder through CheckedDiv/CheckedMod/FloorDiv/FloorMod, so an overflow
 * or a zero divisor is a ValueError naming the operands instead of a silently wrapped layout or a SIGFPE.
 */
#ifndef TIRX_LAYOUT_CHECKED_H_
#define TIRX_LAYOUT_CHECKED_H_

#include <cstdint>
#include <optional>

#include "error.h"

namespace tirx_layout {

inline int64_t CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) FailValue("integer overflow in layout arithmetic: ", a, " + ", b);
  return r;
}

inline int64_t CheckedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) FailValue("integer overflow in layout arithmetic: ", a, " - ", b);
  return r;
}

inline int64_t CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) FailValue("integer overflow in layout arithmetic: ", a, " * ", b);
  return r;
}

/*!
 * \brief `a / b` rounded toward zero, as C++'s `/`, checked: a zero divisor and `INT64_MIN / -1` (whose quotient
 *        2^63 does not fit) are ValueErrors instead of a SIGFPE. Every division in the core goes through here.
 */
inline int64_t CheckedDiv(int64_t a, int64_t b) {
  if (b == 0) FailValue("division by zero in layout arithmetic: ", a, " / 0");
  if (b == -1) return CheckedSub(0, a);  // the one quotient that can overflow: -INT64_MIN
  return a / b;
}

/*!
 * \brief `a % b` with the sign of `a`, as C++'s `%`, checked: a zero divisor is a ValueError; any value modulo -1
 *        is 0 (C++'s `INT64_MIN % -1` traps, so it is never evaluated).
 */
inline int64_t CheckedMod(int64_t a, int64_t b) {
  if (b == 0) FailValue("modulo by zero in layout arithmetic: ", a, " % 0");
  if (b == -1) return 0;
  return a % b;
}

/*! \brief Whether `b` divides `a` exactly (0 divides only 0). */
inline bool Divides(int64_t b, int64_t a) { return b == 0 ? a == 0 : CheckedMod(a, b) == 0; }

/*!
 * \brief `a / b` when it is an exact int64 quotient, else nothing: for the recognisers, which answer "no such
 *        layout" (not an error) when a stride cannot be undone.
 */
inline std::optional<int64_t> ExactQuotient(int64_t a, int64_t b) {
  if (b == 0 || CheckedMod(a, b) != 0 || (b == -1 && a == INT64_MIN)) return std::nullopt;
  return a / b;
}

/*! \brief Floor division (rounds toward negative infinity), as TVM's floordiv, checked like CheckedDiv. */
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = CheckedDiv(a, b);
  return (CheckedMod(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/*! \brief Floor modulo: the result has the sign of `b` (in [0, b) for a positive `b`), checked like CheckedMod. */
inline int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = CheckedMod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_CHECKED_H_
