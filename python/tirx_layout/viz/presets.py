"""The layouts of the guide, ready to draw, each built with the library's constructors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..hw.constructors import mma_shared_layout, tcgen05_atom_layout, tmem_datapath_layout, wg_local_layout
from ..layout import ComposeLayout, R, S, TileLayout
from ..layout.axis import TCol, TLane, laneid, warpid


@dataclass(frozen=True)
class Preset:
    """A named picture: how to build the layout, the logical shape, the dtype and a one-line note."""

    name: str
    title: str
    build: Callable[[], object]
    shape: tuple[int, ...]
    dtype: str
    note: str

    def form(self) -> dict:
        """What the page's inputs hold for this preset: the tile's text and, for a composed layout, its swizzle
        as ``per_element,swizzle_len,atom_len``.

        Example:
            >>> PRESETS["swizzled-fp16-128B"].form()["swizzle"]
            '3,3,3'
        """
        layout = self.build()
        swizzle = "none"
        if isinstance(layout, ComposeLayout):
            sw = layout.swizzle
            swizzle = f"{sw.per_element},{sw.swizzle_len},{sw.atom_len}"
            layout = layout.tile_layout
        return {
            "name": self.name,
            "title": self.title,
            "text": str(layout),
            "shape": ",".join(map(str, self.shape)),
            "dtype": self.dtype,
            "swizzle": swizzle,
            "note": self.note,
        }


def _guide_fragment() -> TileLayout:
    return TileLayout(S[(8, 2, 4, 2) : (4 @ laneid, 1 @ warpid, 1 @ laneid, 1)] + R[2 : 4 @ warpid] + 5 @ warpid)


def _two_stages() -> TileLayout:
    return TileLayout(S[(2, 128, 16) : (16 @ TCol, 1 @ TLane, 1 @ TCol)])


def _scale_factor_atom() -> TileLayout:
    return TileLayout(S[(32, 4) : (1 @ TLane, 1 @ TCol)] + R[4 : 32 @ TLane])


_ALL = [
    Preset(
        "tmem-accumulator",
        "TMEM accumulator (datapath D, M=128)",
        lambda: tmem_datapath_layout("D", 128, 32),
        (128, 32),
        "float32",
        "tcgen05.mma result: row i on TMEM lane i, columns on TCol",
    ),
    Preset(
        "tmem-accumulator-m64",
        "TMEM accumulator (datapath F, M=64)",
        lambda: tmem_datapath_layout("F", 64, 32),
        (64, 32),
        "float32",
        "16 rows per warp slab, in the lower half of each 32-lane slab",
    ),
    Preset(
        "tmem-two-stages",
        "Two accumulator stages side by side in TMEM (guide)",
        _two_stages,
        (2, 128, 16),
        "float32",
        "the guide's S[(2, 128, 112):(112@TCol, 1@TLane, 1@TCol)], narrowed to 16 columns per stage",
    ),
    Preset(
        "warp-fragment",
        "Warp fragment with replica and offset (guide)",
        _guide_fragment,
        (8, 16),
        "float32",
        "lanes and warps; R[2:4@warpid] puts a copy 4 warps on, 5@warpid shifts it all",
    ),
    Preset(
        "scale-factor-atom",
        "Scale-factor atom, 4 replicas (guide)",
        _scale_factor_atom,
        (32, 4),
        "uint8",
        "the same 32 rows in all four 32-lane TMEM windows",
    ),
    Preset(
        "swizzled-fp16-128B",
        "128B-swizzled fp16 tile (8 x 64)",
        lambda: mma_shared_layout("float16", "128B", (8, 64)),
        (8, 64),
        "float16",
        "addr = 64 i + 8 ((j >> 3) xor i) + (j & 7): column 0 hits banks 0, 4, ..., 28",
    ),
    Preset(
        "tcgen05-32x32b",
        "tcgen05.ld 32x32b.x8 fragment (fp32)",
        lambda: tcgen05_atom_layout("32x32b", (128, 8), "float32"),
        (128, 8),
        "float32",
        "thread t of the warpgroup holds row t",
    ),
    Preset(
        "tcgen05-16x64b",
        "tcgen05.ld 16x64b.x4 fragment (fp32)",
        lambda: tcgen05_atom_layout("16x64b", (64, 8), "float32"),
        (64, 8),
        "float32",
        "row (l>>2) + 8(l&1), column ((l>>1)&1) + 2r per warp",
    ),
    Preset(
        "tcgen05-16x128b",
        "tcgen05.ld 16x128b.x2 fragment (fp16)",
        lambda: tcgen05_atom_layout("16x128b", (64, 16), "float16"),
        (64, 16),
        "float16",
        "two fp16 values per 32-bit register",
    ),
    Preset(
        "tcgen05-16x256b",
        "tcgen05.ld 16x256b.x2 fragment (fp32)",
        lambda: tcgen05_atom_layout("16x256b", (64, 16), "float32"),
        (64, 16),
        "float32",
        "row (l>>2) + 8((r>>1)&1), column 2(l&3) + (r&1) + 8(r>>2)",
    ),
    Preset(
        "wg-local",
        "Warpgroup-local registers (8 columns)",
        lambda: wg_local_layout(8),
        (128, 8),
        "float32",
        "one row per warpgroup thread",
    ),
]

#: The presets by name, in the order the page lists them.
PRESETS: dict[str, Preset] = {p.name: p for p in _ALL}
