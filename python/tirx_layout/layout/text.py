"""A safe parser for layout text: the ``S[...] + R[...] + offset`` notation the library prints, never ``eval``.

The text is read by a small recursive-descent parser into Python ints, axes and ``value @ axis`` terms, and those are
combined with the library's own operators (``S[...]``, ``R[...]``, ``+``), so a parsed layout is exactly the object
the same text builds in Python. Accepted, besides bare specs, are the reprs ``TileLayout(...)``,
``SwizzleLayout(pe, sl, al[, swizzle_inner=...])`` and ``ComposeLayout(swizzle, tile)`` (or its keyword form), and
``Axis.get('name')`` for user axes. Nothing else is evaluated: there are no names but axes and these four.

Grammar (``-`` between terms negates an offset, a convenience plain Python lacks):

    layout := call | spec          call := NAME "(" [arg ("," arg)*] ")"     arg := [NAME "="] (call | spec | bool)
    spec   := ["-"] term (("+" | "-") term)*        term := ("S" | "R") "[" key "]" | value
    key    := part [":" part] | part ("," part)+    part := "(" [value ("," value)* [","]] ")" | value
    value  := ["-"] INT ["@" axis] | axis           axis := NAME | "Axis" "." "get" "(" STRING ")"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .axis import Axis
from .spec import LayoutSpec, OnAxis, R, S
from .swizzle import ComposeLayout, SwizzleLayout
from .tile import TileLayout

#: Longest text accepted: the parser is linear, but a page or a shell should not hand it megabytes.
MAX_TEXT = 20_000

_TOKEN = re.compile(
    r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_]\w*)|(?P<str>'[^'\\]*'|\"[^\"\\]*\")|(?P<op>[\[\](),:@+\-=.]))"
)


class LayoutTextError(ValueError):
    """Layout text that does not parse or does not build a layout; ``column`` is 1-based (0: the whole text).

    Example:
        >>> try:
        ...     parse_layout("S[(8, 4):(4, 1]")
        ... except LayoutTextError as err:
        ...     print(err)
        column 15: expected ',' or ')' but found ']'
    """

    def __init__(self, message: str, column: int = 0):
        super().__init__(f"column {column}: {message}" if column else message)
        self.column = column
        self.reason = message


@dataclass(frozen=True)
class _Token:
    kind: str  # "int", "name", "str", "op" or "end"
    text: str
    column: int


def _tokens(text: str) -> list[_Token]:
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            if text[pos:].strip() == "":
                break
            bad = len(text[pos:]) - len(text[pos:].lstrip()) + pos
            raise LayoutTextError(f"unexpected character {text[bad]!r}", bad + 1)
        kind = match.lastgroup
        out.append(_Token(kind, match.group(kind), match.start(kind) + 1))
        pos = match.end()
    out.append(_Token("end", "end of text", len(text) + 1))
    return out


#: Brackets a layout text may nest: real layouts nest a few levels; the limit keeps the recursive descent (and
#: the error a user sees) far from Python's recursion limit.
MAX_NESTING = 32


def _check_nesting(tokens: list[_Token]) -> None:
    depth = 0
    for token in tokens:
        if token.kind == "op" and token.text in "([":
            depth += 1
            if depth > MAX_NESTING:
                raise LayoutTextError(f"nested too deeply: more than {MAX_NESTING} levels of brackets", token.column)
        elif token.kind == "op" and token.text in ")]":
            depth -= 1


class _Parser:
    """Recursive descent over the token list; each ``_name`` method parses the grammar rule of that name."""

    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.at = 0
        _check_nesting(self.tokens)

    # ---- token helpers -----------------------------------------------------------------------------------

    @property
    def peek(self) -> _Token:
        return self.tokens[self.at]

    def _next(self) -> _Token:
        token = self.tokens[self.at]
        self.at = min(self.at + 1, len(self.tokens) - 1)
        return token

    def _is(self, text: str, ahead: int = 0) -> bool:
        token = self.tokens[min(self.at + ahead, len(self.tokens) - 1)]
        return token.kind in ("op", "name") and token.text == text

    def _expect(self, text: str) -> _Token:
        if not self._is(text):
            raise LayoutTextError(f"expected {text!r} but found {self._shown(self.peek)}", self.peek.column)
        return self._next()

    @staticmethod
    def _shown(token: _Token) -> str:
        return token.text if token.kind == "end" else repr(token.text)

    def _comma_or_close(self) -> None:
        if not self._is(","):
            self._fail("',' or ')'")
        self._next()

    def _fail(self, what: str):
        raise LayoutTextError(f"expected {what} but found {self._shown(self.peek)}", self.peek.column)

    # ---- rules -----------------------------------------------------------------------------------------------

    def layout(self):
        if self.peek.kind == "name" and self._is("(", 1) and self.peek.text in _CALLS:
            result = self._call()
        else:
            result = self._spec()
        if self.peek.kind != "end":
            self._fail("'+', '-' or the end of the text")
        return result

    def _call(self):
        name = self._next()
        self._expect("(")
        positional, keywords = [], {}
        while not self._is(")"):
            if self.peek.kind == "name" and self._is("=", 1):
                key = self._next()
                self._next()
                if key.text in keywords:
                    raise LayoutTextError(f"argument {key.text!r} given twice", key.column)
                keywords[key.text] = (self._argument(), key.column)
            elif keywords:
                self._fail("a keyword argument (positional ones come first)")
            else:
                positional.append((self._argument(), self.tokens[self.at - 1].column))
            if not self._is(")"):
                self._comma_or_close()
        self._expect(")")
        return _CALLS[name.text](name, [v for v, _ in positional], {k: v for k, (v, _) in keywords.items()})

    def _argument(self):
        if self.peek.kind == "name" and self.peek.text in ("True", "False"):
            return self._next().text == "True"
        if self.peek.kind == "name" and self._is("(", 1) and self.peek.text in _CALLS:
            return self._call()
        value = self._spec()
        # Plain numbers are arguments too (SwizzleLayout(3, 3, 3)); other bare offsets stay wrapped.
        return value.value if isinstance(value, _Bare) and type(value.value) is int else value

    def _spec(self):
        column = self.peek.column
        negate = False
        if self._is("-"):
            self._next()
            negate = True
        total = self._term(negate)
        while self._is("+") or self._is("-"):
            sign = self._next()
            term = self._term(sign.text == "-")
            try:
                total = total + term
            except (TypeError, ValueError) as err:
                raise LayoutTextError(str(err), sign.column) from None
        if isinstance(total, int | OnAxis) or not isinstance(total, LayoutSpec):
            # A bare number or offset is no layout; the caller decides whether that is an error.
            return _Bare(total, column)
        return total

    def _term(self, negate: bool):
        token = self.peek
        if token.kind == "name" and token.text in ("S", "R") and self._is("[", 1):
            if negate:
                raise LayoutTextError("a spec cannot be negated or subtracted", token.column)
            self._next()
            self._next()
            key = self._key()
            self._expect("]")
            builder = S if token.text == "S" else R
            try:
                return builder[key]
            except (TypeError, ValueError, KeyError) as err:
                raise LayoutTextError(_message(err), token.column) from None
        value = self._value()
        if isinstance(value, Axis):
            raise LayoutTextError(f"an offset needs a value: write 1@{value.name}", token.column)
        return -value if negate else value

    def _key(self):
        first = self._part()
        if self._is(":"):
            self._next()
            return slice(first, self._part())
        if self._is(","):
            parts = [first]
            while self._is(","):
                self._next()
                if self._is("]"):
                    break
                parts.append(self._value())
            return tuple(parts)
        return first

    def _part(self):
        if not self._is("("):
            return self._value()
        self._next()
        items = []
        while not self._is(")"):
            items.append(self._value())
            if not self._is(")"):
                self._comma_or_close()
        self._expect(")")
        return tuple(items)

    def _value(self):
        negative = False
        if self._is("-"):
            self._next()
            negative = True
        token = self.peek
        if token.kind == "int":
            self._next()
            number = -int(token.text) if negative else int(token.text)
            if not self._is("@"):
                return number
            self._next()
            axis = self._axis()
            try:
                return OnAxis(number, axis)
            except (TypeError, ValueError) as err:
                raise LayoutTextError(_message(err), token.column) from None
        if token.kind == "name" and not negative:
            return self._axis()
        self._fail("a number or an axis")

    def _axis(self) -> Axis:
        token = self.peek
        if token.kind != "name":
            self._fail("an axis name")
        self._next()
        name = token.text
        if name == "Axis" and self._is("."):
            self._next()
            self._expect("get")
            self._expect("(")
            quoted = self.peek
            if quoted.kind != "str":
                self._fail("a quoted axis name")
            self._next()
            self._expect(")")
            name = quoted.text[1:-1]
        try:
            return Axis.get(name)
        except KeyError as err:
            raise LayoutTextError(_message(err), token.column) from None


@dataclass(frozen=True)
class _Bare:
    """A spec made of offsets only (``5@warpid``): valid inside Python, but not a layout."""

    value: object
    column: int


def _message(err: Exception) -> str:
    text = str(err)
    return text[1:-1] if isinstance(err, KeyError) and text.startswith(("'", '"')) else text


def _tile(spec, column: int) -> TileLayout:
    if isinstance(spec, TileLayout):
        return spec
    if isinstance(spec, _Bare):
        raise LayoutTextError("a layout needs S[...]; this is only an offset", spec.column)
    if not isinstance(spec, LayoutSpec):
        raise LayoutTextError(f"expected a layout, got {spec!r}", column)
    try:
        return TileLayout(spec)
    except (TypeError, ValueError, KeyError) as err:
        raise LayoutTextError(_message(err), column) from None


def _build(name: _Token, make):
    try:
        return make()
    except LayoutTextError:
        raise
    except (TypeError, ValueError, KeyError) as err:
        message = _message(err)
        prefix = "" if message.startswith(name.text) else f"{name.text}: "
        raise LayoutTextError(prefix + message, name.column) from None


def _tile_call(name: _Token, args, kwargs):
    if len(args) != 1 or kwargs:
        raise LayoutTextError("TileLayout takes one spec: TileLayout(S[...] + ...)", name.column)
    return _tile(args[0], name.column)


def _ints(name: _Token, values) -> list[int]:
    for value in values:
        if type(value) is not int:
            raise LayoutTextError(f"{name.text} takes integers, got {value!r}", name.column)
    return list(values)


def _swizzle_call(name: _Token, args, kwargs):
    allowed = ("per_element", "swizzle_len", "atom_len", "swizzle_inner")
    unknown = set(kwargs) - set(allowed)
    if unknown or len(args) > 4:
        raise LayoutTextError(f"SwizzleLayout takes {', '.join(allowed)}", name.column)
    values = dict(zip(allowed, args, strict=False))
    for key, value in kwargs.items():
        if key in values:
            raise LayoutTextError(f"SwizzleLayout: {key} given twice", name.column)
        values[key] = value
    numbers = _ints(name, [values.get(k) for k in allowed[:3] if k in values])
    if len(numbers) != 3:
        raise LayoutTextError("SwizzleLayout needs per_element, swizzle_len and atom_len", name.column)
    inner = values.get("swizzle_inner", True)
    if type(inner) is not bool:
        raise LayoutTextError("SwizzleLayout: swizzle_inner is True or False", name.column)
    return _build(name, lambda: SwizzleLayout(*numbers, swizzle_inner=inner))


def _compose_call(name: _Token, args, kwargs):
    if args and kwargs.keys() - {"tile_layout"}:
        raise LayoutTextError("ComposeLayout takes (swizzle, tile) or keyword parameters, not both", name.column)
    if args:
        if len(args) + len(kwargs) != 2 or not isinstance(args[0], SwizzleLayout):
            raise LayoutTextError("ComposeLayout takes (SwizzleLayout(...), TileLayout(...))", name.column)
        tile = args[1] if len(args) == 2 else kwargs["tile_layout"]
        return _build(name, lambda: ComposeLayout(args[0], _tile(tile, name.column)))
    if "tile_layout" not in kwargs:
        raise LayoutTextError("ComposeLayout needs tile_layout=", name.column)
    tile = _tile(kwargs.pop("tile_layout"), name.column)
    swizzle = _swizzle_call(name, [], kwargs)
    return _build(name, lambda: ComposeLayout(swizzle, tile))


_CALLS = {"TileLayout": _tile_call, "SwizzleLayout": _swizzle_call, "ComposeLayout": _compose_call}


def parse_layout(text: str, swizzle_alone: bool = False) -> TileLayout | ComposeLayout | SwizzleLayout:
    """The layout that ``text`` describes (``S[...] + R[...] + offset``, or a ``TileLayout``/``ComposeLayout``
    repr); ``LayoutTextError`` (a ``ValueError``) naming the column otherwise. Never evaluates code. A bare
    ``SwizzleLayout(...)`` is accepted only with ``swizzle_alone=True`` (a buffer may be laid out by a swizzle of its
    row-major index; a picture needs a tile).

    Example:
        >>> parse_layout("S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid")
        TileLayout(S[(8, 2, 4, 2):(4@laneid, 1@warpid, 1@laneid, 1)] + R[2:4@warpid] + 5@warpid)
        >>> parse_layout("ComposeLayout(SwizzleLayout(3, 3, 3), TileLayout(S[(8, 64):(64, 1)]))").swizzle
        SwizzleLayout(3, 3, 3)
    """
    if not isinstance(text, str):
        raise TypeError(f"layout text must be a str, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise LayoutTextError(f"layout text is {len(text)} characters; at most {MAX_TEXT} are read")
    if not text.strip():
        raise LayoutTextError("empty layout text; write e.g. S[(8, 4):(4, 1)]")
    result = _Parser(text).layout()
    if isinstance(result, SwizzleLayout):
        if swizzle_alone:
            return result
        raise LayoutTextError("a SwizzleLayout alone has no tile; compose it: ComposeLayout(SwizzleLayout(...), ...)")
    return result if isinstance(result, ComposeLayout) else _tile(result, 1)
