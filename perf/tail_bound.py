"""The best any schedule can do on a server: pipelined vs sequential generation time, simulated.

Why: ``schedule: pipelined`` (issue 23) fills the slots a benchmark's tail leaves idle.  How much wall time
that saves depends on the server's throughput curve — the tokens/s it produces with k requests in flight —
and on the answers' lengths.  This replays a finished run's answer lengths (``outcomes.jsonl``:
``output_tokens`` per sample, in index order per benchmark) through a processor-sharing model of the server
(k requests in flight share ``rate(k)`` tokens/s equally; prompt processing, scoring and start-up ignored)
under both schedules at the run's concurrency: sequential = each benchmark's samples through a pool of
``concurrency`` workers, one benchmark after another; pipelined = every benchmark's samples queued at once,
largest total first, interleaved.  The ratio pipelined/sequential is the bound a schedule can reach on that
server for that workload.

    .venv/bin/python perf/tail_bound.py RUN_DIR [--concurrency 4] [--curve 1,1.20,1.30,1.39]
    .venv/bin/python perf/tail_bound.py RUN_DIR --curve linear      # a GPU-like server
    .venv/bin/python perf/tail_bound.py RUN_DIR --curve-json slots.json   # a measured curve (medians)
    .venv/bin/python perf/tail_bound.py RUN_DIR --curve-json slots.json --round 1   # one round's curve

``--curve``: relative throughput with 1..concurrency requests in flight (``perf/slot_scaling.py`` measures
the end points on llama.cpp); ``linear`` = k (a decode step costs the same for 1 or k rows).
``--curve-json``: ``perf/slot_scaling.py --json``'s output; its measured levels (say 1, 2, 4, 8) give the
rate at every k by linear interpolation between neighbouring levels, flat past the largest (a level is a
number in flight: levels 1, 2, 4, 8 are not k = 1..4).  ``--round N``: that round's ratios instead of the
medians across rounds.  ``RUN_DIR`` may also be an ``outcomes.jsonl`` file itself.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from evalpipe.artifacts import RunDir


def curve_from_levels(ratio_to_one: dict[int, float], concurrency: int) -> list[float]:
    """Relative throughput at 1..``concurrency`` in flight from the levels measured (ratios to one in flight):
    linear between neighbouring measured levels, the largest level's past it (no extrapolated gain)."""
    levels = sorted(ratio_to_one)
    if not levels or levels[0] != 1:
        raise SystemExit("curve: the measured levels must include 1 in flight")
    rate = []
    for k in range(1, concurrency + 1):
        if k >= levels[-1]:
            rate.append(ratio_to_one[levels[-1]])
            continue
        hi = next(level for level in levels if level >= k)
        lo = max(level for level in levels if level <= k)
        if hi == lo:
            rate.append(ratio_to_one[lo])
        else:
            w = (k - lo) / (hi - lo)
            rate.append(ratio_to_one[lo] + w * (ratio_to_one[hi] - ratio_to_one[lo]))
    return rate


def measured_curve(slots: dict[str, Any], concurrency: int, round_number: int | None = None) -> list[float]:
    """The rate at 1..``concurrency`` in flight from ``perf/slot_scaling.py --json``'s output: the medians
    across rounds, or round ``round_number``'s ratios."""
    if round_number is None:
        measured = slots["ratio_to_one"]
    else:
        measured = {k: v[round_number - 1] for k, v in slots["ratio_to_one_per_round"].items()}
    return curve_from_levels({int(k): float(v) for k, v in measured.items()}, concurrency)


def rate_curve(
    curve: str, concurrency: int, slots: dict[str, Any] | None = None, round_number: int | None = None
) -> list[float]:
    """The rate at 1..``concurrency``: from a slot-scaling measurement (``slots``) when given, else ``curve``:
    ``linear`` or comma-separated relative rates."""
    if slots is not None:
        return measured_curve(slots, concurrency, round_number)
    if curve == "linear":
        return [float(k) for k in range(1, concurrency + 1)]
    return [float(x) for x in curve.split(",")]


def answer_lengths(run: Path) -> dict[str, list[int]]:
    """Each benchmark's answers' output tokens in index order, from a run's ``outcomes.jsonl`` (or the file)."""
    path = run if run.is_file() else RunDir(run).outcomes
    by_benchmark: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for line in path.open(encoding="utf-8"):
        r = json.loads(line)
        by_benchmark[r["benchmark"]].append((r["index"], int(r.get("output_tokens") or 0)))
    return {b: [n for _, n in sorted(v)] for b, v in by_benchmark.items()}


def simulate(lengths: list[int], concurrency: int, rate: list[float]) -> float:
    """Wall time to produce ``lengths`` tokens, FIFO admission, at most ``concurrency`` in flight."""
    queue, active, t = list(lengths), [], 0.0
    while queue and len(active) < concurrency:
        active.append(float(queue.pop(0)))
    while active:
        per_request = rate[len(active) - 1] / len(active)
        step = min(active)
        t += step / per_request
        active = [a - step for a in active if a - step > 1e-9]
        while queue and len(active) < concurrency:
            active.append(float(queue.pop(0)))
    return t


def bound(by_benchmark: dict[str, list[int]], concurrency: int, rate: list[float]) -> tuple[float, float]:
    """(sequential, pipelined) simulated generation time."""
    sequential = sum(simulate(v, concurrency, rate) for v in by_benchmark.values())
    order = sorted(by_benchmark, key=lambda b: -sum(by_benchmark[b]))
    longest = max(len(v) for v in by_benchmark.values())
    interleaved = [by_benchmark[b][i] for i in range(longest) for b in order if i < len(by_benchmark[b])]
    return sequential, simulate(interleaved, concurrency, rate)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument(
        "--curve", default="1,1.20,1.30,1.39", help="relative tokens/s at 1..concurrency in flight"
    )
    ap.add_argument("--curve-json", type=Path, default=None, help="perf/slot_scaling.py --json output")
    ap.add_argument("--round", type=int, default=None, help="with --curve-json: that round's curve (1-based)")
    args = ap.parse_args()
    slots = json.loads(args.curve_json.read_text(encoding="utf-8")) if args.curve_json is not None else None
    rate = rate_curve(args.curve, args.concurrency, slots, args.round)
    if len(rate) != args.concurrency:
        raise SystemExit(f"--curve: {len(rate)} values for concurrency {args.concurrency}")
    lengths = answer_lengths(args.run_dir)
    for b, v in lengths.items():
        print(f"{b:16s} {len(v):3d} samples, output tokens {sorted(v)}")
    sequential, pipelined = bound(lengths, args.concurrency, rate)
    print(f"curve {[round(r, 3) for r in rate]}: sequential {sequential:.1f}, pipelined {pipelined:.1f} (units of one request's "
          f"token time) — best ratio pipelined/sequential {pipelined / sequential:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
