"""Cost of the sandbox per LiveCodeBench program and per review of the bundled items, interleaved.

One round reviews every bundled LiveCodeBench item with its solution, a wrong answer and a crashing
program (the same jobs as the same-results test) four ways, in a shuffled order per round:

* ``evalscope`` — EvalScope's own ``codegen_check_correctness`` (what ran before issue 20: a spawned
  multiprocessing manager and interpreter per program, no sandbox);
* ``none``, ``bwrap``, ``unshare`` — evalpipe's review path (``review.check_correctness``: one test
  process per program, started through the run's ``ProgramLauncher`` of that kind).

Reported: the median wall time per program and per whole review (all jobs, one after another) of each
way, and each sandbox's median minus ``none`` (the sandbox's own cost) and minus ``evalscope``.  The
load average is printed before and after: on a shared host, compare within one run only.

    python perf/bench_lcb_review.py [--rounds 3] [--items N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalscope.benchmarks.live_code_bench import evaluate_utils
from evalscope.benchmarks.live_code_bench.load_utils import transform

from evalpipe.benchmarks.live_code_bench import review
from evalpipe.sandbox.launcher import ProgramLauncher
from evalpipe.sandbox.probe import probe

DATA = Path(__file__).resolve().parents[1] / "evalpipe" / "selftest" / "data"
PROGRAMS = {"correct": None, "wrong": "print(0)", "runtime_error": "a = []\nprint(a[3])"}
TIMEOUT_S = 6  # EvalScope's review_timeout for LiveCodeBench

Check = Callable[[dict[str, Any], str, float, bool], Any]


def jobs(items: int | None) -> list[tuple[dict[str, Any], str]]:
    rows = [json.loads(x) for x in (DATA / "livecodebench" / "code_generation_lite_selftest.jsonl").open()]
    rows = rows[:items] if items else rows
    solutions = json.loads((DATA / "solutions.json").read_text(encoding="utf-8"))["live_code_bench"]
    out = []
    for row in rows:
        row.setdefault("private_test_cases", "[]")
        sample = {"input_output": transform(dict(row))["evaluation_sample"]}
        out += [(sample, code or solutions[row["question_id"]]) for code in PROGRAMS.values()]
    return out


def sandboxed(kind: str) -> Check:
    launcher = ProgramLauncher.for_sandbox(kind)  # type: ignore[arg-type]

    def check(sample: dict[str, Any], code: str, timeout: float, debug: bool) -> Any:
        review._launcher = launcher
        return review.check_correctness(sample, code, timeout, debug)

    return check


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--items", type=int, default=None, help="only the first N bundled items")
    args = parser.parse_args()
    lost: dict[str, int] = {}

    def evalscope(sample: dict[str, Any], code: str, timeout: float, debug: bool) -> Any:
        try:
            return evaluate_utils.codegen_check_correctness(sample, code, timeout, debug)
        except IndexError:  # no result within EvalScope's global limit: its review records [-2] (issue 13)
            lost["evalscope"] = lost.get("evalscope", 0) + 1
            return [-2], {}

    ways: dict[str, Check] = {"evalscope": evalscope, "none": sandboxed("none")}
    ways |= {k: sandboxed(k) for k in ("bwrap", "unshare") if probe(k).available}  # type: ignore[arg-type]
    work = jobs(args.items)
    per_program: dict[str, list[float]] = {w: [] for w in ways}
    per_review: dict[str, list[float]] = {w: [] for w in ways}
    load_before = os.getloadavg()
    rng = random.Random(0)
    for check in ways.values():  # warm-up: page cache, imports
        check(*work[0], TIMEOUT_S, False)
    for _ in range(args.rounds):
        order = list(ways)
        rng.shuffle(order)
        for name in order:
            t_review = time.perf_counter()
            for sample, code in work:
                t0 = time.perf_counter()
                ways[name](sample, code, TIMEOUT_S, False)
                per_program[name].append(time.perf_counter() - t0)
            per_review[name].append(time.perf_counter() - t_review)
    load_after = os.getloadavg()

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    report = {
        "rounds": args.rounds,
        "programs_per_review": len(work),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in load_after],
        "cpus": os.cpu_count(),
        "median_ms_per_program": {w: ms(v) for w, v in per_program.items()},
        "median_ms_per_review": {w: ms(v) for w, v in per_review.items()},
        "programs_without_result": lost,
        "added_ms_per_program_vs_none": {
            w: round(ms(v) - ms(per_program["none"]), 1) for w, v in per_program.items()
        },
        "added_ms_per_program_vs_evalscope": {
            w: round(ms(v) - ms(per_program["evalscope"]), 1) for w, v in per_program.items()
        },
    }
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
