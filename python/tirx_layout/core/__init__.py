"""The bridge to the C++ core: ``ffi`` loads the shared library and exposes its global functions, ``values`` turns
user-supplied numbers into the values the core stores. Every other layer reaches the core through these two."""
