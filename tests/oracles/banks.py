"""The shared-memory bank model written the slow, obvious way: per warp and phase, a set of touched words, then
the most words in one bank. The library's vectorised model must agree with it on every access."""

from __future__ import annotations

import math

BANKS, WORD_BYTES, WARP = 32, 4, 32


def wavefronts(lane_bytes: list[list[int]], access_bytes: int, element_bytes: int) -> tuple[list[int], int]:
    """``lane_bytes[t]``: byte addresses thread ``t`` of a CTA touches (empty when inactive). Returns the
    wavefronts of every (warp, phase) that has an active lane, in order, and the minimum over all warps."""
    lanes_per_phase = WARP if access_bytes <= WORD_BYTES else WARP * WORD_BYTES // access_bytes
    phases, minimum = [], 0
    for start in range(0, len(lane_bytes), lanes_per_phase):
        words = set()
        for lane in range(start, min(start + lanes_per_phase, len(lane_bytes))):
            for address in lane_bytes[lane]:
                words.update(range(address // WORD_BYTES, (address + element_bytes - 1) // WORD_BYTES + 1))
        if not words:
            continue
        per_bank: dict[int, int] = {}
        for word in words:
            per_bank[word % BANKS] = per_bank.get(word % BANKS, 0) + 1
        phases.append(max(per_bank.values()))
        minimum += math.ceil(len(words) / BANKS)
    return phases, minimum
