/*!
 * \file tirx_layout/checked.h
 * \brief Overflow-checked int64 arithmetic and floor division for the layout algebra.
 *
 * Layout extents, strides and coordinates are int64. Every product and sum the algebra forms goes through
 * these helpers, so an overflow is a ValueError naming the operands instead of a silently wrapped layout.
 */
#ifndef TIRX_LAYOUT_CHECKED_H_
#define TIRX_LAYOUT_CHECKED_H_

#include <cstdint>

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

/*! \brief Floor division (rounds toward negative infinity), as TVM's floordiv; `b` must be positive. */
inline int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/*! \brief Floor modulo: the result has the sign of `b` (here always in [0, b)). */
inline int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && r < 0) ? r + b : r;
}

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_CHECKED_H_
