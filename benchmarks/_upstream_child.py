"""Running an upstream-only script in a child process, shared by the benchmarks that compare against upstream.

``import tvm`` auto-loads tirx_layout (a TVM device-backend plug-in), whose TVMScript names take over
``T.alloc_local(layout=...)`` and friends and turn upstream's layouts into ours; upstream's tile dispatch does not
read those, and since the pipeline guard (issue 16) upstream's ``"tirx"`` pipeline refuses a module that holds
them (``WrongPipelineError``). So upstream's kernels are built by a separate Python process started with
``TVM_DEVICE_BACKEND_AUTOLOAD=0``, which loads the CUDA backend itself (``tvm.backend.loader.load("cuda")``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_upstream_script(script: Path, *args: object, what: str = "upstream build") -> str:
    """The standard output of ``python script args...`` run without tirx_layout auto-loaded; ``RuntimeError``
    naming ``what`` and the child's last error line when the script fails."""
    env = {**os.environ, "TVM_DEVICE_BACKEND_AUTOLOAD": "0"}
    command = [sys.executable, str(script), *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode:
        last = [line for line in done.stderr.splitlines() if "Error" in line] or done.stderr.splitlines()[-1:]
        raise RuntimeError(f"{what} failed: {last[-1] if last else '?'}")
    return done.stdout
