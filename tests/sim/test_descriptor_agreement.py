"""The two halves of issue 20's descriptors meet: the encoder derives a shared-memory descriptor from an operand's
layout (``hw.smem_descriptor``), the simulator's model (``sim.tcgen05_mma``, written from the ISA, never from our layout code)
decodes the 64 bits and computes where each element of each K step lies. For every K-major operand layout
``mma_shared_layout`` makes, the simulator must read exactly the address the layout gives each element."""

from __future__ import annotations

import pytest

from tirx_layout.hw.constructors import mma_shared_layout
from tirx_layout.hw.memory import SWIZZLE_BYTES, dtype_bytes
from tirx_layout.hw.smem_descriptor import advance_k, shared_matrix_descriptor
from tirx_layout.sim.tcgen05_mma import decode_shared_descriptor, operand_byte_address

DTYPES = ["float16", "bfloat16", "float8_e4m3fn", "int8", "float32"]
START = 2 * 1024  # a shared-window address on every swizzle repeat (1024 bytes for 128B)


def operand_shapes(dtype: str, mode: str):
    atom_k = SWIZZLE_BYTES[mode] // dtype_bytes(dtype) if mode != "none" else 32 // dtype_bytes(dtype)
    yield (64, 2 * atom_k)
    yield (128, atom_k)


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_simulator_reads_what_the_layout_places(dtype, mode):
    element = dtype_bytes(dtype)
    k_per_step = 32 // element
    for rows, k_total in operand_shapes(dtype, mode):
        layout = mma_shared_layout(dtype, mode, (rows, k_total))
        descriptor = shared_matrix_descriptor(layout, (rows, k_total), dtype, START)
        for step in range(k_total // k_per_step):
            fields = decode_shared_descriptor(advance_k(descriptor, step).encode())
            for row in range(rows):
                for k in range(k_per_step):
                    placed = layout.apply(row, step * k_per_step + k, shape=[rows, k_total])["m"] * element + START
                    read = operand_byte_address(fields, row, k, element, "K")
                    assert read == placed, (dtype, mode, (rows, k_total), step, row, k)
