"""Axes: the built-in table of SPEC §1, interning, user registration and its errors, value @ axis."""

import pytest

import tirx_layout
from tirx_layout import Axis, OnAxis, laneid

BUILTIN_TABLE = {
    "bx": ("thread", "kernel", "cta"),
    "by": ("thread", "kernel", "cta"),
    "bz": ("thread", "kernel", "cta"),
    "cbx": ("thread", "cluster", "cta"),
    "cby": ("thread", "cluster", "cta"),
    "cbz": ("thread", "cluster", "cta"),
    "tx": ("thread", "cta", "thread"),
    "warpid": ("thread", "cta", "warp"),
    "laneid": ("thread", "warp", "thread"),
    "wgid": ("thread", "cta", "warpgroup"),
    "tid_in_wg": ("thread", "warpgroup", "thread"),
    "wid_in_wg": ("thread", "warpgroup", "warp"),
    "m": ("memory", None, None),
    "TLane": ("memory", None, None),
    "TCol": ("memory", None, None),
    "P": ("memory", None, None),
    "F": ("memory", None, None),
    "Bank": ("memory", None, None),
}


@pytest.mark.parametrize("name", sorted(BUILTIN_TABLE))
def test_builtin_axes_have_the_spec_attributes(name):
    kind, scope, subscope = BUILTIN_TABLE[name]
    axis = Axis.get(name)
    assert (axis.name, axis.kind, axis.get_scope(), axis.get_subscope()) == (name, kind, scope, subscope)
    assert axis.is_thread() == (kind == "thread")
    assert axis.is_memory() == (kind == "memory")
    assert getattr(tirx_layout, name) is axis


def test_axes_are_interned():
    assert Axis.get("laneid") is Axis.get("laneid")
    assert Axis.get("laneid").same_as(tirx_layout.TileLayout(tirx_layout.S[4 : 1 @ laneid]).shard[0].axis)
    assert Axis.get(laneid) is laneid


def test_unknown_axis_lists_the_known_ones():
    with pytest.raises(KeyError) as err:
        Axis.get("lane")
    message = str(err.value)
    assert "'lane'" in message
    for name in BUILTIN_TABLE:
        assert name in message


def test_axis_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match=r"Axis\.get"):
        Axis("laneid")


def test_register_thread_and_memory_axes():
    smid = Axis.register("test_smid", "thread", scope="cluster", subscope="cta")
    assert (smid.kind, smid.get_scope(), smid.get_subscope()) == ("thread", "cluster", "cta")
    assert Axis.get("test_smid") is smid
    assert Axis.register("test_smid", "thread", scope="cluster", subscope="cta") is smid  # idempotent
    tmem2 = Axis.register("test_tmem_bank", "memory")
    assert tmem2.is_memory() and tmem2.get_scope() is None
    assert "test_smid" in Axis.known() and Axis.known()[: len(BUILTIN_TABLE)] == list(BUILTIN_TABLE)


@pytest.mark.parametrize(
    ("args", "error", "fragment"),
    [
        (("test_bad1", "register"), ValueError, "'register'"),
        (("test_bad2", "thread"), ValueError, "scope and subscope"),
        (("test_bad3", "thread", "thread", "warp"), ValueError, "outer level"),
        (("test_bad4", "thread", "warp", "lane"), ValueError, "'lane'"),
        (("test_bad5", "memory", "cta", None), ValueError, "no scope"),
        (("laneid", "memory"), ValueError, "already registered"),
        (("", "memory"), ValueError, "empty"),
        (("has space", "memory"), ValueError, "'has space'"),
        (("9lives", "memory"), ValueError, "digit"),
        ((3, "memory"), TypeError, "3"),
    ],
)
def test_register_rejects_bad_attributes(args, error, fragment):
    with pytest.raises(error, match=fragment):
        Axis.register(*args)
    if isinstance(args[0], str) and args[0].startswith("test_bad"):
        with pytest.raises(KeyError):
            Axis.get(args[0])  # nothing half-registered


def test_value_at_axis():
    bound = 4 @ laneid
    assert isinstance(bound, OnAxis) and bound.value == 4 and bound.axis is laneid
    assert repr(-3 @ laneid) == "-3@laneid"
    with pytest.raises(TypeError, match=r"2\.5"):
        2.5 @ laneid
