"""Every docstring example of the package runs and prints what it says (the public names are in scope)."""

import doctest
import importlib
import pkgutil

import pytest

import tirx_layout

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(tirx_layout.__path__, "tirx_layout.")
    if not info.name.endswith((".demo", ".libtirx_layout"))  # the demo prints; the core library is no module
)


@pytest.mark.parametrize("name", ["tirx_layout", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    names = {n: getattr(tirx_layout, n) for n in tirx_layout.__all__}
    result = doctest.testmod(module, extraglobs=names, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0
