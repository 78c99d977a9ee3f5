"""What inference chose, as pictures: ``write_layout_pictures`` and ``tirx-layout compile --show-layouts`` draw every
buffer's layout after ``infer_layouts`` (compared with ``layout_of`` on the inferred function)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import tvm

from tirx_layout import layout_of
from tirx_layout.tools.cli import main
from tirx_layout.transform.infer_layouts import infer_layouts
from tirx_layout.viz.kernel_pictures import inferred_layouts, write_layout_pictures
from tirx_layout.viz.scene import build_scene

KERNEL = """
import tirx_layout
from tvm.script import tirx as T

@T.prim_func
def k(A: T.Buffer((32, 4), "float32"), B: T.Buffer((32, 4), "float32")):
    T.device_entry()
    tx = T.thread_id([32])
    frag = T.alloc_local((32, 4), "float32")
    T.tile_copy(frag, A)
    T.tile_copy(B, frag)
"""


def _kernel():
    return tvm.script.from_source(KERNEL.split("\n", 3)[3])


def _svg_texts(path) -> list[str]:
    return [t.text for t in ET.parse(path).getroot().iter("{http://www.w3.org/2000/svg}text")]


def test_pictures_of_the_inferred_layouts(tmp_path):
    func = _kernel()
    chosen = layout_of("frag", infer_layouts(func))
    assert chosen is not None  # the fragment had no layout; inference gave it one
    assert inferred_layouts(func) == {"frag": chosen}
    written = write_layout_pictures(func, tmp_path / "pics", "k.")
    assert written == [tmp_path / "pics" / "k.frag.svg"]
    texts = _svg_texts(written[0])
    assert repr(chosen) in texts
    scene = build_scene(chosen, (32, 4), "float32")
    assert {e["label"] for e in scene["elements"]} <= set(texts)


def test_compile_show_layouts(tmp_path, capsys):
    source = tmp_path / "kernels.py"
    source.write_text(KERNEL)
    status = main(["compile", str(source), "--show-layouts", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert status == 0 and "__global__" in out
    assert f"// k: 1 layout picture in {tmp_path / 'out'}" in err.splitlines()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["k.frag.svg"]
