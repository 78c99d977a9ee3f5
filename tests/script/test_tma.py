"""``T.tile_copy_async`` / ``T.tma_store_wait`` in TVMScript: the ops they build, their printed form read back, and
bad arguments refused."""

import pytest
import tvm

from tirx_layout.ops import find

from kernels import parse

KERNEL = """
@T.prim_func
def k(A: T.Buffer((256, 64), "bfloat16")):
    T.device_entry()
    tx = T.thread_id([128])
    As = T.alloc_shared((128, 64), "bfloat16", layout=mma_shared_layout("bfloat16", "128B", (128, 64)), align=1024)
    bars = T.alloc_shared((2,), "uint64")
    T.tile_copy_async(As, A[128:256, 0:64], bars[1], expect_tx=False, scope="warp")
    T.tile_copy_async(A[0:128, 0:64], As)
    T.tma_store_wait("thread")
"""


def test_the_ops_carry_their_operands_and_the_printed_kernel_reads_back_equal():
    func = parse(KERNEL)
    stmts = list(func.body.body.seq)
    load, store, wait = (call for call in map(find, stmts) if call is not None)
    assert (load.spec.name, load.expect_tx, load.scope, str(load.barrier)) == (
        "tile_copy_async",
        False,
        "warp",
        "bars[1]",
    )
    assert (store.barrier, store.expect_tx, store.scope) == (None, True, "cta")
    assert (wait.spec.name, wait.scope) == ("tma_store_wait", "thread")
    tvm.ir.assert_structural_equal(parse(func.script()), func, map_free_vars=True)


@pytest.mark.parametrize(
    "call, error, match",
    [
        ('T.tile_copy_async(As, A[0:128, 0:64], bars[0], scope="grid")', ValueError, "scope must be one of"),
        ("T.tile_copy_async(As, A[0:128, 0:64], bars[0], expect_tx=1)", TypeError, "expect_tx must be True or False"),
        ("T.tile_copy_async(As, A[0:128, 0:64], A[0, 0])", TypeError, "shared uint64 buffer"),
        ("T.tile_copy_async(As, 3, bars[0])", TypeError, "src must be a buffer or a region"),
        ("T.tile_copy_async(As, A[0:128, 0:64], bars[0], transposed=1)", TypeError, "transposed must be True or"),
    ],
)
def test_bad_arguments_are_refused_when_the_kernel_is_parsed(call, error, match):
    text = KERNEL.replace('T.tile_copy_async(As, A[128:256, 0:64], bars[1], expect_tx=False, scope="warp")', call)
    with pytest.raises((error, tvm.error.DiagnosticError), match=match):
        parse(text)


def test_a_transposed_load_prints_its_keyword_and_reads_back_while_other_copies_print_without_it():
    text = KERNEL.replace(
        'T.tile_copy_async(As, A[128:256, 0:64], bars[1], expect_tx=False, scope="warp")',
        "T.tile_copy_async(As, A[0:128, 0:64], bars[0])\n"
        '    T.tile_copy_async(As[0:64, 0:128], A[0:128, 0:64], bars[1], scope="thread", transposed=True)',
    )
    func = parse(text)
    printed = func.script()
    assert "T.tile_copy_async(As[0:128, 0:64], A[0:128, 0:64], barrier=bars[0])\n" in printed
    assert 'A[0:128, 0:64], barrier=bars[1], scope="thread", transposed=True)' in printed
    copies = [
        call for call in map(find, func.body.body.seq) if call is not None and call.spec.name == "tile_copy_async"
    ]
    assert [c.transposed for c in copies] == [False, True, False]
    tvm.ir.assert_structural_equal(parse(printed), func, map_free_vars=True)
