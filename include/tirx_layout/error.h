/*!
 * \file tirx_layout/error.h
 * \brief The one error channel of the core: a tvm-ffi Error whose kind names the Python exception class.
 *
 * Every invalid input is reported by throwing through these helpers; the FFI boundary turns the error into
 * the Python exception of the same name (ValueError, TypeError, KeyError) with the message as given. No
 * C++ backtrace is attached: the message names the offending value, which is what the user needs.
 */
#ifndef TIRX_LAYOUT_ERROR_H_
#define TIRX_LAYOUT_ERROR_H_

#include <tvm/ffi/error.h>

#include <sstream>
#include <string>
#include <utility>

namespace tirx_layout {

/*! \brief Throw an error that surfaces in Python as exception class `kind` with `message`. */
[[noreturn]] inline void Fail(const char* kind, const std::string& message) {
  throw tvm::ffi::Error(kind, message, "");
}

/*! \brief Concatenate the streamed parts into one message. */
template <typename... Parts>
std::string Concat(Parts&&... parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  return os.str();
}

template <typename... Parts>
[[noreturn]] void FailValue(Parts&&... parts) {
  Fail("ValueError", Concat(std::forward<Parts>(parts)...));
}

template <typename... Parts>
[[noreturn]] void FailType(Parts&&... parts) {
  Fail("TypeError", Concat(std::forward<Parts>(parts)...));
}

template <typename... Parts>
[[noreturn]] void FailKey(Parts&&... parts) {
  Fail("KeyError", Concat(std::forward<Parts>(parts)...));
}

}  // namespace tirx_layout

#endif  // TIRX_LAYOUT_ERROR_H_
