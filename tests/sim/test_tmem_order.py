"""The simulator's tcgen05 ordering model (``sim/tmem_order.py``) against a direct reading of the PTX ISA rules
(9.7.16.6), on random programs of loads, stores, waits, fences and barriers over a few warps and cells."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tirx_layout.sim import DataRace, SimulationError
from tirx_layout.sim.tmem_order import TmemOrder

WARPS, CELLS = 3, 2
# A step is ("barrier",) for the whole CTA, or (warp, op, cell) with op in ld/st (cell used) or the others.
OPS = ("ld", "st", "wait_ld", "wait_st", "fence_before", "fence_after")
steps = st.one_of(
    st.just(("barrier",)),
    st.tuples(st.integers(0, WARPS - 1), st.sampled_from(OPS), st.integers(0, CELLS - 1)),
)


def run_model(program) -> bool:
    """Whether the model accepts ``program``."""
    order = TmemOrder(WARPS, CELLS)
    try:
        for step in program:
            if step == ("barrier",):
                order.barrier()
                continue
            warp, op, cell = step
            if op in ("ld", "st"):
                order.access(warp, np.array([cell]), write=op == "st", kind=op)
            elif op.startswith("wait_"):
                order.complete(warp, op[5:])
            else:
                getattr(order, op)(warp)
    except (DataRace, SimulationError):
        return False
    return True


def _first(program, start, match):
    return next((k for k in range(start, len(program)) if match(program[k])), None)


def ordered(program, i, j) -> bool:
    """Whether access ``i`` is ordered before access ``j`` (``i < j``), read straight off the ISA: the same warp needs
    ``i``'s wait in between (9.7.16.6.4.2); another warp needs ``i``'s wait, then ``fence::before_thread_sync`` in
    ``i``'s warp, a barrier, then ``fence::after_thread_sync`` in ``j``'s warp, all before ``j`` (9.7.16.6.4.4)."""
    (a, kind, _), (b, _, _) = program[i], program[j]
    done = _first(program, i + 1, lambda s: len(s) == 3 and s[0] == a and s[1] == f"wait_{kind}")
    if a == b:
        return done is not None and done < j
    if done is None:
        return False
    released = _first(program, done + 1, lambda s: len(s) == 3 and s[0] == a and s[1] == "fence_before")
    if released is None:
        return False
    barrier = _first(program, released + 1, lambda s: s == ("barrier",))
    if barrier is None:
        return False
    acquired = _first(program, barrier + 1, lambda s: len(s) == 3 and s[0] == b and s[1] == "fence_after")
    return acquired is not None and acquired < j


def oracle(program) -> bool:
    """Whether every pair of conflicting accesses (one cell, a store involved; loads of one warp never conflict)
    is ordered."""
    accesses = [k for k, s in enumerate(program) if len(s) == 3 and s[1] in ("ld", "st")]
    for x, i in enumerate(accesses):
        for j in accesses[x + 1 :]:
            (a, p, cell_i), (b, q, cell_j) = program[i], program[j]
            if cell_i == cell_j and "st" in (p, q) and not ordered(program, i, j):
                return False
    return True


@st.composite
def rounds(draw):
    """Programs shaped like kernels: rounds of accesses, then (each step sometimes missing or out of place) waits
    and ``fence::before`` in every warp, a barrier, ``fence::after`` in every warp. Free-form step lists hardly
    ever order a conflict between warps; these mostly do, so both answers get exercised."""
    program = []
    for _ in range(draw(st.integers(1, 3))):
        program += draw(
            st.lists(
                st.tuples(st.integers(0, WARPS - 1), st.sampled_from(("ld", "st")), st.integers(0, CELLS - 1)),
                min_size=1,
                max_size=3,
            )
        )
        sync = [(w, op, 0) for w in range(WARPS) for op in ("wait_ld", "wait_st", "fence_before")]
        sync += [("barrier",)] + [(w, "fence_after", 0) for w in range(WARPS)]
        keep = draw(st.lists(st.booleans(), min_size=len(sync), max_size=len(sync)))
        kept = [step for step, k in zip(sync, keep, strict=True) if k or draw(st.integers(0, 9))]
        if len(kept) > 1 and not draw(st.integers(0, 5)):  # now and then, two steps change places
            i = draw(st.integers(0, len(kept) - 2))
            kept[i], kept[i + 1] = kept[i + 1], kept[i]
        program += kept
    return program


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(steps, max_size=14), rounds()))
def test_the_model_accepts_exactly_the_programs_the_isa_rules_order(program):
    assert run_model(program) == oracle(program)


@pytest.mark.parametrize(
    "program, accepted",
    [
        # the canonical exchange: store, wait, fence, barrier, fence, load
        (
            [
                (0, "st", 0),
                (0, "wait_st", 0),
                (0, "fence_before", 0),
                ("barrier",),
                (1, "fence_after", 0),
                (1, "ld", 0),
            ],
            True,
        ),
        # the fence before the wait releases nothing
        (
            [
                (0, "st", 0),
                (0, "fence_before", 0),
                (0, "wait_st", 0),
                ("barrier",),
                (1, "fence_after", 0),
                (1, "ld", 0),
            ],
            False,
        ),
        # loads of one cell by two warps never conflict
        ([(0, "ld", 0), (1, "ld", 0)], True),
        # a store after another warp's load needs the same steps
        ([(0, "ld", 0), (0, "wait_ld", 0), ("barrier",), (1, "fence_after", 0), (1, "st", 0)], False),
    ],
)
def test_worked_programs(program, accepted):
    assert run_model(program) == oracle(program) == accepted
