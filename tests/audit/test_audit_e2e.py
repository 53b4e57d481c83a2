"""The audit on a run directory produced by the real stages (EvalScope + recording proxy).

A scripted server answers four GSM8K questions: correct, wrong, truncated (finish_reason=length) and
one that fails with HTTP 500 once (EvalScope does not retry it here, so the sample has no prediction).
The audit must link every logged request to its sample, find no identity errors, and count exactly
the planted failures — proving the joins hold on the bridge's and the proxy's real output.
"""

from __future__ import annotations

from pathlib import Path

from evalscope_helpers import gsm8k_answer, picked_run, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.recording.proxy import recording_proxy
from evalpipe.resolve import resolve
from evalpipe.run.audit import audit_run

ROLES = ("correct", "wrong", "truncated", "http500")


def test_audit_of_a_real_evalscope_run(tmp_path: Path, shared_datasets: Path) -> None:
    import json

    from evalpipe.benchmarks.gsm8k import gsm8k_id

    lines = (shared_datasets / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines[: len(ROLES)]]
    ids = {gsm8k_id(r["question"]): role for r, role in zip(rows, ROLES, strict=True)}
    cfg = run_config({"gsm8k": len(ROLES)})
    rundir, manifest, datasets = picked_run(
        tmp_path / "run", cfg, {"gsm8k": list(ids)}, datasets_root=shared_datasets
    )
    rec = {r.source_id: r for r in datasets["gsm8k"].eval.records}
    rules = []
    for sid, role in ids.items():
        raw = rec[sid].raw
        gold = gsm8k_answer(raw)
        if role == "correct":
            rules.append(Rule(raw["question"], f"The total is \\boxed{{{gold}}}."))
        elif role == "wrong":
            rules.append(Rule(raw["question"], f"The total is \\boxed{{{int(gold) + 1}}}."))
        elif role == "truncated":
            rules.append(Rule(raw["question"], f"So \\boxed{{{gold}}} and", finish_reason="length"))
        else:
            rules.append(Rule(raw["question"], "unused", status=500, fail_times=None))

    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    with ScriptedServer(rules, served_name=cfg.model.served_name) as srv:
        with recording_proxy(srv.base_url, rundir) as proxy:
            run_evalscope(resolve(cfg), rundir, index_map, api_url=proxy.base_url)
            proxy.flush()
    write_outcomes(rundir, manifest, index_map, resolve(cfg).benchmarks)

    s = audit_run(rundir.root)
    by_role = {ids[sid]: sid for sid in ids}
    codes = sorted((f.severity, f.code, tuple(f.sample_ids)) for f in s.findings)
    # no server verification, provenance or config copy in this run dir: warnings, not errors
    assert codes == sorted(
        [
            ("info", "budget_exhausted", (by_role["truncated"],)),
            ("warn", "failed_request", (by_role["http500"],)),
            ("warn", "missing_artifact", ()),  # provenance.json
            ("warn", "missing_artifact", ()),  # config.yaml
            ("error", "no_prediction", (by_role["http500"],)),  # no attempt got a response
            ("warn", "server_not_verified", ()),
        ]
    ), s.findings

    g = s.benchmarks[0]
    assert (g.benchmark, g.correct, g.scored) == ("gsm8k", 1, 4)
    labels = {f.label: f.sample_ids for f in g.failures}
    assert labels["budget_exhausted"] == [by_role["truncated"]]
    assert labels["api_error"] == [by_role["http500"]]
    assert g.budget_exhausted_scored_correct == 1
    r = s.requests
    assert (r.samples, r.actual_requests, r.successful, r.transport_failures) == (4, 4, 3, 1)
    assert (r.duplicates, r.retries, r.unlinked) == (0, 0, 0)
    assert s.response_selection.correctness_based_selection is False
    assert g.throughput is not None and g.throughput.input_tokens > 0
    assert s.requests.retry_causes == {}
    # the sample left without a response is an error finding: the audit does not pass
    assert (s.verdict, s.exit_code) == ("audit_error", 3)
