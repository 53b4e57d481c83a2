"""How much a llama.cpp server gains from filling its parallel slots: aggregate decode throughput with one
request in flight vs ``--parallel`` in flight, same server, rounds interleaved.

Why: ``schedule: pipelined`` (issue 23) fills the slots a benchmark's tail leaves idle.  That shortens the
run only as far as the server turns extra rows in a batch into extra tokens per second.  On a GPU a decode
step costs about the same for 1 or 8 rows; on a CPU-bound host it does not, and this script measures by how
much — the bound on what any schedule can save there.

    .venv/bin/python perf/slot_scaling.py [--slots 4] [--threads 2] [--tokens 96] [--rounds 3]

Output: per round the wall time and tokens/s of N requests sent one at a time and N sent ``--slots`` at a
time (fixed-length outputs, ``ignore_eos``), then the median ratio full/one.  A ratio r bounds the wall time
of any schedule that only fills idle slots: time spent at occupancy 1 can shrink at most to 1/r of itself.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evalpipe.processes.group import stop_group
from evalpipe.server.llamacpp import spawn


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    prompts = [
        f"Write a short story number {i} about a lighthouse keeper and the sea."
        for i in range(args.slots * 2)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = spawn(["--model", "smollm2", "--ctx-size", str(2048 * args.slots), "--parallel",
                            str(args.slots), "--threads", str(args.threads), "--no-prompt-cache"],
                           Path(tmp) / "server.log")  # fmt: skip
        try:
            _batch(base, prompts[:2], 8, 2)  # warm-up
            ratios = []
            for i in range(args.rounds):
                order = [1, args.slots] if i % 2 == 0 else [args.slots, 1]
                rate = {}
                for in_flight in order:
                    wall, produced = _batch(base, prompts, args.tokens, in_flight)
                    rate[in_flight] = produced / wall
                    print(f"round {i + 1}: {in_flight} in flight: {produced} tokens in {wall:.1f} s = "
                          f"{produced / wall:.1f} tok/s", flush=True)  # fmt: skip
                ratios.append(rate[args.slots] / rate[1])
            print(f"throughput {args.slots} in flight / 1 in flight: median {statistics.median(ratios):.2f} "
                  f"(rounds {', '.join(f'{r:.2f}' for r in ratios)})")  # fmt: skip
        finally:
            stop_group(proc, 10.0)


if __name__ == "__main__":
    main()
