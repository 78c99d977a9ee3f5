"""The ``ldmatrix`` helpers the shared <-> fragment copies emit: CUDA ``__device__`` functions with inline PTX,
named ``tirx_layout_ldmatrix_<what>`` through ``tirx_layout.ir.device_calls``. Their names and arguments are the ABI
the simulator (``sim/ldmatrix.py``) executes:

* ``load_x<n>[_trans](regs, row)``: ``ldmatrix.sync.aligned.m8n8.x<n>[.trans].shared.b16``: ``n`` (1, 2, 4) 8 x 8
  matrices of 16-bit elements into the thread's 32-bit registers at ``regs`` (consecutive), ``row`` the shared
  address (``address_of`` an element) of the matrix row this lane gives (lanes ``8i .. 8i + 7``: rows of matrix
  ``i``);
* ``store_x<n>[_trans](row, regs)``: ``stmatrix.sync.aligned.m8n8.x<n>[.trans].shared.b16`` (sm_90 onwards), the
  same matrices written from the registers.

PTX ISA, "Warp-level matrix load instruction: ldmatrix" / "... store instruction: stmatrix" (see
``tirx_layout.hw.ldmatrix``).
"""

from __future__ import annotations

from ...hw.ldmatrix import MatrixGroup
from ...ir.device_calls import helper_call, helper_name

FAMILY = "ldmatrix"


def _what(group: MatrixGroup, store: bool) -> str:
    return f"{'store' if store else 'load'}_x{group.count}{'_trans' if group.trans else ''}"


def source(group: MatrixGroup, store: bool) -> str:
    """CUDA source of the helper moving ``group`` (a load, or a store).

    Example:
        >>> src = source(MatrixGroup(0, 4, True), store=False)
        >>> "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" in src
        True
    """
    n = group.count
    regs = ", ".join(f"%{i + (1 if store else 0)}" for i in range(n))
    name = helper_name(FAMILY, _what(group, store))
    if store:
        ptx = f"{group.name('stmatrix')} [%0], {{{regs}}};"
        operands = ': : "r"(a), ' + ", ".join(f'"r"(r[{i}])' for i in range(n)) + ' : "memory"'
        params = "void* row, const void* regs"
        cast = "const unsigned int* r = (const unsigned int*)regs;"
    else:
        ptx = f"{group.name('ldmatrix')} {{{regs}}}, [%{n}];"
        operands = ": " + ", ".join(f'"=r"(r[{i}])' for i in range(n)) + ' : "r"(a) : "memory"'
        params = "void* regs, const void* row"
        cast = "unsigned int* r = (unsigned int*)regs;"
    return f"""
__device__ __forceinline__ void {name}({params}) {{
  {cast}
  unsigned int a = (unsigned int)__cvta_generic_to_shared(row);
  asm volatile("{ptx}" {operands});
}}
"""


def load(group: MatrixGroup, regs, row):
    """One ``ldmatrix`` of ``group`` into the registers at ``regs``, this lane's row address ``row``.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "tirx_layout_ldmatrix_load_x2" in str(load(MatrixGroup(0, 2, False), z, z))
        True
    """
    return helper_call(FAMILY, _what(group, False), source(group, False), regs, row)


def store(group: MatrixGroup, row, regs):
    """One ``stmatrix`` of ``group`` from the registers at ``regs``, this lane's row address ``row``.

    Example:
        >>> import tvm
        >>> z = tvm.tirx.const(0, "uint32")
        >>> "tirx_layout_ldmatrix_store_x4_trans" in str(store(MatrixGroup(0, 4, True), z, z))
        True
    """
    return helper_call(FAMILY, _what(group, True), source(group, True), row, regs)


__all__ = ["FAMILY", "load", "source", "store"]
