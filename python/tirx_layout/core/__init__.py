"""The bridge to the C++ core: ``ffi`` loads the shared library and exposes its global functions, ``values`` turns
user-supplied numbers into the values the core stores. Every other layer reaches the core through these two.

Example: the core's global function ``tirx_layout.TileLayoutSize`` is ``ffi.TileLayoutSize`` (the layout classes
call it for ``size()``); a number the core's int64 cannot hold is refused before it gets there.

    >>> from tirx_layout import S, TileLayout
    >>> from tirx_layout.core import ffi, values
    >>> ffi.TileLayoutSize(TileLayout(S[(8, 4):(4, 1)]), None)
    32
    >>> values.static_int(2**63, "extent")
    Traceback (most recent call last):
    ...
    ValueError: extent 9223372036854775808 does not fit in int64
"""
