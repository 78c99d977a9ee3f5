"""The fuzz supervisor: hands case numbers to worker processes, one case at a time each, and records a worker's
death by a signal (a crash) or its silence past the time limit (a hang) against the case it was running; then
starts a fresh worker and goes on. ``sweep`` returns the outcome of every case; ``table`` counts them.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

#: The fuzz suites: the module whose ``case(seed, index)`` makes each case. "algebra": the layout algebra, parser,
#: CuTe layer, CLI and server (``cases``); "kernel": random kernels built, assembled and simulated (``kernel_cases``).
SUITES = {"algebra": "fuzz.cases", "kernel": "fuzz.kernel_cases"}


def case_function(suite: str):
    """The ``case(seed, index)`` of fuzz suite ``suite``."""
    return importlib.import_module(SUITES[suite]).case


def case(seed: int, index: int, suite: str = "algebra"):
    """Case ``index`` of sweep ``seed`` of ``suite``."""
    return case_function(suite)(seed, index)


#: "harness": the fuzzer itself failed on the case (a bug of the generator or a check, never of the library).
OUTCOMES = ["ok", "clean", "unclear", "wrong", "crash", "hang", "harness"]
TESTS = Path(__file__).resolve().parents[1]
#: Seconds a case may run (a CLI case starts a process, so it gets longer); the worker's start-up is separate.
CASE_TIMEOUT = {"cli": 120.0}
#: A kernel case builds, may run nvcc and simulates: seconds, on a busy machine tens of them.
KERNEL_TIMEOUT = 240.0
DEFAULT_TIMEOUT = 20.0
STARTUP_TIMEOUT = 180.0


@dataclass(frozen=True)
class Record:
    index: int
    family: str
    outcome: str
    detail: str
    seconds: float = 0.0


class Worker:
    """One ``python -m fuzz.worker`` process in its own process group (a CLI case's child dies with it)."""

    def __init__(self, seed: int, suite: str = "algebra"):
        # Absolute paths: the worker runs in tests/, where a relative PYTHONPATH entry of ours ("python") would miss
        # the package and silently load an installed copy instead.
        paths = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *paths])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fuzz.worker", str(seed), suite],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=TESTS,
            env=env,
            start_new_session=True,
        )
        self.buffer = ""
        if self.read(STARTUP_TIMEOUT) is None:
            code = self.process.poll()
            self.kill()
            raise RuntimeError(f"a fuzz worker did not start (exit status {code})")

    def read(self, timeout: float) -> dict | None:
        """The worker's next answer, or ``None`` when it died or stayed silent for ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while "\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536).decode()
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split("\n", 1)
        return json.loads(line)

    def death(self) -> str | None:
        """How the worker ended, if it did: ``"signal SIGSEGV"`` or ``"exit status 3"``."""
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return None
        return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def sweep(
    seed: int, count: int, workers: int = 2, start: int = 0, progress=None, suite: str = "algebra"
) -> list[Record]:
    """Run cases ``start .. start+count-1`` of the sweep ``seed`` of ``suite`` on ``workers`` supervised processes;
    each record's ``seconds`` is the case's time."""
    todo: queue.Queue[int] = queue.Queue()
    for index in range(start, start + count):
        todo.put(index)
    records: list[Record] = []
    lock = threading.Lock()
    failures: list[BaseException] = []

    def drive():
        worker = None
        try:
            while True:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                family = case(seed, index, suite).family
                if worker is None:
                    worker = Worker(seed, suite)
                began = time.monotonic()
                worker.process.stdin.write(f"{index}\n")
                worker.process.stdin.flush()
                limit = KERNEL_TIMEOUT if suite == "kernel" else CASE_TIMEOUT.get(family, DEFAULT_TIMEOUT)
                answer = worker.read(limit)
                if answer is None:
                    death = worker.death()
                    outcome, detail = ("crash", death) if death else ("hang", "no answer within the time limit")
                    worker.kill()
                    worker = None
                else:
                    outcome, detail = answer["outcome"], answer["detail"]
                with lock:
                    records.append(Record(index, family, outcome, detail, time.monotonic() - began))
                    if progress:
                        progress(len(records))
        except BaseException as err:
            failures.append(err)
        finally:
            if worker is not None:
                worker.process.stdin.close()
                worker.kill()

    threads = [threading.Thread(target=drive) for _ in range(max(1, workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return sorted(records, key=lambda r: r.index)


def table(records: list[Record]) -> str:
    """Outcome counts per family and in total, and the time the cases took, as a Markdown table."""
    families = sorted({r.family for r in records})
    counts = Counter((r.family, r.outcome) for r in records)
    lines = ["| family | " + " | ".join(OUTCOMES) + " | total | time (s) |", "|---" * (len(OUTCOMES) + 3) + "|"]
    for family in [*families, "all"]:
        chosen = families if family == "all" else [family]
        row = [sum(counts[(f, o)] for f in chosen) for o in OUTCOMES]
        seconds = sum(r.seconds for r in records if r.family in chosen)
        lines.append(f"| {family} | " + " | ".join(map(str, row)) + f" | {sum(row)} | {seconds:.0f} |")
    return "\n".join(lines)


def problems(records: list[Record], seed: int, limit: int = 20, suite: str = "algebra") -> str:
    """The first cases of every bad outcome, with their source, to replay by hand."""
    out = []
    for outcome in ("crash", "hang", "wrong", "unclear", "harness"):
        bad = [r for r in records if r.outcome == outcome]
        for r in bad[:limit]:
            c = case(seed, r.index, suite)
            out.append(f"[{outcome}] case {r.index} ({r.family}): {r.detail}\n    " + c.source.replace("\n", "\n    "))
    return "\n".join(out)


def bad(records: list[Record]) -> list[Record]:
    return [r for r in records if r.outcome in ("unclear", "wrong", "crash", "hang", "harness")]
