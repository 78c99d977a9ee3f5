"""The placeholder the MMA lowering leaves for the TMEM allocation: it names its buffer, and nothing else reads as
it."""

import tvm

from tirx_layout.ir.placeholders import tmem_base_address, tmem_base_buffer

D = tvm.tirx.decl_buffer((128, 64), "float32", "D", scope="tmem")


def test_the_tmem_base_address_names_its_buffer():
    address = tmem_base_address(D)
    assert tmem_base_buffer(address).same_as(D) and str(address.ty) == "uint32"
    assert tmem_base_buffer(address + tvm.tirx.const(1, "uint32")) is None
    assert tmem_base_buffer(tvm.tirx.const(0, "uint32")) is None
