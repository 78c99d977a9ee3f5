"""How a tile op's call carries named arguments: required ones first, then "name", value pairs, read back as they
were written; the encoding alone, whatever the op."""

import pytest
import tvm

from tirx_layout.ir.op_calls import OP_PREFIX, full_region, op_call, read_op_call, register_op

OP = register_op("test_encoded", "an op for the encoding's tests")
A = tvm.tirx.decl_buffer((4, 8), "float32", "A")


def test_an_op_is_registered_once_under_the_prefix_and_prints_as_its_name():
    assert OP.name == OP_PREFIX + "test_encoded" and register_op("test_encoded", "again").same_as(OP)
    assert str(op_call(OP, [full_region(A)], {})) == "T.test_encoded(A[0:4, 0:8])"


def test_named_arguments_ride_as_pairs_after_the_required_ones_and_read_back():
    call = op_call(OP, [full_region(A)], {"scope": tvm.ir.StringImm("warp"), "count": tvm.tirx.const(3, "int32")})
    found = read_op_call(tvm.tirx.Evaluate(call))
    required, named = found.split(1)
    assert found.name == "test_encoded" and [str(r) for r in required] == ["A[0:4, 0:8]"]
    assert {k: str(v) for k, v in named.items()} == {"scope": '"warp"', "count": "3"}


def test_what_is_not_a_pair_list_is_refused():
    odd = tvm.ir.Call(OP, [full_region(A), tvm.ir.StringImm("scope")], ret_ty="void")
    with pytest.raises(ValueError, match='after its 1 required arguments come "name", value pairs'):
        read_op_call(odd).split(1)
    twice = op_call(OP, [], {"x": tvm.tirx.const(1)})
    twice = tvm.ir.Call(OP, [*twice.args, *twice.args], ret_ty="void")
    with pytest.raises(ValueError, match=r"names an argument twice: \['x', 'x'\]"):
        read_op_call(twice).split(0)
    with pytest.raises(ValueError, match="has 0 arguments, fewer than its 1 required ones"):
        read_op_call(op_call(OP, [], {})).split(1)


def test_calls_of_other_ops_are_not_ours():
    assert read_op_call(tvm.tirx.Evaluate(tvm.tirx.call_intrin("", "tirx.cuda.cta_sync"))) is None
