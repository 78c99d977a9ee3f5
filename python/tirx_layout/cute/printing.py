"""CuTe's two ways of printing a rank-2 layout, for our ``Layout`` and ``ComposedLayout`` (a swizzled one):
``print_layout`` (the text table CuTe prints: row indices down, column indices across, each cell ``L(m, n)`` in a
box of ``+---+``) and ``print_latex`` (a standalone TikZ document, one filled 1 cm node per cell, the grid drawn
over them, row and column indices outside).

Both index a cell ``(m, n)`` the CuTe way, colexicographically: the layout is evaluated at ``m + M * n`` where
``M`` is the size of mode 0. A rank-1 layout prints as one column (CuTe's ``print_latex`` appends a ``1:0`` mode;
``print_layout`` here does the same rather than refusing). A cell of a layout with named strides (``1@laneid``)
shows its place in the same notation (``1@laneid+4``), where CuTe itself prints only integers.
"""

from __future__ import annotations

import sys

import numpy as np

from .layout import PLAIN_AXIS, Layout, shape_size
from .swizzle import ComposedLayout

#: Fill of a LaTeX cell by its value modulo 8: greys, so neighbouring values differ and the text stays readable.
LATEX_GREYS = ("black!00", "black!40", "black!20", "black!10", "black!30", "black!50", "black!15", "black!35")


def layout_grid(layout: Layout | ComposedLayout) -> tuple[int, int, list[list[str]], np.ndarray | None]:
    """``(M, N, texts, values)``: the rows and columns of a rank <= 2 ``layout`` (a ``ComposedLayout`` by its inner
    layout's shape), each cell's text, and the integer cell values (``None`` when the places have named axes).
    ``ValueError`` for rank 3 and above.

    Example:
        >>> layout_grid(Layout.parse("(2,3):(3,1)"))[2]
        [['0', '1', '2'], ['3', '4', '5']]
        >>> layout_grid(Layout.parse("(2,2):(1@laneid,1)"))[2]
        [['0', '1'], ['1@laneid', '1@laneid+1']]
    """
    if not isinstance(layout, Layout | ComposedLayout):
        raise TypeError(f"expected a cute.Layout or cute.ComposedLayout, got {layout!r}")
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    if inner.rank() > 2:
        raise ValueError(f"CuTe prints rank-1 and rank-2 layouts; {layout} has rank {inner.rank()} (group modes first)")
    rows = shape_size(inner.shape[0]) if inner.rank() == 2 else inner.size()
    cols = shape_size(inner.shape[1]) if inner.rank() == 2 else 1
    index = np.arange(rows)[:, None] + rows * np.arange(cols)[None, :]
    result = layout.apply_array(index)
    if not isinstance(result, dict):
        return rows, cols, [[str(int(v)) for v in row] for row in result], np.asarray(result)
    names = list(result)
    texts = [[_place_text({n: int(result[n][m, c]) for n in names}) for c in range(cols)] for m in range(rows)]
    return rows, cols, texts, None


def _place_text(place: dict) -> str:
    terms = [str(v) if name == PLAIN_AXIS else f"{v}@{name}" for name, v in place.items() if v]
    return "+".join(terms) or "0"


def layout_text(layout: Layout | ComposedLayout) -> str:
    """The text ``print_layout`` prints (without the final newline): the layout, a header of column indices, then per
    row a ``+---+`` rule and ``| value |`` cells, each cell as wide as the widest value (the cosize's digits).

    Example:
        >>> print(layout_text(Layout.parse("(2,2):(2,1)")))
        (2,2):(2,1)
              0   1
            +---+---+
         0  | 0 | 1 |
            +---+---+
         1  | 2 | 3 |
            +---+---+
    """
    rows, cols, texts, values = layout_grid(layout)
    if values is not None:
        cosize = int(values.max()) + 1 if values.size else 1
        digits = len(str(max(cosize, 1)))
    else:
        digits = max(len(t) for row in texts for t in row)
    rule = "    " + ("+" + "-" * (digits + 2)) * cols + "+"
    lines = [str(layout), "    " + "".join(f"  {n:>{digits}} " for n in range(cols))]
    for m in range(rows):
        lines.append(rule)
        lines.append(f"{m:>2}  " + "".join(f"| {t:>{digits}} " for t in texts[m]) + "|")
    lines.append(rule)
    return "\n".join(lines)


def print_layout(layout: Layout | ComposedLayout, file=None) -> None:
    """Print ``layout`` as CuTe's ``print_layout`` does (see ``layout_text``).

    Example:
        >>> print_layout(Layout.parse("2:1"))
        2:1
              0
            +---+
         0  | 0 |
            +---+
         1  | 1 |
            +---+
    """
    print(layout_text(layout), file=sys.stdout if file is None else file)


def latex_text(layout: Layout | ComposedLayout) -> str:
    """The standalone LaTeX/TikZ document ``print_latex`` prints: row ``m`` goes down and column ``n`` across
    (``x={(0cm,-1cm)}, y={(1cm,0cm)}``), each cell a 1 cm node at ``(m,n)`` filled by ``LATEX_GREYS[value % 8]``,
    then the grid and the row/column indices at ``(m,-1)`` and ``(-1,n)``.

    Example:
        >>> text = latex_text(Layout.parse("(2,2):(2,1)"))
        >>> [line for line in text.splitlines() if line.startswith("\\\\node[")]
        ['\\\\node[fill=black!00] at (0,0) {0};', '\\\\node[fill=black!40] at (0,1) {1};', \
'\\\\node[fill=black!20] at (1,0) {2};', '\\\\node[fill=black!10] at (1,1) {3};']
    """
    rows, cols, texts, values = layout_grid(layout)
    lines = [
        f"% Layout: {layout}",
        "\\documentclass[convert]{standalone}",
        "\\usepackage{tikz}",
        "",
        "\\begin{document}",
        "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style={minimum size=1cm, outer sep=0pt}]",
        "",
    ]
    for m in range(rows):
        for n in range(cols):
            shade = LATEX_GREYS[int(values[m, n]) % 8] if values is not None else LATEX_GREYS[(m + rows * n) % 8]
            text = texts[m][n].replace("@", "@\\allowbreak ") if values is None else texts[m][n]
            lines.append(f"\\node[fill={shade}] at ({m},{n}) {{{text}}};")
    lines += ["", f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({rows},{cols});", ""]
    lines += [f"\\node at ({m},-1) {{\\Large{{\\texttt{{{m}}}}}}};" for m in range(rows)]
    lines += [f"\\node at (-1,{n}) {{\\Large{{\\texttt{{{n}}}}}}};" for n in range(cols)]
    lines += ["\\end{tikzpicture}", "\\end{document}"]
    return "\n".join(lines)


def print_latex(layout: Layout | ComposedLayout, file=None) -> None:
    """Print ``layout`` as CuTe's ``print_latex`` does: a TikZ document (see ``latex_text``) to compile with
    ``pdflatex``.

    Example:
        >>> print_latex(Layout.parse("2:1"))  # doctest: +ELLIPSIS
        % Layout: 2:1
        \\documentclass[convert]{standalone}
        ...
        \\end{document}
    """
    print(latex_text(layout), file=sys.stdout if file is None else file)
