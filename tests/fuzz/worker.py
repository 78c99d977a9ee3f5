"""One fuzz worker: reads case numbers on stdin, runs each case, answers one JSON line per case.

``python -m fuzz.worker SEED [SUITE]`` (from ``tests/``; SUITE "algebra" by default, or "kernel"). The supervisor restarts a worker that dies (a signal) or stops
answering (a hang) and records that outcome against the case it was running; everything else is classified here.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import resource
import sys

import numpy as np
import tvm

import tirx_layout
from fuzz import checks
from fuzz.kernel_checks import HarnessFault, run_kernel
from fuzz.supervisor import case_function
from tirx_layout import cute, hw
from tirx_layout.hw.memory import swizzle_for_mode
from tirx_layout.viz.server import scene_response

#: Errors a user may see: the documented kinds and the project's subclasses of them.
CLEAN_TYPES = (ValueError, TypeError, KeyError, IndexError)

#: Text that must never reach a user: TVM's and C++'s internals, and Python's own messages, which name no parameter
#: and no value of ours.
UNCLEAR_TEXT = re.compile(
    "|".join(
        [
            r"Check failed",
            r"Traceback",
            r"packed_realize",
            r"prim\._Op",
            r"InternalError",
            r"TVMError",
            r"Stack trace",
            r"\.cc:\d",
            r"Mismatched type on argument",
            r"not enough values to unpack",
            r"too many values to unpack",
            r"object is not iterable",
            r"object is not subscriptable",
            r"unsupported operand type",
            r"positional argument",
            r"unexpected keyword argument",
            r"index out of range",
            r"division by zero",
            r"maximum recursion",
            r"invalid literal for int",
            r"has no attribute",
            r"cannot be interpreted as an integer",
            r"'NoneType'",
            r"must be real number",
            r"is out of bounds for axis",
            r"unhashable type",
            r"not supported between instances",
            r"object cannot be",
            r"Cannot convert",
            r"cannot convert",
            r"int too big to convert",
            r"Python int too large",
            r"has no len\(\)",
            r"int\(\) argument must be",
            r"object is not callable",
        ]
    )
)


def namespace() -> dict:
    """What case sources see: the public API, the checks, and a few symbolic values."""
    names = {n: getattr(tirx_layout, n) for n in tirx_layout.__all__}
    names.update({n: getattr(cute, n) for n in dir(cute) if not n.startswith("_")})
    names.update({n: getattr(hw, n) for n in dir(hw) if not n.startswith("_")})
    names.update({n: getattr(checks, n) for n in dir(checks) if n.startswith(("check_", "run_"))})
    names.update(
        np=np,
        tvm=tvm,
        pickle=pickle,
        scene_response=scene_response,
        swizzle_for_mode=swizzle_for_mode,
        run_kernel=run_kernel,
        x=tvm.tirx.Var("x", "int32"),
        fx=tvm.tirx.Var("fx", "float32"),
    )
    return names


def classify(err: BaseException) -> str:
    if isinstance(err, HarnessFault):
        return "harness"
    if isinstance(err, checks.ChildCrashed):
        return "crash"
    if isinstance(err, checks.ChildHung):
        return "hang"
    if isinstance(err, checks.UnclearOutcome):
        return "unclear"
    if isinstance(err, checks.WrongAnswer):
        return "wrong"
    if isinstance(err, (checks.ReportedError, *CLEAN_TYPES)):
        message = str(err)
        if len(message.strip("'\" ")) < 4 or UNCLEAR_TEXT.search(message):
            return "unclear"
        return "clean"
    return "unclear"


def run(seed: int, index: int, names: dict, case=None) -> dict:
    c = (case or case_function("algebra"))(seed, index)
    scope = dict(names)
    try:
        exec(c.source, scope)
    except Exception as err:
        return {"outcome": classify(err), "detail": f"{type(err).__name__}: {str(err)[:400]}"}
    if c.check is None:
        return {"outcome": "ok", "detail": ""}
    try:
        problem = eval(c.check, scope)
    except Exception as err:
        outcome = classify(err)
        if outcome == "clean" and not isinstance(err, checks.ReportedError):
            # The case ran; its check raised: the answer could not be checked, which is itself a wrong answer.
            return {"outcome": "wrong", "detail": f"check raised {type(err).__name__}: {str(err)[:400]}"}
        return {"outcome": outcome, "detail": f"{type(err).__name__}: {str(err)[:400]}"}
    if problem:
        return {"outcome": "wrong", "detail": str(problem)[:600]}
    return {"outcome": "ok", "detail": ""}


def limit_memory(extra_bytes: int = 3 << 30) -> None:
    """Cap the address space at what the imports took plus ``extra_bytes``: a case that tries to build something
    huge gets a MemoryError (an unclear error) instead of taking the machine's memory."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    limit = pages * os.sysconf("SC_PAGE_SIZE") + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main() -> None:
    seed = int(sys.argv[1])
    case = case_function(sys.argv[2] if len(sys.argv) > 2 else "algebra")
    # Answers go to the original stdout; what the library or a case prints goes nowhere.
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    names = namespace()
    if os.environ.get("TIRX_LAYOUT_FUZZ_MEMORY", "1") != "0":
        limit_memory()
    answers.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        index = int(line)
        try:
            answer = run(seed, index, names, case)
        except Exception as err:
            answer = {"outcome": "harness", "detail": f"{type(err).__name__}: {err}"}
        answer["index"] = index
        answers.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
