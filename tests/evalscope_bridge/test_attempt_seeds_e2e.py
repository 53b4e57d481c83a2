"""Per-attempt request seeds end to end: EvalScope sends attempt k of a sample ``attempt_seed(seed, benchmark,
source_id, k)``, the same in both arms of a paired run and on a retry; the proxy records it, outcomes carry it
and ``compare`` checks it and counts the samples whose attempts answered alike.

Arm A's scripted server honours the seed (``sampling=True``: the text is a hash of seed and prompt), arm B's
ignores it (one text for every request) and fails its first request once, which EvalScope retries.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalscope_helpers import picked_run, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import read_jsonl
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.compare import Arms, PairedDesign, compare_runs
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.explore.collect import arm_card, load_arm
from evalpipe.hashing import attempt_seed
from evalpipe.recording.proxy import recording_proxy
from evalpipe.report.compare_markdown import compare_markdown
from evalpipe.resolve import resolve

K = 2
N = 3


def _arm(tmp: Path, name: str, shared_datasets: Path, ids: list[str], srv: ScriptedServer) -> Path:
    cfg = run_config({"gsm8k": N})
    cfg.generation.repeats = K
    cfg.generation.temperature = 0.8
    cfg.generation.retries = 1
    cfg.generation.retry_interval_s = 0
    rundir, manifest, datasets = picked_run(tmp / name, cfg, {"gsm8k": ids}, datasets_root=shared_datasets)
    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    with recording_proxy(srv.base_url, rundir) as proxy:
        run_evalscope(resolve(cfg), rundir, index_map, api_url=proxy.base_url)
        proxy.flush()
    write_outcomes(rundir, manifest, index_map, resolve(cfg).benchmarks)
    return rundir.root


def test_attempt_seeds_distinct_per_attempt_common_across_arms(tmp_path: Path, shared_datasets: Path) -> None:
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    lines = (shared_datasets / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines[:N]]
    ids = [gsm8k_id(q) for q in questions]
    expected = {sid: [attempt_seed(42, "gsm8k", sid, k) for k in range(K)] for sid in ids}

    with ScriptedServer([], default=Rule("", "unused"), sampling=True) as honours:
        run_a = _arm(tmp_path, "a", shared_datasets, ids, honours)
        sent_a = list(honours.requests)
    with ScriptedServer(
        [], default=Rule("", "The answer is \\boxed{1}.", status=500, fail_times=1)
    ) as ignores:
        run_b = _arm(tmp_path, "b", shared_datasets, ids, ignores)
        sent_b = list(ignores.requests)

    # what the servers received: attempt k of each sample carried its derived seed, in both arms
    for sent in (sent_a, sent_b):
        for sid, q in zip(ids, questions, strict=True):
            seeds = [r.body.get("seed") for r in sent if r.last_user and q in r.last_user]
            assert set(seeds) == set(expected[sid]), sid
    # B's first request failed and was retried: the retry carried the failed request's seed
    failed = [r for r in sent_b if r.status == 500]
    assert len(failed) == 1 and len(sent_b) == N * K + 1
    assert sum(1 for r in sent_b if r.body.get("seed") == failed[0].body["seed"]) == 2

    # recorded per request and per attempt of each outcome row
    for run in (run_a, run_b):
        logged = {a.seed for a in read_jsonl(run / "requests.jsonl", RequestAttempt)}
        assert logged == {s for seeds in expected.values() for s in seeds}
        rows = {r.source_id: r for r in read_jsonl(run / "outcomes.jsonl", OutcomeRow)}
        for sid in ids:
            assert [a.request_seed for a in rows[sid].attempts] == expected[sid]
            assert rows[sid].request_seed == expected[sid][0]
            # the explorer shows them: per attempt of the sample and per HTTP request
            card = arm_card(load_arm(run), ("gsm8k", sid), None)
            assert [r.request_seed for r in card.repeats] == expected[sid]
            assert {a.seed for a in card.attempts} == set(expected[sid])

    # compare: every sample checked; A (seed honoured) as its responses show, B (seed ignored) all identical
    rows_a = {r.source_id: r for r in read_jsonl(run_a / "outcomes.jsonl", OutcomeRow)}
    identical_a = sum(1 for r in rows_a.values() if len({a.response_sha256 for a in r.attempts}) == 1)
    result = compare_runs(PairedDesign(Arms(run_a, run_b, "A", "B")))
    check = result.benchmarks[0].attempt_seeds
    assert check is not None
    assert (check.repeats, check.samples, check.seeded, check.distinct, check.common) == (K, N, N, N, N)
    assert (check.compared_a, check.identical_a, check.compared_b, check.identical_b) == (
        N,
        identical_a,
        N,
        N,
    )
    assert identical_a == 0  # the seed changes the sampled text
    md = compare_markdown(result)
    assert f"attempt seeds: distinct per attempt, identical across arms (checked: {N}/{N} samples)" in md
    assert f"A: 0 of {N}, B: {N} of {N} samples' {K} attempts returned identical text" in md
