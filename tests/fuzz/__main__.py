"""``python -m fuzz --cases N --seed S [--suite algebra|kernel] [--workers W] [--report FILE]`` (from ``tests/``):
one sweep, its outcome table and the first bad cases, printed and optionally written to FILE."""

from __future__ import annotations

import argparse
import sys
import time

from fuzz.supervisor import problems, sweep, table


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz")
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--suite", choices=["algebra", "kernel"], default="algebra")
    parser.add_argument("--report", help="write the table and the bad cases to this file")
    args = parser.parse_args()
    began = time.monotonic()

    def progress(done):
        if done % (1000 if args.suite == "algebra" else 100) == 0:
            print(f"{done} cases, {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)

    records = sweep(args.seed, args.cases, args.workers, args.start, progress, args.suite)
    text = (
        f"seed {args.seed}, cases {args.start}..{args.start + args.cases - 1}, "
        f"{time.monotonic() - began:.0f} s on {args.workers} workers\n\n{table(records)}\n\n"
        f"{problems(records, args.seed, suite=args.suite)}\n"
    )
    print(text)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
