"""Start-up cost of the code sandbox per program: bwrap vs unshare vs none, interleaved.

Each round runs a trivial program (``python -c pass``, the interpreter LiveCodeBench's programs use,
with its site-packages) once bare (``subprocess.run``, no evalpipe), and once through
``evalpipe.sandbox.run_sandboxed`` per kind, in a shuffled order; the report gives the median and
quartiles of each, and each kind's median minus the bare median (the cost the sandbox adds per program).
The machine's load average is printed with the numbers: on a shared host, compare within one run only.

    python perf/bench_sandbox.py [--rounds 25]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

from evalpipe.config.code_execution import SandboxKind, SandboxLimits
from evalpipe.sandbox.probe import probe
from evalpipe.sandbox.run import SandboxPolicy, process_limit_mechanism, run_sandboxed

PROGRAM = [sys.executable, "-c", "pass"]


def bare() -> float:
    t0 = time.perf_counter()
    subprocess.run(PROGRAM, check=True)
    return time.perf_counter() - t0


def sandboxed(kind: SandboxKind) -> float:
    t0 = time.perf_counter()
    result = run_sandboxed(PROGRAM, SandboxPolicy(kind, SandboxLimits()))
    elapsed = time.perf_counter() - t0
    if not result.ok:
        raise SystemExit(f"{kind}: the trivial program failed: {result.stderr.strip()[-300:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    kinds: list[SandboxKind] = [k for k in ("bwrap", "unshare") if probe(k).available]
    kinds.append("none")
    samples: dict[str, list[float]] = {"bare": [], **{k: [] for k in kinds}}
    load_before = os.getloadavg()
    rng = random.Random(0)
    for _ in range(2):  # warm the page cache for every path
        bare()
        for k in kinds:
            sandboxed(k)
    for _ in range(args.rounds):
        order: list[str] = ["bare", *kinds]
        rng.shuffle(order)
        for name in order:
            samples[name].append(bare() if name == "bare" else sandboxed(name))  # type: ignore[arg-type]
    load_after = os.getloadavg()

    def ms(values: list[float]) -> dict[str, float]:
        q = statistics.quantiles(values, n=4)
        return {"median": round(statistics.median(values) * 1000, 1), "q1": round(q[0] * 1000, 1),
                "q3": round(q[2] * 1000, 1)}  # fmt: skip

    stats = {name: ms(values) for name, values in samples.items()}
    report = {
        "rounds": args.rounds,
        "program": "python -c pass",
        "process_limit": process_limit_mechanism(),
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
        },
        "cpus": os.cpu_count(),
        "ms": stats,
        "added_ms_vs_bare": {k: round(stats[k]["median"] - stats["bare"]["median"], 1) for k in kinds},
        "versions": {k: probe(k).detail for k in kinds},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
