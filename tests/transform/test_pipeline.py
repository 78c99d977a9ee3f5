"""The "tirx_layout" pipeline: registered by importing the package or by `import tvm` alone, usable from both of
TVM's build entry points."""

import subprocess
import sys

import pytest
import tvm

from tirx_layout.transform import PIPELINE_NAME

from kernels import example_kernels

SM100A = tvm.target.Target({"kind": "cuda", "arch": "sm_100a"})


def test_import_tvm_alone_finds_the_pipeline_and_the_script_names():
    code = (
        "import tvm, sys\n"
        "from tvm.script import tirx as T\n"
        "assert 'tirx_layout' in tvm.tirx.compilation_pipeline.PIPELINE_MAP\n"
        "assert T.layout('S[4:1]').size() == 4\n"
    )
    done = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.filterwarnings("ignore:build is deprecated:DeprecationWarning")
def test_tvm_build_tirx_build_and_tvm_compile_all_take_the_pipeline():
    kernel, _ = example_kernels()["staging_fp16_128B"]
    by_build = tvm.tirx.build(kernel, target=SM100A, pipeline=PIPELINE_NAME).imports[0].inspect_source()
    by_tvm_build = tvm.build(kernel, target=SM100A, pipeline=PIPELINE_NAME).imports[0].inspect_source()
    by_compile = tvm.compile(kernel, target=SM100A, tir_pipeline=PIPELINE_NAME).mod.imports[0].inspect_source()
    assert by_build == by_tvm_build == by_compile
    assert "tile_ptr[4096]" in by_build and "^" in by_build
