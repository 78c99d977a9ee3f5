"""What `pip install .` gives a user, read from the installed distribution (the wheel dev.sh built and installed):
one py3 wheel, complete metadata with the pinned TVM, the licence, typing markers, the example kernels, and a core
library that finds tvm-ffi's by its RUNPATH rather than the environment."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import tvm_ffi.libinfo

import tirx_layout

DIST = importlib.metadata.distribution("tirx-layout")
INSTALLED = {str(f) for f in DIST.files}


def test_version_has_one_home():
    assert DIST.version == tirx_layout.__version__
    assert tirx_layout.__version__.count(".") == 2


def test_one_wheel_serves_every_python_3():
    # The core links tvm-ffi's C ABI, never Python's, so the wheel is tagged py3-none-<platform>, not cp311-cp311.
    tags = [line.split(":", 1)[1].strip() for line in DIST.read_text("WHEEL").splitlines() if line.startswith("Tag:")]
    assert tags, DIST.read_text("WHEEL")
    assert all(tag.startswith("py3-none-") for tag in tags), tags


def test_metadata_says_what_the_package_is_and_pins_tvm():
    meta = DIST.metadata
    assert meta["License-Expression"] == "Apache-2.0"
    assert {url.split(",")[0] for url in meta.get_all("Project-URL")} >= {"Homepage", "Source", "Issues"}
    assert "Typing :: Typed" in meta.get_all("Classifier")
    assert "tvm" in meta["Keywords"].split(",")
    assert "apache-tvm==0.27.0.post1" in meta.get_all("Requires-Dist")


def test_licence_typing_markers_and_examples_are_installed():
    assert any(path.endswith("licenses/LICENSE") for path in INSTALLED)
    assert {"tirx_layout/py.typed", "tirx_layout/core/ffi.pyi"} <= INSTALLED
    # The main job runs from an installed wheel: every example kernel file travels with the package.
    repository_examples = {p.name for p in (Path(__file__).parents[1] / "examples").glob("*.py")}
    assert repository_examples
    assert {f"tirx_layout/examples/{name}" for name in repository_examples} <= INSTALLED


@pytest.mark.skipif(shutil.which("ldd") is None, reason="ldd is not installed")
def test_core_finds_tvm_ffi_without_the_environment():
    core = next(DIST.locate_file(p) for p in INSTALLED if p.endswith("core/libtirx_layout.so"))
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    linked = subprocess.run(["ldd", str(core)], capture_output=True, text=True, env=env, check=True).stdout
    line = next(line for line in linked.splitlines() if "libtvm_ffi.so" in line)
    found = Path(line.split("=>")[1].split("(")[0].strip())
    assert found.resolve() == Path(tvm_ffi.libinfo.find_libtvm_ffi()).resolve()
