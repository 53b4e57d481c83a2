"""How much a llama.cpp server gains from filling its parallel slots: aggregate decode throughput with one
request in flight vs ``--parallel`` in flight, same server, rounds interleaved.

Why: ``schedule: pipelined`` (issue 23) fills the slots a benchmark's tail leaves idle.  That shortens the
run only as far as the server turns extra rows in a batch into extra tokens per second.  On a GPU a decode
step costs about the same for 1 or 8 rows; on a CPU-bound host it does not, and this script measures by how
much — the bound on what any schedule can save there.

    .venv/bin/python perf/slot_scaling.py [--slots 4] [--threads 2] [--tokens 96] [--rounds 3]
    .venv/bin/python perf/slot_scaling.py --endpoint http://127.0.0.1:8080 --levels 1,2,4,8,16,32,64 \\
        --json slots.json                  # a running llama-server (the GPU run of issue 40) with >= 64 slots

Output: per round and level k the wall time and tokens/s of requests sent k at a time (fixed-length
outputs, ``ignore_eos``; two full waves, and at least ``--min-requests``, 8 by default), then the median ratio to
one in flight per level.  A ratio r bounds the wall time of any schedule that only fills idle slots: time
spent at occupancy 1 can shrink at most to 1/r of itself.  Without ``--levels`` the levels are 1 and
``--slots``.  Without ``--endpoint`` the script starts SmolLM2 on evalpipe's llama.cpp launcher (xllamacpp)
with ``--slots`` slots; with it, the server is used as it is (its ``/props`` must report at least the
largest level in slots) and the rounds' order of levels alternates, as it does for the launcher's.
``--json`` writes the curve for ``perf/tail_bound.py --curve-json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evalpipe.engines.llamacpp import spawn
from evalpipe.processes.group import stop_group


def _complete(base: str, prompt: str, tokens: int) -> int:
    body = json.dumps({"prompt": prompt, "n_predict": tokens, "ignore_eos": True, "temperature": 0,
                       "cache_prompt": False}).encode()  # fmt: skip
    req = urllib.request.Request(base + "/completion", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.loads(r.read())
    return int(out.get("tokens_predicted") or out.get("timings", {}).get("predicted_n") or 0)


def _batch(base: str, prompts: list[str], tokens: int, in_flight: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(in_flight) as pool:
        produced = sum(pool.map(lambda p: _complete(base, p, tokens), prompts))
    return time.perf_counter() - t0, produced


def parse_levels(text: str | None, slots: int) -> list[int]:
    """``--levels`` as sorted distinct in-flight counts, 1 always first (every ratio is to one in flight)."""
    if text is None:
        return sorted({1, slots})
    try:
        levels = sorted({int(x) for x in text.split(",") if x.strip()} | {1})
    except ValueError:
        raise SystemExit(f"--levels {text!r}: comma-separated whole numbers") from None
    if levels[0] < 1:
        raise SystemExit(f"--levels {text!r}: every level must be >= 1")
    return levels


def requests_for(level: int, min_requests: int) -> int:
    """Requests sent at ``level`` in flight: two full waves, and never fewer than ``min_requests`` (one
    request at a time on a fast GPU is over in a fraction of a second)."""
    return max(2 * level, min_requests)


def round_order(levels: list[int], round_index: int) -> list[int]:
    """Even rounds go up the levels, odd rounds down: drift on the host hits every level alike."""
    return list(levels) if round_index % 2 == 0 else list(reversed(levels))


def server_slots(base: str) -> int | None:
    """The slot count a running llama.cpp server reports on ``/props`` (``total_slots``); None if it does not."""
    try:
        with urllib.request.urlopen(base + "/props", timeout=10) as r:
            props = json.loads(r.read())
    except (OSError, ValueError):
        return None
    slots = props.get("total_slots") if isinstance(props, dict) else None
    return int(slots) if isinstance(slots, int) else None


def summarise(rates: dict[int, list[float]]) -> dict[str, Any]:
    """Per level the median tokens/s over rounds and its ratio to one in flight; ratios per round too."""
    base = rates[1]
    return {
        "median_tokens_per_s": {str(k): statistics.median(v) for k, v in rates.items()},
        "ratio_to_one": {str(k): statistics.median(v) / statistics.median(base) for k, v in rates.items()},
        "ratio_to_one_per_round": {
            str(k): [r / b for r, b in zip(v, base, strict=True)] for k, v in rates.items()
        },
    }


def measure(
    base: str, levels: list[int], tokens: int, rounds: int, min_requests: int
) -> dict[int, list[float]]:
    prompts = [f"Write a short story number {i} about a lighthouse keeper and the sea."
               for i in range(requests_for(max(levels), min_requests))]  # fmt: skip
    _batch(base, prompts[:2], 8, 2)  # warm-up
    rates: dict[int, list[float]] = {k: [] for k in levels}
    for i in range(rounds):
        for k in round_order(levels, i):
            wall, produced = _batch(base, prompts[: requests_for(k, min_requests)], tokens, k)
            rates[k].append(produced / wall)
            print(f"round {i + 1}: {k} in flight: {produced} tokens in {wall:.1f} s = {produced / wall:.1f} tok/s",
                  flush=True)  # fmt: skip
    return rates


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, default=4, help="slots of the server this script starts")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--levels", default=None, help="in-flight counts to measure, e.g. 1,2,4,8 (default 1,SLOTS)"
    )
    ap.add_argument(
        "--min-requests", type=int, default=8, help="requests per level at least, besides 2 full waves"
    )
    ap.add_argument(
        "--endpoint", default=None, help="a running llama.cpp server's base URL (none is started)"
    )
    ap.add_argument("--json", type=Path, default=None, help="write the measured curve here")
    args = ap.parse_args()
    levels = parse_levels(args.levels, args.slots)
    proc = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.endpoint:
            base = args.endpoint.rstrip("/")
            slots = server_slots(base)
            if slots is not None and slots < max(levels):
                raise SystemExit(f"--endpoint {base}: {slots} slots, fewer than the level {max(levels)}")
        else:
            slots = max(args.slots, max(levels))
            proc, base = spawn(["--model", "smollm2", "--ctx-size", str(2048 * slots), "--parallel",
                                str(slots), "--threads", str(args.threads), "--no-prompt-cache"],
                               Path(tmp) / "server.log")  # fmt: skip
        try:
            rates = measure(base, levels, args.tokens, args.rounds, args.min_requests)
        finally:
            if proc is not None:
                stop_group(proc, 10.0)
    summary = summarise(rates)
    for k in levels[1:]:
        per_round = ", ".join(f"{r:.2f}" for r in summary["ratio_to_one_per_round"][str(k)])
        print(f"throughput {k} in flight / 1 in flight: median {summary['ratio_to_one'][str(k)]:.2f} "
              f"(rounds {per_round})")  # fmt: skip
    if args.json:
        record = {"endpoint": args.endpoint, "server_slots": slots, "levels": levels, "tokens": args.tokens,
                  "rounds": args.rounds, "requests": {str(k): requests_for(k, args.min_requests) for k in levels},
                  "tokens_per_s": {str(k): v for k, v in rates.items()}, **summary}  # fmt: skip
        args.json.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"curve → {args.json}")


if __name__ == "__main__":
    main()
