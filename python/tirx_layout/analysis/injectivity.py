"""Injectivity of a layout over its whole logical domain: whether two distinct elements ever share a physical place
(replicas of one element are its own places and do not count), and whether an element's replicas coincide."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Largest number of places enumerated (elements x replicas); bigger layouts are refused, not guessed.
MAX_PLACES = 1 << 22


@dataclass(frozen=True)
class InjectivityReport:
    """``shared_places``: places reached by more than one element (``example``: two such flat elements and the
    place, as ``{axis: value}``); ``coinciding_replicas``: elements whose replica places are not all distinct."""

    elements: int
    shared_places: int
    coinciding_replicas: int
    example: tuple[int, int, dict] | None

    @property
    def injective(self) -> bool:
        return self.shared_places == 0


def injectivity(layout) -> InjectivityReport:
    """Check every element of ``layout`` (a TileLayout or ComposeLayout) against every other, by enumeration.

    Example:
        >>> from tirx_layout import TileLayout, S, laneid
        >>> injectivity(TileLayout(S[(4, 8):(8, 1)])).injective
        True
        >>> report = injectivity(TileLayout(S[(2, 4):(0, 1 @ laneid)]))  # the two rows share every lane
        >>> report.shared_places, report.example
        (4, (0, 4, {'m': 0, 'laneid': 0}))
    """
    count = layout.size()
    replicas = layout.num_replicas() if hasattr(layout, "num_replicas") else layout.tile_layout.num_replicas()
    if count * replicas > MAX_PLACES:
        raise ValueError(f"{count} elements x {replicas} replicas is more than the {MAX_PLACES} places enumerated")
    result = layout.apply_all(np.arange(count, dtype=np.int64))
    names = list(result)
    # A layout with no axes (S[()]) puts every element at the one empty place.
    columns = [np.broadcast_to(np.asarray(result[n]), (replicas, count)) for n in names]
    flat = np.stack(columns, axis=-1).reshape(-1, len(names)) if names else np.zeros((replicas * count, 0), np.int64)
    element = np.tile(np.arange(count), replicas)
    _, place_id = np.unique(flat, axis=0, return_inverse=True)
    place_id = place_id.reshape(-1)
    pairs = np.unique(np.stack([place_id, element], axis=1), axis=0)
    coinciding = len(np.unique(element[_duplicate_rows(np.stack([place_id, element], axis=1))]))
    per_place = np.bincount(pairs[:, 0])
    shared = np.flatnonzero(per_place > 1)
    example = None
    if len(shared):
        owners = pairs[pairs[:, 0] == shared[0], 1]
        where = int(np.flatnonzero(place_id == shared[0])[0])
        example = (int(owners[0]), int(owners[1]), {n: int(v) for n, v in zip(names, flat[where], strict=True)})
    return InjectivityReport(count, len(shared), coinciding, example)


def _duplicate_rows(rows: np.ndarray) -> np.ndarray:
    """Indices of rows equal to an earlier row."""
    _, first = np.unique(rows, axis=0, return_index=True)
    mask = np.ones(len(rows), dtype=bool)
    mask[first] = False
    return np.flatnonzero(mask)
