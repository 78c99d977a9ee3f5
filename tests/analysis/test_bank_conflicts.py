"""Bank-conflict analysis: the guide's bank example, the phase model on hand-computed cases and against the obvious
set-based model, the swizzle picker."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tirx_layout import ComposeLayout, S, SwizzleLayout, TileLayout
from tirx_layout.analysis import bank_conflicts, column, contiguous, pick_swizzle, row_vectors, shared_wavefronts
from tirx_layout.analysis.bank_conflicts import swizzled_tile

from oracles import banks


def test_guide_column_access_fp16():
    tile = TileLayout(S[(8, 64) : (64, 1)])
    swizzled = ComposeLayout(SwizzleLayout(3, 3, 3), tile)
    access = column((8, 64), "float16")  # lanes 0..7 read column 0 of rows 0..7, lanes 8.. the next columns
    plain = bank_conflicts(tile, "float16", access)
    good = bank_conflicts(swizzled, "float16", access)
    # Unswizzled: rows are 128 bytes apart, so column c of every row sits in the same bank: 8 words per bank.
    assert plain.wavefronts == 8 and plain.minimum == 1
    # Swizzled: rows go to banks 0, 4, ..., 28 and the columns 0..3 share words: one wavefront.
    assert good.wavefronts == good.minimum == 1 and good.conflict_free


def test_row_vectors_are_served_in_quarter_warp_phases():
    tile = TileLayout(S[(8, 64) : (64, 1)])
    report = bank_conflicts(tile, "float16", row_vectors((8, 64), "float16"))
    assert report.phases == (8, 8, 8, 8) and report.minimum == 4 and report.vectorized
    swizzled = bank_conflicts(ComposeLayout(SwizzleLayout(3, 3, 3), tile), "float16", row_vectors((8, 64), "float16"))
    assert swizzled.phases == (1, 1, 1, 1)
    assert bank_conflicts(tile, "float16", contiguous((8, 64), "float16")).wavefronts == 4


def test_non_contiguous_vectors_are_reported():
    transposed = TileLayout(S[(8, 64) : (1, 8)])
    assert not bank_conflicts(transposed, "float16", row_vectors((8, 64), "float16")).vectorized


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("shape", [(8, 64), (16, 64), (32, 64), (64, 64), (64, 128), (128, 64), (128, 128)])
def test_picked_swizzle_reaches_the_minimum_for_16_byte_accesses(dtype, shape):
    layout = pick_swizzle(dtype, shape)
    for access in (row_vectors(shape, dtype), contiguous(shape, dtype)):
        report = bank_conflicts(layout, dtype, access)
        assert report.conflict_free and report.vectorized, (dtype, shape, access.name, layout)


def test_bad_arguments():
    with pytest.raises(ValueError, match="outside"):
        row_vectors((4, 8), "float16")
    with pytest.raises(ValueError, match="vector_bytes"):
        contiguous((8, 64), "float32", vector_bytes=2)
    with pytest.raises(ValueError, match="unknown dtype"):
        column((8, 64), "notatype")
    with pytest.raises(ValueError, match="swizzle mode"):
        swizzled_tile((8, 64), "float16", "256B")
    with pytest.raises(TypeError, match="AccessPattern"):
        bank_conflicts(TileLayout(S[64:1]), "float16", "rows")


@settings(max_examples=300)
@given(
    threads=st.sampled_from([8, 32, 48, 64, 128]),
    element_bytes=st.sampled_from([1, 2, 4, 8]),
    vector=st.sampled_from([1, 2, 4, 8, 16]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_vectorised_bank_model_is_the_obvious_one(threads, element_bytes, vector, seed):
    if vector * element_bytes > 16:
        return
    rng = np.random.default_rng(seed)
    first = rng.integers(0, 4096, threads) // vector * vector * element_bytes  # aligned vectors
    active = rng.random(threads) < 0.8
    addresses = first[:, None] + np.arange(vector)[None, :] * element_bytes
    waves, minimum = shared_wavefronts(addresses, active, vector * element_bytes, element_bytes)
    lanes = [addresses[t].tolist() if active[t] else [] for t in range(threads)]
    phases, least = banks.wavefronts(lanes, vector * element_bytes, element_bytes)
    assert [int(w) for w in waves.ravel() if w] == phases
    assert int(minimum.sum()) == least
