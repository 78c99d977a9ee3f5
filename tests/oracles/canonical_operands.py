"""Operands laid out in shared memory by the PTX ISA's canonical layouts, built element by element for the MMA
tests (``tcgen05.mma`` and ``wgmma`` read them alike; only their descriptors' bit formats differ, so the caller
encodes the descriptor). Written from the ISA's "Canonical layouts" / "Shared Memory Matrix Layout" text and its
swizzle table; imports nothing of ``tirx_layout``."""

from __future__ import annotations

import numpy as np


def swizzle(address, mode):
    """The XOR of ISA Table 55 on a (repeat-aligned) byte address: 16-byte chunk bits ^= row bits 7..."""
    bits = {"none": 0, "32B": 1, "64B": 2, "128B": 3}[mode]
    return address ^ (((address >> 7) & ((1 << bits) - 1)) << 4)


class Operand:
    """A ``rows x K`` operand laid out in shared memory by one of the ISA's canonical layouts: its 32-bit words
    (``words``), the LBO and SBO that read it (``lbo``, ``sbo``, bytes), the per-K-step start offsets (``starts``,
    bytes; one instruction reads 32 bytes of K) and, given ``encode(lbo, sbo, mode)``, its descriptor."""

    def __init__(self, values: np.ndarray, major: str, mode: str, encode=None):
        self.values, self.major, self.mode = values, major, mode
        rows, k = values.shape
        e = values.dtype.itemsize
        self.k_step = 32 // e
        width = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[mode]
        place = np.zeros((rows, k), np.int64)
        for r in range(rows):
            for c in range(k):
                if major == "K" and mode == "none":  # core matrices [row group][K chunk][8 rows][16 B]
                    sbo, lbo = (k * e // 16) * 128, 128
                    linear = (r // 8) * sbo + (c * e // 16) * lbo + (r % 8) * 16 + c * e % 16
                elif major == "K":  # atoms [K atom][row group][8 rows][width B]
                    sbo, lbo = 8 * width, 16
                    linear = (c * e // width) * rows * width + (r // 8) * sbo + (r % 8) * width + c * e % width
                elif mode == "none":  # core matrices [K group][MN chunk][8 K rows][16 B]
                    sbo, lbo = 128, (rows * e // 16) * 128
                    linear = (c // 8) * lbo + (r * e // 16) * sbo + (c % 8) * 16 + r * e % 16
                else:  # atoms [K group][MN atom][8 K rows][width B]
                    sbo, lbo = rows * e * 8, 8 * width
                    linear = (c // 8) * sbo + (r * e // width) * lbo + (c % 8) * width + r * e % width
                place[r, c] = swizzle(linear, mode)
        self.lbo, self.sbo = lbo, sbo
        self.descriptor = None if encode is None else encode(lbo, sbo, mode)
        size = (int(place.max()) + e + 1023) // 1024 * 1024
        image = np.zeros(size, np.uint8)
        raw = values.view(np.uint8).reshape(rows, k, e)
        for b in range(e):
            image[place + b] = raw[:, :, b]
        self.words = image.view(np.uint32)
        # start byte of K step s: the unswizzled address of element (0, s * k_step)
        self.starts = []
        for s in range(k // self.k_step):
            c = s * self.k_step
            if major == "K" and mode == "none":
                self.starts.append((c * e // 16) * lbo)
            elif major == "K":
                self.starts.append((c * e // width) * rows * width + c * e % width)
            else:
                self.starts.append((c // 8) * (lbo if mode == "none" else sbo))
