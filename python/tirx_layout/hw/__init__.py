"""Hardware facts as data — memories (element sizes, banks, swizzle modes), the CUDA thread hierarchy, tensor memory
and the ``tcgen05`` instruction shapes, the ``tcgen05.mma`` instruction and where it addresses tensor memory, the
shared-memory matrix descriptors of ``tcgen05`` and ``wgmma``, the ``wgmma`` and warp-level ``mma.sync``
instruction facts — and the layout constructors built from them.

Example: the facts are plain values, and a constructor turns them into the layout an instruction wants (here the
shared-memory tile ``tcgen05.mma`` reads with the 128-byte swizzle), which ``swizzle_mode`` reads back.

    >>> from tirx_layout.hw import SWIZZLE_MODES, dtype_bytes, mma_shared_layout, swizzle_mode
    >>> dtype_bytes("bfloat16"), SWIZZLE_MODES
    (2, ('none', '32B', '64B', '128B'))
    >>> tile = mma_shared_layout("float16", "128B", (64, 64))
    >>> tile
    ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(64, 64):(64, 1)]))
    >>> swizzle_mode(tile, "float16")
    '128B'
"""

from .constructors import (
    mma_accumulator_layout,
    mma_scale_factor_layout,
    mma_scale_factor_shared_layout,
    mma_shared_layout,
    swizzle_mode,
    tcgen05_atom_layout,
    tmem_datapath_layout,
    wg_local_layout,
    wgmma_accumulator_check,
    wgmma_accumulator_layout,
    wgmma_operand_a_check,
    wgmma_operand_a_layout,
)
from .memory import SWIZZLE_MODES, dtype_bytes
from .mma_sync import (
    MmaSyncInstruction,
    mma_sync_a_layout,
    mma_sync_atoms,
    mma_sync_b_layout,
    mma_sync_c_layout,
    mma_sync_layout,
    recognise_mma_sync_fragment,
)
from .mma_sync_scaled import BlockScaledMmaSync, mma_sync_scale_atoms, mma_sync_scale_layout
from .smem_descriptor import SharedDescriptor, advance_k, shared_matrix_descriptor
from .tcgen05_mma import MmaInstruction, instruction_descriptor
from .tmem_addressing import accumulator_taddr_offset, scale_factor_taddr, tmem_operand_offset
from .wgmma import WgmmaInstruction, wgmma_kind

__all__ = [
    "SWIZZLE_MODES",
    "BlockScaledMmaSync",
    "MmaInstruction",
    "MmaSyncInstruction",
    "SharedDescriptor",
    "WgmmaInstruction",
    "accumulator_taddr_offset",
    "advance_k",
    "dtype_bytes",
    "instruction_descriptor",
    "mma_accumulator_layout",
    "mma_scale_factor_layout",
    "mma_scale_factor_shared_layout",
    "mma_shared_layout",
    "mma_sync_a_layout",
    "mma_sync_atoms",
    "mma_sync_b_layout",
    "mma_sync_c_layout",
    "mma_sync_layout",
    "mma_sync_scale_atoms",
    "mma_sync_scale_layout",
    "recognise_mma_sync_fragment",
    "scale_factor_taddr",
    "shared_matrix_descriptor",
    "swizzle_mode",
    "tcgen05_atom_layout",
    "tmem_datapath_layout",
    "tmem_operand_offset",
    "wg_local_layout",
    "wgmma_accumulator_check",
    "wgmma_accumulator_layout",
    "wgmma_kind",
    "wgmma_operand_a_check",
    "wgmma_operand_a_layout",
]
