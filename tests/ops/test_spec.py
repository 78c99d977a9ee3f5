"""The op registry's machinery, on an op made for the tests: named fields and how a call carries them, what a call
reads back as, the printed form, the rules every op shares, the family a target picks, and what the registry
refuses."""

import pytest
import tvm

from tirx_layout import script
from tirx_layout.ir.op_calls import op_call, read_op_call
from tirx_layout.ops import (
    REGISTRY,
    ChoiceField,
    ConditionField,
    FlagField,
    MbarrierField,
    OpSpec,
    Record,
    RegionField,
    ScopeField,
    find,
)
from tirx_layout.ops.context import OpContext

from kernels import parse


class Probe(OpSpec):
    """An op with one field of each kind the tests need."""

    name = "test_probe"
    description = "an op for the registry's tests"
    fields = (
        RegionField("dst", writes=True, label="DST"),
        ConditionField("when", default=False),
        MbarrierField("barrier", default=None, keyword=True),
        FlagField("fast", default=True, keyword=True),
        ScopeField(("cta", "warpgroup", "warp"), keyword=True),
    )
    families = ("tcgen05", "wgmma")


@pytest.fixture(scope="module")
def probe():
    spec = Probe()
    script.ops.install()  # T.test_probe (the package's own ops are named when it is imported)
    for family in spec.families:
        spec.lowering(family)(lambda record, ctx: tvm.tirx.Evaluate(0))
    yield spec
    del REGISTRY[spec.name]  # (TVM keeps the op registered: it is never built again)


TILE = tvm.tirx.decl_buffer((8, 64), "float16", "tile", scope="shared")
BARS = tvm.tirx.decl_buffer((2,), "uint64", "bars", scope="shared")


def test_required_fields_come_first_and_each_other_one_given_follows_as_a_pair(probe):
    call = probe(TILE, True, scope="warp", barrier=BARS[1])
    assert [str(a) for a in call.args] == [
        "tile[0:8, 0:64]",
        '"when"',
        "T.bool(True)",
        '"barrier"',
        "bars[1]",
        '"scope"',
        '"warp"',
    ]
    assert len(probe(TILE).args) == 1  # nothing else given: nothing else written
    assert len(probe(TILE, barrier=None).args) == 1  # None is absent


def test_a_call_reads_back_by_name_and_a_field_not_given_reads_as_its_default(probe):
    given = find(tvm.tirx.Evaluate(probe(TILE, True, scope="warp", fast=False, barrier=BARS[1])))
    assert (given.spec, str(given.dst), bool(given.when), given.fast, given.scope) == (
        probe,
        "tile[0:8, 0:64]",
        True,
        False,
        "warp",
    )
    bare = find(tvm.tirx.Evaluate(probe(TILE)))
    assert (bool(bare.when), bare.barrier, bare.fast, bare.scope) == (False, None, True, "cta")
    assert str(bare.when.ty) == "bool"  # the default as the field reads a given value: a TIR constant


def test_arguments_are_converted_or_refused_naming_the_op_and_the_field(probe):
    with pytest.raises(TypeError, match=r"T.test_probe: DST must be a buffer or a region of one"):
        probe(3)
    with pytest.raises(TypeError, match=r"T.test_probe: fast must be True or False \(a constant\), got 1"):
        probe(TILE, fast=1)
    with pytest.raises(ValueError, match=r"T.test_probe: scope must be one of \['cta', 'warpgroup', 'warp'\], got 'x'"):
        probe(TILE, scope="x")
    with pytest.raises(TypeError, match="missing a required argument: 'dst'"):
        probe()
    with pytest.raises(TypeError, match="too many positional arguments"):
        probe(TILE, True, BARS[0])  # barrier is keyword-only


def test_the_printed_form_spells_pairs_as_keywords_and_parses_back(probe):
    func = parse("""
@T.prim_func
def k():
    T.device_entry()
    tx = T.thread_id([128])
    tile = T.alloc_shared((8, 64), "float16")
    bars = T.alloc_shared((2,), "uint64")
    T.test_probe(tile, tx > 3, barrier=bars[0], fast=False, scope="warp")
    T.test_probe(tile[0:4, 0:64])
""")
    printed = func.script()
    assert 'T.test_probe(tile[0:8, 0:64], when=tx > 3, barrier=bars[0], fast=False, scope="warp")' in printed
    assert "T.test_probe(tile[0:4, 0:64])" in printed
    tvm.ir.assert_structural_equal(parse(printed), func)
    # the IR's own spelling (printed where the printer rules are not installed) parses back too
    pairs = printed.replace(
        'when=tx > 3, barrier=bars[0], fast=False, scope="warp"',
        '"when", tx > 3, "barrier", bars[0], "fast", False, "scope", "warp"',
    )
    tvm.ir.assert_structural_equal(parse(pairs), func)


def test_a_hand_written_call_with_a_field_the_op_lacks_or_a_broken_pair_is_refused(probe):
    stray = op_call(probe.op, [TILE[0:8, 0:64]], {"speed": tvm.tirx.const(1)})
    with pytest.raises(ValueError, match=r"T\.test_probe has no field 'speed'"):
        find(tvm.tirx.Evaluate(stray))
    broken = tvm.ir.Call(probe.op, [TILE[0:8, 0:64], tvm.ir.StringImm("when")], ret_ty="void")
    with pytest.raises(ValueError, match='after its 1 required arguments come "name", value pairs'):
        find(tvm.tirx.Evaluate(broken))
    assert read_op_call(tvm.tirx.Evaluate(0)) is None and find(tvm.tirx.Evaluate(0)) is None


KERNEL = """
@T.prim_func
def k(G: T.Buffer((8, 64), "float16")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "ARCH"})})
    T.device_entry()
    tx = T.thread_id([THREADS])
    tile = T.alloc_shared((8, 64), "float16")
    bars = T.alloc_shared((2,), "uint64")
    regs = T.alloc_local((2,), "uint64")
    CALL
"""


def _resolve(probe, call: str, arch: str = "sm_100a", threads: int = 128) -> Record:
    func = parse(KERNEL.replace("ARCH", arch).replace("THREADS", str(threads)).replace("CALL", call))
    found = []
    from tirx_layout.ir.rewrite import walk

    walk(func.body, [(tvm.tirx.Evaluate, lambda stmt: found.append(find(stmt)) if find(stmt) else None)])
    (call,) = found
    return probe.resolve(call, OpContext(func))


@pytest.mark.parametrize(
    ("call", "threads", "refusal"),
    [
        ("T.test_probe(tile[4:12, 0:64])", 128, r"T.test_probe's DST region tile\[4:12, 0:64\] is outside buffer tile"),
        (
            "T.test_probe(tile, scope='warpgroup')",
            64,
            "a warpgroup-scope T.test_probe needs 128 threads; the kernel has 64",
        ),
        ("T.test_probe(tile, barrier=regs[0])", 128, r"barrier regs\[0\] must be an element of a shared uint64 buffer"),
    ],
)
def test_the_rules_every_op_shares_are_checked_once_for_all(probe, call, threads, refusal):
    with pytest.raises(ValueError, match=refusal):
        _resolve(probe, call, threads=threads)


def test_a_tmem_region_without_a_layout_is_refused_for_every_op(probe):
    text = (
        KERNEL.replace("ARCH", "sm_100a")
        .replace("THREADS", "128")
        .replace("    CALL", '    acc = T.alloc_buffer((128, 64), "float32", scope="tmem")\n    T.test_probe(acc)')
    )
    func = parse(text)
    call = next(find(s) for s in func.body.body.seq if find(s) is not None)
    with pytest.raises(
        ValueError, match=r"T.test_probe's DST \(acc\) is in tensor memory, which is reached through its layout"
    ):
        probe.resolve(call, OpContext(func))


@pytest.mark.parametrize(("arch", "family"), [("sm_100a", "tcgen05"), ("sm_90a", "wgmma")])
def test_the_target_picks_the_first_family_it_has(probe, arch, family):
    assert _resolve(probe, "T.test_probe(tile)", arch).family == family


def test_a_target_with_none_of_the_families_is_refused_saying_where_each_exists(probe):
    with pytest.raises(
        ValueError,
        match=r"T.test_probe lowers to instructions target sm_80 does not have \(tcgen05 on sm_100a, .*; wgmma on sm_90a\)",
    ):
        _resolve(probe, "T.test_probe(tile)", "sm_80")


def test_the_registry_refuses_a_second_op_of_a_name_and_a_choice_spelled_like_a_field(probe):
    with pytest.raises(ValueError, match="a name no other spec has, got 'test_probe'"):
        Probe()

    class Ambiguous(OpSpec):
        name = "test_ambiguous"
        fields = (RegionField("dst"), ChoiceField("mode", ("dst", "other"), default="other"))

    with pytest.raises(ValueError, match="a choice of mode is also a field name"):
        Ambiguous()
    with pytest.raises(ValueError, match=r"does not lower for 'sync'; its families are \('tcgen05', 'wgmma'\)"):
        probe.lowering("sync")
