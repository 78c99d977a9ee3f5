"""Hardware facts as data — memories (element sizes, banks, swizzle modes), the CUDA thread hierarchy, tensor memory
and the ``tcgen05`` instruction shapes — and the layout constructors built from them."""

from .constructors import mma_shared_layout, swizzle_mode, tcgen05_atom_layout, tmem_datapath_layout, wg_local_layout
from .memory import SWIZZLE_MODES, dtype_bytes

__all__ = [
    "SWIZZLE_MODES",
    "dtype_bytes",
    "mma_shared_layout",
    "swizzle_mode",
    "tcgen05_atom_layout",
    "tmem_datapath_layout",
    "wg_local_layout",
]
