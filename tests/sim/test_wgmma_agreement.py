"""The simulator's wgmma decoding (``sim/wgmma.py``, written from the ISA) against the test-side ISA model
(``tests/oracles/wgmma_isa.py``, wgmma-desc's encoder from the ISA tables) and against the project's own encoder
(``hw/smem_descriptor.shared_matrix_descriptor(..., family="wgmma")``): descriptor bits, register fragments, and for
every operand layout the encoder accepts, the byte each element is read from."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tirx_layout.hw.constructors import mma_shared_layout
from tirx_layout.hw.memory import SWIZZLE_BYTES, dtype_bytes
from tirx_layout.hw.smem_descriptor import advance_k, shared_matrix_descriptor
from tirx_layout.sim import wgmma
from tirx_layout.sim.matrix_operands import DescriptorError, operand_byte_address
from tirx_layout.sim.memory import SimulationError

from oracles import wgmma_isa

START = 2 * 1024  # a shared-window address on every swizzle repeat (1024 bytes for 128B)


def test_descriptor_fields_agree_with_the_oracle_and_unused_bits_are_refused():
    rng = np.random.default_rng(0)
    for swizzle in wgmma_isa.SWIZZLE_CODE:
        for _ in range(50):
            start, lbo, sbo = (16 * int(v) for v in rng.integers(0, 1 << 14, 3))
            base = int(rng.integers(0, 8))
            value = wgmma_isa.descriptor(start, lbo, sbo, swizzle, base)
            ours, theirs = wgmma.decode_wgmma_descriptor(value), wgmma_isa.decode(value)
            assert (ours["start_address"], ours["lbo"], ours["sbo"]) == (theirs["start"], theirs["lbo"], theirs["sbo"])
            assert (ours["swizzle"], ours["base_offset"]) == (theirs["swizzle"], theirs["base_offset"])
    used = 0
    for low, width in wgmma_isa.FIELDS.values():
        used |= ((1 << width) - 1) << low
    for bit in range(64):
        if not used >> bit & 1:
            with pytest.raises(DescriptorError, match="reserved"):
                wgmma.decode_wgmma_descriptor(1 << bit)


def test_fragments_agree_with_the_oracle():
    for n in wgmma_isa.valid_n("float16"):
        rows, cols = wgmma.accumulator_fragment(n)
        for thread, i in itertools.product(range(128), range(n // 2)):
            assert (rows[thread, i], cols[thread, i]) == wgmma_isa.accumulator_element(thread, i), (n, thread, i)
    for dtype in ("float16", "float32", "int8"):
        rows, ks = wgmma.operand_a_fragment(wgmma_isa.ELEMENT_BYTES[dtype])
        assert rows.shape == (128, wgmma_isa.a_elements_per_thread(dtype))
        for thread, i in itertools.product(range(128), range(rows.shape[1])):
            assert (rows[thread, i], ks[thread, i]) == wgmma_isa.a_element(thread, i, dtype), (dtype, thread, i)


def test_helper_names_accept_exactly_the_isa_shapes():
    ptx = {"float16": "f16", "bfloat16": "bf16", "float32": "tf32", "float8_e4m3fn": "e4m3", "int8": "s8"}
    d_ptx = {"float32": "f32", "float16": "f16", "int32": "s32"}
    for dtype, name in ptx.items():
        k = wgmma_isa.K_OF[dtype]
        for n in range(8, 257, 8):
            for d in ("float32", "float16", "int32"):
                helper = f"mma_m64n{n}k{k}_{d_ptx[d]}_{name}_{name}_ss_t00"
                if n in wgmma_isa.valid_n(dtype) and d in wgmma_isa.D_TYPES[dtype]:
                    assert wgmma.parse_mma_helper(helper).n == n
                else:
                    with pytest.raises(SimulationError, match="wgmma helper"):
                        wgmma.parse_mma_helper(helper)
        transposed = f"mma_m64n64k{k}_f32_{name}_{name}_ss_t01" if dtype != "int8" else None
        if transposed and "float32" in wgmma_isa.D_TYPES[dtype]:
            if wgmma_isa.may_transpose(dtype):
                assert wgmma.parse_mma_helper(transposed).b_major == "MN"
            else:
                with pytest.raises(SimulationError, match="f16/bf16 only"):
                    wgmma.parse_mma_helper(transposed)


def operand_shapes(dtype: str, mode: str, major: str):
    element = dtype_bytes(dtype)
    width = SWIZZLE_BYTES[mode] if mode != "none" else 16
    if major == "K":
        atom_k = width // element if mode != "none" else 32 // element
        yield (64, 2 * atom_k)
        yield (128, atom_k)
    else:  # rows along the contiguous dimension: at least one swizzle atom's width of them
        yield (max(64, width // element), 32)
        yield (2 * max(64, width // element), 16)


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize(
    "dtype, major",
    [("float16", "K"), ("bfloat16", "MN"), ("float16", "MN"), ("float8_e4m3fn", "K"), ("int8", "K"), ("float32", "K")],
)
def test_the_simulator_reads_what_the_layout_places(dtype, major, mode):
    element = dtype_bytes(dtype)
    k_per_step = 32 // element
    for rows, k_total in operand_shapes(dtype, mode, major):
        layout = mma_shared_layout(dtype, mode, (rows, k_total), major=major)
        descriptor = shared_matrix_descriptor(layout, (rows, k_total), dtype, START, family="wgmma")
        for step in range(k_total // k_per_step):
            fields = wgmma.decode_wgmma_descriptor(advance_k(descriptor, step).encode(family="wgmma"))
            r = np.arange(rows)[:, None]
            k = np.arange(k_per_step)[None, :]
            read = operand_byte_address(fields, r, k, element, major)
            placed = np.array(
                [
                    [layout.apply(row, step * k_per_step + kk, shape=[rows, k_total])["m"] for kk in range(k_per_step)]
                    for row in range(rows)
                ]
            )
            np.testing.assert_array_equal(read, placed * element + START, err_msg=f"{dtype} {major} {mode} step {step}")
