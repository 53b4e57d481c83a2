"""Measure llama.cpp KV f16 vs q4_0 on SmolLM2-135M with evalpipe's speed benchmark, twice.

Both servers are up at once (llama.cpp's native server with the launcher's settings,
``tools/llamacpp_native_server.py``, ``--no-prompt-cache``), rounds alternate
between them (ABBA…), the prompts of round r are the same for both; the whole measurement is repeated
``--repeats`` times so the closing note can say how much the ratios move between repeats.  Prints the
paired comparison lines and the load average; writes everything under ``--out``.

    .venv/bin/python tools/measure_speed_kv.py --out /tmp/speed-kv [--threads 1] [--rounds 3] [--input-len 128]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from llamacpp_native_server import spawn_native  # tools/ is sys.path[0] when this script runs

from evalpipe.artifacts import RunDir, write_model
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.speed.compare import compare_speed
from evalpipe.speed.run import SpeedRequest, SpeedTarget, load_average, run_speed_alternating


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=4)
    ns = parser.parse_args(args)
    cfg = SpeedConfig(
        client="evalscope",
        workloads=[
            SpeedWorkload(
                input_len=ns.input_len,
                output_len=ns.output_len,
                concurrency=ns.concurrency,
                prompts_per_round=ns.prompts,
            )
        ],
        rounds=ns.rounds,
        tokenizer="gguf:smollm2",
        round_timeout_s=600,
    )
    ns.out.mkdir(parents=True, exist_ok=True)
    procs, urls = [], {}
    try:
        for kv in ("f16", "q4_0"):
            proc, url = spawn_native(
                ["--model", "smollm2", "--kv-cache-dtype", kv, "--threads", ns.threads, "--parallel", "2",
                 "--ctx-size", "4096", "--served-model-name", "smollm2", "--no-prompt-cache"],
                ns.out / f"server-{kv}.log",
            )  # fmt: skip
            procs.append(proc)
            urls[f"kv_{kv}"] = url
        summary = []
        for repeat in range(1, ns.repeats + 1):
            root = ns.out / f"repeat-{repeat}"
            before = load_average()
            targets = [SpeedTarget(v, u, root / v) for v, u in urls.items()]
            artifacts = run_speed_alternating(targets, SpeedRequest(cfg, "smollm2", progress=print))
            comparison = compare_speed(artifacts["kv_f16"], artifacts["kv_q4_0"])
            write_model(RunDir(root).speed_compare, comparison)
            after = load_average()
            for w in comparison.workloads:
                print(f"repeat {repeat}: {w.line}")
                for m in w.metrics:
                    print(f"  {m.metric}: x{m.ratio:.3f} [{m.ci_low:.3f}, {m.ci_high:.3f}] {m.direction}")
            summary.append(
                {
                    "repeat": repeat,
                    "load_before": before.model_dump() if before else None,
                    "load_after": after.model_dump() if after else None,
                    "workloads": [
                        {
                            "workload": w.workload,
                            "verdict": w.verdict,
                            "metrics": {m.metric: [m.ratio, m.ci_low, m.ci_high] for m in w.metrics},
                        }
                        for w in comparison.workloads
                    ],
                }
            )
        (ns.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
