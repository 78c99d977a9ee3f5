"""A 5x7 bitmap font for the PNG writer (upper case; lower case letters draw as upper case). Each glyph is seven
rows of five bits, the leftmost pixel in bit 4. Drawn by hand for this project."""

from __future__ import annotations

_ROWS = {
    "0": "0E 11 13 15 19 11 0E",
    "1": "04 0C 04 04 04 04 0E",
    "2": "0E 11 01 02 04 08 1F",
    "3": "1F 02 04 02 01 11 0E",
    "4": "02 06 0A 12 1F 02 02",
    "5": "1F 10 1E 01 01 11 0E",
    "6": "06 08 10 1E 11 11 0E",
    "7": "1F 01 02 04 08 08 08",
    "8": "0E 11 11 0E 11 11 0E",
    "9": "0E 11 11 0F 01 02 0C",
    "A": "0E 11 11 11 1F 11 11",
    "B": "1E 11 11 1E 11 11 1E",
    "C": "0E 11 10 10 10 11 0E",
    "D": "1C 12 11 11 11 12 1C",
    "E": "1F 10 10 1E 10 10 1F",
    "F": "1F 10 10 1E 10 10 10",
    "G": "0E 11 10 17 11 11 0F",
    "H": "11 11 11 1F 11 11 11",
    "I": "0E 04 04 04 04 04 0E",
    "J": "07 02 02 02 02 12 0C",
    "K": "11 12 14 18 14 12 11",
    "L": "10 10 10 10 10 10 1F",
    "M": "11 1B 15 15 11 11 11",
    "N": "11 11 19 15 13 11 11",
    "O": "0E 11 11 11 11 11 0E",
    "P": "1E 11 11 1E 10 10 10",
    "Q": "0E 11 11 11 15 12 0D",
    "R": "1E 11 11 1E 14 12 11",
    "S": "0F 10 10 0E 01 01 1E",
    "T": "1F 04 04 04 04 04 04",
    "U": "11 11 11 11 11 11 0E",
    "V": "11 11 11 11 11 0A 04",
    "W": "11 11 11 15 15 15 0A",
    "X": "11 11 0A 04 0A 11 11",
    "Y": "11 11 11 0A 04 04 04",
    "Z": "1F 01 02 04 08 10 1F",
    "(": "02 04 08 08 08 04 02",
    ")": "08 04 02 02 02 04 08",
    "[": "0E 08 08 08 08 08 0E",
    "]": "0E 02 02 02 02 02 0E",
    ":": "00 0C 0C 00 0C 0C 00",
    ",": "00 00 00 00 0C 04 08",
    ".": "00 00 00 00 00 0C 0C",
    "-": "00 00 00 1F 00 00 00",
    "+": "00 04 04 1F 04 04 00",
    "=": "00 00 1F 00 1F 00 00",
    "_": "00 00 00 00 00 00 1F",
    "'": "0C 04 08 00 00 00 00",
    "/": "00 01 02 04 08 10 00",
    "@": "0E 11 01 0D 15 15 0E",
    "<": "02 04 08 10 08 04 02",
    ">": "08 04 02 01 02 04 08",
    "#": "0A 0A 1F 0A 1F 0A 0A",
    "?": "0E 11 01 02 04 00 04",
    "*": "00 04 15 0E 15 04 00",
    '"': "0A 0A 0A 00 00 00 00",
    "!": "04 04 04 04 04 00 04",
    " ": "00 00 00 00 00 00 00",
}

#: Glyph pixels: for each character, the (column, row) offsets that are set.
GLYPHS: dict[str, tuple[tuple[int, int], ...]] = {
    char: tuple(
        (c, r) for r, bits in enumerate(int(b, 16) for b in rows.split()) for c in range(5) if bits >> (4 - c) & 1
    )
    for char, rows in _ROWS.items()
}


def glyph(char: str) -> tuple[tuple[int, int], ...]:
    """The set pixels of ``char`` (lower case as upper case, unknown characters as ``?``).

    Example:
        >>> sorted(glyph("-"))
        [(0, 3), (1, 3), (2, 3), (3, 3), (4, 3)]
    """
    return GLYPHS.get(char.upper(), GLYPHS["?"])
