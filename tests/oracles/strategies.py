"""Random layouts as plain data (see reference.py), for hypothesis and for seeded differential runs."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from tirx_layout import Iter, TileLayout

THREAD_AXES = ["laneid", "warpid", "tx", "tid_in_wg", "wid_in_wg", "wgid", "bx", "cbx"]
MEMORY_AXES = ["m", "TLane", "TCol", "P", "F", "Bank"]
AXES = THREAD_AXES + MEMORY_AXES


def build(data) -> TileLayout:
    shard, replica, offset = data
    return TileLayout.from_iters([Iter(*it) for it in shard], [Iter(*it) for it in replica], dict(offset))


_iter = st.tuples(
    st.integers(1, 9) | st.sampled_from([16, 32, 128]),
    st.integers(-8, 16) | st.sampled_from([0, 32, 112, 512]),
    st.sampled_from(AXES),
)

#: (shard, replica, offset) with small extents so that whole domains can be enumerated.
layouts = st.tuples(
    st.lists(_iter, min_size=0, max_size=5),
    st.lists(_iter.map(lambda it: (min(it[0], 4), it[1], it[2])), max_size=2),
    st.dictionaries(st.sampled_from(AXES), st.integers(-20, 40), max_size=3),
)


def random_layout(rng: random.Random):
    """One random layout: 1..5 shard iters, 0..2 replica iters, 0..3 offsets; strides include 0 and negatives."""

    def one_iter(max_extent):
        extent = rng.choice([rng.randint(1, max_extent), rng.choice([1, 2, 4, 8, 16, 32])])
        stride = rng.choice([rng.randint(-8, 16), 0, 1, rng.choice([32, 64, 112, 128])])
        return (min(extent, max_extent), stride, rng.choice(AXES))

    shard = [one_iter(16) for _ in range(rng.randint(1, 5))]
    replica = [one_iter(4) for _ in range(rng.randint(0, 2))]
    offset = {rng.choice(AXES): rng.randint(-10, 30) for _ in range(rng.randint(0, 3))}
    return shard, replica, offset
