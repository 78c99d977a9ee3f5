"""Load the C++ core and expose its global functions as attributes of this module.

The core is a shared library next to this file (installed there by the CMake build). Loading it runs its static
registration blocks, which add the ``tirx_layout.*`` object types and global functions to the tvm-ffi registry.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

import tvm_ffi

_LIBRARY_NAME = "libtirx_layout.so"


def _find_library() -> Path:
    override = os.environ.get("TIRX_LAYOUT_LIBRARY")
    candidates = [Path(override)] if override else []
    candidates.append(Path(__file__).with_name(_LIBRARY_NAME))
    for path in candidates:
        if path.is_file():
            return path
    searched = ", ".join(str(p) for p in candidates)
    raise ImportError(
        f"tirx_layout: the C++ core {_LIBRARY_NAME} was not found (looked at {searched}); "
        "install the package with `pip install .` (or run ./dev.sh) so that CMake builds it"
    )


_library = ctypes.CDLL(str(_find_library()), mode=ctypes.RTLD_GLOBAL)

# The core's global function ``tirx_layout.TileLayoutSize`` becomes ``ffi.TileLayoutSize``, and so on.
tvm_ffi.init_ffi_api("tirx_layout", __name__)


def shown_when_unconstructed(method):
    """Wrap a ``__repr__``/``__str__`` so that it answers for an object whose constructor failed. A traceback
    printer (pytest's, a debugger's) shows ``self`` of the failed ``__init__``, whose handle is null: reading its
    fields would crash the process instead of reporting the error.

    Example:
        >>> from tirx_layout import TileLayout
        >>> repr(TileLayout.__new__(TileLayout))
        '<TileLayout, not constructed>'
    """

    @functools.wraps(method)
    def guarded(self):
        if self.__chandle__() == 0:
            return f"<{type(self).__name__}, not constructed>"
        return method(self)

    return guarded
