"""The printer hook never crashes a program: against fake printer tables of garbage, another TVM version or a probe
that prints wrong, each in its own process (a crash there cannot take the test run with it), the package imports,
kernels print (as TVM prints unknown objects, and a tile op's named arguments as the pairs it carries) and exactly
one PrinterHookWarning says why."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Runs in a fresh interpreter: import, then the first print (or an explicit install) against SETUP's table.
SCRIPT = """
import ctypes, os, struct, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import tvm
    import tirx_layout
    from tvm.script import tirx as T
    from tirx_layout.script import printing
    assert printing._RULES.active is None, "importing must not touch the printer table"
{setup}
    kernel = tvm.script.from_source(printing.PROBE_SOURCE, extra_vars={{"T": T}})
    first = kernel.script()
    second = str(kernel)
    import tirx_layout.tools.cli, tirx_layout.viz.server  # every layer still imports
hook = [w for w in caught if issubclass(w.category, printing.PrinterHookWarning)]
print("ACTIVE", printing._RULES.active)
print("WARNINGS", len(hook))
print("MESSAGE", hook[0].message if hook else "")
print("PRINTS_LAYOUT", *(all(line in text for line in printing.PROBE_EXPECTED) for text in (first, second)))
print("REPLACED", len(printing._RULES.replaced))
"""

# Fake tables: a buffer of bytes made to look, more and more closely, like the libstdc++ hash map TVM has.
GARBAGE = """
    table = ctypes.create_string_buffer(os.urandom(4096))
    printing.printer_table_address = lambda: ctypes.addressof(table)
"""
SMALL_INTS = """
    table = (ctypes.c_uint64 * 64)(*range(1, 65))
    printing.printer_table_address = lambda: ctypes.addressof(table)
"""
WILD_POINTERS = """
    table = (ctypes.c_uint64 * 64)(*([0xDEADBEEF000] * 64))
    printing.printer_table_address = lambda: ctypes.addressof(table)
"""
# A plausible header (one bucket, one token, load factor 1.0) whose node pointer leads to unmapped memory.
PLAUSIBLE_HEADER = """
    table = ctypes.create_string_buffer(72)
    base = ctypes.addressof(table)
    struct.pack_into("<QQQQfxxxxQQ", table, 0, base + 48, 1, 0x10, 1, 1.0, 1, 0)
    printing.printer_table_address = lambda: base
"""
# A well-formed header and node whose key's cached hash is wrong and whose vector holds non-functions.
PLAUSIBLE_NODE = """
    table = ctypes.create_string_buffer(72)
    node = ctypes.create_string_buffer(72)
    slots = (ctypes.c_uint64 * 4)(1, 2, 3, 4)
    base, at = ctypes.addressof(table), ctypes.addressof(node)
    struct.pack_into("<QQQQfxxxxQQ", table, 0, base + 48, 1, at, 1, 1.0, 1, at)
    struct.pack_into("<QQQ16sQQQQ", node, 0, 0, at + 24, 0, b"", ctypes.addressof(slots),
                     ctypes.addressof(slots) + 32, ctypes.addressof(slots) + 32, 12345)
    printing.printer_table_address = lambda: base
"""
# TVM's real table, copied, with one token more in its count than nodes in its chain.
MISCOUNTED_COPY = """
    real = printing.printer_table_address()
    table = ctypes.create_string_buffer(ctypes.string_at(real, 72), 72)
    buckets, bucket_count, _, count = struct.unpack_from("<QQQQ", table, 0)
    if bucket_count == 1:  # the one bucket lives inside the table
        struct.pack_into("<Q", table, 0, ctypes.addressof(table) + 48)
    struct.pack_into("<Q", table, 24, count + 1)
    printing.printer_table_address = lambda: ctypes.addressof(table)
"""
OTHER_TVM = """
    tvm.__version__ = "0.28.0"
"""
WRONG_PROBE = """
    printing.PROBE_EXPECTED = ("something TVM never prints",)
"""
EXPLICIT_GARBAGE = """
    table = ctypes.create_string_buffer(os.urandom(4096))
    assert printing.install_printer_rules(ctypes.addressof(table)) is False
    assert printing.install_printer_rules() is False  # decided once: no second attempt, no second warning
"""


def _run(setup: str) -> dict[str, str]:
    code = SCRIPT.format(setup=textwrap.indent(textwrap.dedent(setup), "    "))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (GARBAGE, "printer table is not as expected"),
        (OTHER_TVM, "written for apache-tvm 0.27.0.post1, this is 0.28.0"),
        (WRONG_PROBE, "a probe kernel did not print its layout"),
        (EXPLICIT_GARBAGE, "printer table is not as expected"),
    ],
    ids=["garbage", "other-tvm", "probe", "explicit"],
)
def test_a_doubtful_table_leaves_printing_off_with_one_warning(setup, reason):
    result = _run(setup)
    assert result["ACTIVE"] == "False" and result["WARNINGS"] == "1" and reason in result["MESSAGE"]
    assert result["PRINTS_LAYOUT"] == "False False"  # TVM's own form of an unknown object
    assert result["REPLACED"] == "0"  # a failed probe put TVM's entries back


def test_the_real_table_is_used_at_the_first_print():
    result = _run("")
    assert result == {
        "ACTIVE": "True",
        "WARNINGS": "0",
        "MESSAGE": "",
        "PRINTS_LAYOUT": "True True",
        "REPLACED": "5",
    }


# Every fake table through the C++ check and the install, in one process: each is refused with its reason.
TABLES = {
    "garbage": (GARBAGE, "implausible"),
    "small-ints": (SMALL_INTS, "the bucket array is not readable"),
    "wild-pointers": (WILD_POINTERS, "implausible bucket count"),
    "plausible-header": (PLAUSIBLE_HEADER, "a token node is not readable"),
    "plausible-node": (PLAUSIBLE_NODE, "a token's cached hash is wrong"),
    "miscounted-copy": (MISCOUNTED_COPY, "a token node is not readable"),
}
CHECK_SCRIPT = """
import ctypes, os, struct
import tvm
from tirx_layout.core import ffi
from tirx_layout.script import printing
REAL = printing.printer_table_address
"""
CHECK_ONE = """
printing.printer_table_address = REAL
{setup}
address = printing.printer_table_address()
try:
    ffi.PrinterRuleInstall(address, "", 1, None)
    installed = "installed"
except ValueError as err:
    installed = "refused" if "not have the layout of apache-tvm 0.27" in str(err) else str(err)
print({name!r}, installed, ffi.PrinterTableProblem(address))
"""


def test_every_fake_table_is_refused_without_a_wild_read():
    code = CHECK_SCRIPT + "".join(
        CHECK_ONE.format(setup=textwrap.dedent(setup), name=name) for name, (setup, _) in TABLES.items()
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = {line.split(" ", 1)[0]: line.split(" ", 2)[1:] for line in done.stdout.splitlines()}
    for name, (_, reason) in TABLES.items():
        installed, problem = lines[name]
        assert installed == "refused" and problem.startswith(reason), (name, installed, problem)
