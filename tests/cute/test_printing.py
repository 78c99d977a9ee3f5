"""CuTe-style printing: ``print_layout`` text for layouts worked by hand from CuTe's definition of the table (a
header of column indices, then per row a rule of ``+`` and ``idx_width + 1`` dashes and ``| value `` cells, where
``idx_width`` is the cosize's digit count + 2), ``print_latex``'s TikZ nodes, and the notebook picture."""

from __future__ import annotations

import io
import random
import re
import xml.etree.ElementTree as ET

import pytest

from tirx_layout.cute import ComposedLayout, Layout, Swizzle, latex_text, layout_text, print_latex, print_layout

pycute = pytest.importorskip(
    "pycute", reason="pycute (the CuTe oracle) ships in nvidia-cutlass: pip install --no-deps nvidia-cutlass==4.2.0.0"
)

# Each table below is written out by hand from CuTe's definition, not produced by our code. The column header line
# ends with a space, as CuTe's "  %*d " format leaves one after the last index.
ROW_MAJOR_2x4 = "\n".join(
    [
        "(2,4):(4,1)",
        "      0   1   2   3 ",
        "    +---+---+---+---+",
        " 0  | 0 | 1 | 2 | 3 |",
        "    +---+---+---+---+",
        " 1  | 4 | 5 | 6 | 7 |",
        "    +---+---+---+---+",
    ]
)
COLUMN_MAJOR_4x2 = "\n".join(
    [
        "(4,2):(1,4)",
        "      0   1 ",
        "    +---+---+",
        " 0  | 0 | 4 |",
        "    +---+---+",
        " 1  | 1 | 5 |",
        "    +---+---+",
        " 2  | 2 | 6 |",
        "    +---+---+",
        " 3  | 3 | 7 |",
        "    +---+---+",
    ]
)
# Mode 0 is (2,2):(4,1): row m is the coordinate (m % 2, m // 2), so rows read 0, 4, 1, 5 (then +2 per column).
HIERARCHICAL = "\n".join(
    [
        "((2,2),2):((4,1),2)",
        "      0   1 ",
        "    +---+---+",
        " 0  | 0 | 2 |",
        "    +---+---+",
        " 1  | 4 | 6 |",
        "    +---+---+",
        " 2  | 1 | 3 |",
        "    +---+---+",
        " 3  | 5 | 7 |",
        "    +---+---+",
    ]
)
# cosize 16: two digits, so idx_width 4 and five characters per rule segment.
TWO_DIGITS = "\n".join(
    [
        "(2,3):(8,1)",
        "       0    1    2 ",
        "    +----+----+----+",
        " 0  |  0 |  1 |  2 |",
        "    +----+----+----+",
        " 1  |  8 |  9 | 10 |",
        "    +----+----+----+",
    ]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(2,4):(4,1)", ROW_MAJOR_2x4),
        ("(4,2):(1,4)", COLUMN_MAJOR_4x2),
        ("((2,2),2):((4,1),2)", HIERARCHICAL),
        ("(2,3):(8,1)", TWO_DIGITS),
    ],
)
def test_print_layout_matches_cutes_table(text, expected):
    assert layout_text(Layout.parse(text)) == expected
    out = io.StringIO()
    print_layout(Layout.parse(text), file=out)
    assert out.getvalue() == expected + "\n"


def test_print_layout_named_strides_and_limits():
    text = layout_text(Layout.parse("(2,2):(1@laneid,1)"))
    assert text.splitlines()[3] == " 0  |          0 |          1 |"
    assert text.splitlines()[5] == " 1  |   1@laneid | 1@laneid+1 |"
    with pytest.raises(ValueError, match="rank 3"):
        layout_text(Layout.parse("(2,2,2):(1,2,4)"))
    with pytest.raises(TypeError, match=r"cute\.Layout or cute\.ComposedLayout"):
        layout_text("(2,2):(1,2)")


def _table_values(text: str) -> list[list[int]]:
    return [[int(v) for v in re.findall(r"\|\s*(\d+)", line)] for line in text.splitlines() if "|" in line]


def test_print_layout_cells_are_pycutes_values():
    rng = random.Random(19)
    for _ in range(40):
        shape = (rng.choice([1, 2, 3, (2, 2)]), rng.choice([1, 2, 4, (2, 3)]))
        stride = tuple(
            tuple(rng.randrange(0, 9) for _ in s) if isinstance(s, tuple) else rng.randrange(0, 9) for s in shape
        )
        theirs = pycute.Layout(shape, stride)
        rows, cols = pycute.size(shape[0]), pycute.size(shape[1])
        values = _table_values(layout_text(Layout(shape, stride)))
        assert values == [[theirs(m + rows * n) for n in range(cols)] for m in range(rows)]


def test_print_latex_is_a_tikz_grid_of_the_values():
    layout = Layout.parse("((2,2),2):((4,1),2)")
    text = latex_text(layout)
    lines = text.splitlines()
    assert lines[0] == "% Layout: ((2,2),2):((4,1),2)"
    assert lines[1:3] == ["\\documentclass[convert]{standalone}", "\\usepackage{tikz}"]
    assert lines[-2:] == ["\\end{tikzpicture}", "\\end{document}"]
    nodes = {
        (int(m), int(n)): int(v)
        for m, n, v in re.findall(r"^\\node\[fill=black!\d+\] at \((\d+),(\d+)\) \{(\d+)\};$", text, re.M)
    }
    assert nodes == {(m, n): [[0, 2], [4, 6], [1, 3], [5, 7]][m][n] for m in range(4) for n in range(2)}
    assert "\\draw[color=black,thick,shift={(-0.5,-0.5)}] (0,0) grid (4,2);" in lines
    assert [line for line in lines if line.startswith("\\node at")] == [
        *(f"\\node at ({m},-1) {{\\Large{{\\texttt{{{m}}}}}}};" for m in range(4)),
        *(f"\\node at (-1,{n}) {{\\Large{{\\texttt{{{n}}}}}}};" for n in range(2)),
    ]
    out = io.StringIO()
    print_latex(layout, file=out)
    assert out.getvalue() == text + "\n"


def test_cute_layout_notebook_picture():
    layout = Layout.parse("(4,8):(8,1)")
    root = ET.fromstring(layout._repr_svg_())
    ns = "{http://www.w3.org/2000/svg}"
    cells = [r for r in root.iter(f"{ns}rect") if r.get("data-panel") == "cute"]
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert len(cells) == 32 and "(4,8):(8,1)" in texts
    # Cell k (row-major on the picture) shows L(m, n) = 8 m + n.
    by_cell = sorted(cells, key=lambda r: int(r.get("data-cell")))
    xs = sorted({float(r.get("x")) for r in by_cell})
    ys = sorted({float(r.get("y")) for r in by_cell})
    assert len(xs) == 8 and len(ys) == 4
    assert sorted(int(t) for t in texts if t.isdigit() and int(t) < 32).count(31) == 1
    assert layout._repr_html_().startswith("<div")
    assert Layout.parse("(2,2,2):(1,2,4)")._repr_svg_() is None


def test_print_layout_of_a_swizzled_layout():
    # Swizzle<3,3,3> XORs address bits 6-8 into bits 3-5: in (8,64):(64,1), row i (address 64 i, bits 6-8 = i)
    # starts at 64 i + 8 i = 72 i; row 0 (bits 6-8 zero) is the identity. cosize 512: three digits per cell.
    layout = ComposedLayout(Swizzle(3, 3, 3), 0, Layout.parse("(8,64):(64,1)"))
    lines = layout_text(layout).splitlines()
    assert lines[0] == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    assert lines[2] == "    " + "+-----" * 64 + "+"
    assert _table_values("\n".join(lines))[0] == list(range(64))
    assert [row[0] for row in _table_values("\n".join(lines))] == [72 * i for i in range(8)]
    assert layout._repr_svg_().startswith("<svg")
