"""Oracles installed apart from the package: a test that needs a missing one skips and says how to install it, and
the other tests of its file still run (the import never fails collection)."""

from __future__ import annotations

import importlib

import pytest

#: pycute (CuTe's algebra in Python) ships inside nvidia-cutlass, whose own dependencies are not needed; dev.sh
#: installs it this way, so CI always runs the tests that use it.
PYCUTE_INSTALL = "pip install --no-deps nvidia-cutlass==4.2.0.0"


class MissingModule:
    """Stands in for a module that is not installed: touching any attribute skips the running test (or, at import
    time, the module that touched it) with the command that installs it."""

    def __init__(self, name: str, install: str):
        self._name = name
        self._install = install

    def __getattr__(self, attribute: str):
        pytest.skip(
            f"{self._name} is not installed; this test uses it as an oracle: {self._install}", allow_module_level=True
        )


def optional_module(name: str, install: str):
    """The module ``name``, or a :class:`MissingModule` that skips its users with ``install`` when it is absent."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return MissingModule(name, install)


pycute = optional_module("pycute", PYCUTE_INSTALL)
