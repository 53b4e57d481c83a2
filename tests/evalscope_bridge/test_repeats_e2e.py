"""``generation.repeats`` end to end: EvalScope asks every sample k times, outcomes keep every attempt, the
audit treats the k attempts as intended and the summary scores the clustered mean.

A scripted server answers four GSM8K questions, each asked three times (EvalScope's own ``repeats``):
always right; always wrong; right on its first request then wrong (the server's nondeterminism); and one
whose first request fails with HTTP 500 (that attempt is dropped, the other two count).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalscope_helpers import gsm8k_answer, picked_run, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import read_jsonl
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.recording.proxy import recording_proxy
from evalpipe.resolve import resolve
from evalpipe.run.audit import audit_run
from evalpipe.stats.intervals import clustered_mean

ROLES = ("right", "wrong", "flips", "http500_once")
K = 3


def test_repeats_through_evalscope(tmp_path: Path, shared_datasets: Path) -> None:
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    lines = (shared_datasets / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines[: len(ROLES)]]
    ids = {gsm8k_id(r["question"]): role for r, role in zip(rows, ROLES, strict=True)}
    cfg = run_config({"gsm8k": len(ROLES)})
    cfg.generation.repeats = K
    rundir, manifest, datasets = picked_run(
        tmp_path / "run", cfg, {"gsm8k": list(ids)}, datasets_root=shared_datasets
    )
    rec = {r.source_id: r for r in datasets["gsm8k"].eval.records}
    rules = []
    for sid, role in ids.items():
        q, gold = rec[sid].raw["question"], gsm8k_answer(rec[sid].raw)
        right, wrong = f"The total is \\boxed{{{gold}}}.", f"The total is \\boxed{{{int(gold) + 1}}}."
        if role == "right":
            rules.append(Rule(q, right))
        elif role == "wrong":
            rules.append(Rule(q, wrong))
        elif role == "flips":
            rules += [Rule(q, right, max_uses=1), Rule(q, wrong)]
        else:
            rules.append(Rule(q, right, status=500, fail_times=1))

    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    with ScriptedServer(rules, served_name=cfg.model.served_name) as srv:
        with recording_proxy(srv.base_url, rundir) as proxy:
            run_evalscope(resolve(cfg), rundir, index_map, api_url=proxy.base_url)
            proxy.flush()
        asked = [r.last_user for r in srv.requests]
    write_outcomes(rundir, manifest, index_map, resolve(cfg).benchmarks)

    # every sample was asked K times, no more
    for sid in ids:
        q = rec[sid].raw["question"]
        assert sum(1 for u in asked if u and q in u) == K, ids[sid]

    outcomes = {o.source_id: o for o in read_jsonl(rundir.outcomes, OutcomeRow)}
    assert len(outcomes) == len(ROLES)  # still one row per manifest entry
    by_role = {ids[sid]: outcomes[sid] for sid in ids}
    for row in by_role.values():
        assert [a.attempt for a in row.attempts] == list(range(K))
        assert [a.index for a in row.attempts] == [row.index * K + j for j in range(K)]
    assert [a.correct for a in by_role["right"].attempts] == [True] * K
    assert [a.correct for a in by_role["wrong"].attempts] == [False] * K
    assert sorted(a.correct for a in by_role["flips"].attempts) == [False, False, True]
    assert len({a.response_sha256 for a in by_role["flips"].attempts}) == 2
    failed = [a for a in by_role["http500_once"].attempts if a.failure_class == "api_error"]
    assert len(failed) == 1 and failed[0].response_id is None
    means = {role: row.mean_score for role, row in by_role.items()}
    assert means == pytest.approx({"right": 1.0, "wrong": 0.0, "flips": 1 / 3, "http500_once": 1.0})

    s = audit_run(rundir.root)
    codes = {f.code for f in s.findings}
    # the K attempts are intended: no duplicates, and every used response obeys the selection rule
    assert "duplicate_requests" not in codes and "selection_rule_violated" not in codes, s.findings
    assert "response_not_logged" not in codes and "response_of_other_prompt" not in codes
    assert s.requests.duplicates == 0
    assert s.response_selection.violations == 0
    g = s.benchmarks[0]
    assert g.repeats is not None
    expected = clustered_mean([[1.0] * K, [0.0] * K, [1.0, 0.0, 0.0], [1.0, 1.0]])
    assert g.score == pytest.approx(expected.estimate) == pytest.approx((1 + 0 + 1 / 3 + 1) / 4)
    assert g.interval is not None and g.interval.method == "wilson_clustered"
    assert (g.interval.lower, g.interval.upper) == pytest.approx(expected.interval)
    assert (g.repeats.repeats, g.repeats.attempts, g.repeats.correct_attempts) == (K, 11, 6)
    assert g.repeats.standard_error == pytest.approx(expected.standard_error)
    # measured nondeterminism: one sample's answers differed, and its scores
    assert (g.repeats.responses_differed, g.repeats.scores_differed) == (1, 1)
    assert g.repeats.samples_with_repeats == 4
