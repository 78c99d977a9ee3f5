"""CuTe's integer-tuple helpers under pycute's names (``product``, ``prefix_product``, ``inner_product``,
``shape_div``, ``flatten``), so code written against pycute ports by changing the import. An "int tuple" is an int or
a (nested) tuple of int tuples. Where pycute asserts a precondition these raise ``ValueError`` naming the values.
"""

from __future__ import annotations

from ..core.values import static_int


def _is_tuple(value) -> bool:
    return isinstance(value, tuple)


def flatten(t) -> tuple:
    """The leaves of ``t`` in order, as a flat tuple (an int is a one-leaf tuple).

    Example:
        >>> flatten((1, (2, (3,)), ())), flatten(5)
        ((1, 2, 3), (5,))
    """
    if _is_tuple(t):
        return tuple(leaf for element in t for leaf in flatten(element))
    return (t,)


def product(a) -> int:
    """The product of every leaf of ``a`` (1 for the empty tuple).

    Example:
        >>> product((2, (3, 4))), product(5), product(())
        (24, 5, 1)
    """
    if _is_tuple(a):
        result = 1
        for element in a:
            result *= product(element)
        return result
    return static_int(a, "an int-tuple entry")


def inner_product(a, b) -> int:
    """``sum a_i * b_i`` over the leaves of congruent ``a`` and ``b``.

    Example:
        >>> inner_product((2, (3, 4)), (1, (2, 3)))
        20
    """
    if _is_tuple(a) != _is_tuple(b) or (_is_tuple(a) and len(a) != len(b)):
        raise ValueError(f"inner_product: {a!r} and {b!r} are not congruent")
    if _is_tuple(a):
        return sum(inner_product(x, y) for x, y in zip(a, b, strict=True))
    return static_int(a, "an int-tuple entry") * static_int(b, "an int-tuple entry")


def prefix_product(a, init=1):
    """The exclusive prefix products of ``a``, congruent to it, starting at ``init`` (the column-major strides of the
    shape ``a`` when ``init`` is 1). A tuple ``init`` applies mode by mode.

    Example:
        >>> prefix_product((2, (3, 4))), prefix_product((2, 3), 5)
        ((1, (2, 6)), (5, 10))
    """
    if _is_tuple(a):
        if _is_tuple(init):
            if len(init) != len(a):
                raise ValueError(f"prefix_product: {a!r} and the initial values {init!r} are not congruent")
            return tuple(prefix_product(x, i) for x, i in zip(a, init, strict=True))
        result = []
        for element in a:
            result.append(prefix_product(element, init))
            init = init * product(element)
        return tuple(result)
    if _is_tuple(init):
        raise ValueError(f"prefix_product: an int {a!r} takes an int initial value, got {init!r}")
    return static_int(init, "the initial value")


def shape_div(a, b):
    """``a`` divided by ``b`` the way CuTe divides shapes: int by int is ``a // b`` when ``b`` divides ``a``, and 1
    when ``a`` divides ``b`` (the quotient rounds up to one whole mode); a tuple by an int divides its modes left to
    right, each taking what the previous ones did not; tuple by tuple goes mode by mode. ``ValueError`` when neither
    int divides the other.

    Example:
        >>> shape_div((4, 6, 8), 12), shape_div(4, 8), shape_div((4, 6), (2, 3))
        ((1, 2, 8), 1, (2, 2))
    """
    if _is_tuple(a):
        if _is_tuple(b):
            if len(a) != len(b):
                raise ValueError(f"shape_div: {a!r} and {b!r} are not congruent")
            return tuple(shape_div(x, y) for x, y in zip(a, b, strict=True))
        result = []
        for element in a:
            result.append(shape_div(element, b))
            b = shape_div(b, product(element))
        return tuple(result)
    if _is_tuple(b):
        return shape_div(a, product(b))
    a, b = static_int(a, "a shape"), static_int(b, "a divisor")
    if b == 0:
        raise ValueError(f"shape_div: cannot divide {a} by 0")
    if a % b == 0:
        return a // b
    if b % a == 0:
        return 1 if (a > 0) == (b > 0) else -1
    raise ValueError(f"shape_div: neither of {a} and {b} divides the other")
