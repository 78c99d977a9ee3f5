"""Every docstring example of the package runs and prints what it says (the public names are in scope), and every
public module has at least one: a module without a runnable example is a failure unless ``WITHOUT_EXAMPLE`` says
why it may go without."""

import doctest
import importlib
import pkgutil

import pytest

import tirx_layout

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(tirx_layout.__path__, "tirx_layout.")
    if not info.name.endswith(".libtirx_layout")  # the core library is no module
)

#: The modules that may have no docstring example yet, each with the reason. An entry whose module gains an example
#: (or goes away) fails ``test_the_exemptions_are_current``, so the table only ever shrinks.
WITHOUT_EXAMPLE: dict[str, str] = {}


def examples(module) -> int:
    """The docstring examples of ``module`` itself (its docstring and those of the functions and classes it
    defines; not those of names it imports from elsewhere)."""
    return sum(len(test.examples) for test in doctest.DocTestFinder().find(module))


@pytest.mark.parametrize("name", ["tirx_layout", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    names = {n: getattr(tirx_layout, n) for n in tirx_layout.__all__}
    result = doctest.testmod(module, extraglobs=names, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0
    if name not in WITHOUT_EXAMPLE:
        assert result.attempted > 0, (
            f"{name} has no docstring example: give it one that shows what the module is for (a package's "
            "__init__ docstring: its main entry points), or add it to WITHOUT_EXAMPLE with the reason"
        )


def test_the_exemptions_are_current():
    stale = {
        name: "no such module" if name not in MODULES else "it has an example now"
        for name in WITHOUT_EXAMPLE
        if name not in MODULES or examples(importlib.import_module(name)) > 0
    }
    assert stale == {}, "remove these entries from WITHOUT_EXAMPLE"
