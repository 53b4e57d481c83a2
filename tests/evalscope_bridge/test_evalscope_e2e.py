"""The real EvalScope, run through evalpipe on hand-picked records of all four benchmarks.

A scripted server answers by question content: correct, wrong, truncated (finish_reason=length),
HTTP 500 once, a LiveCodeBench solution raising IndexError, one that does not compile.  The outcome
table must give each sample exactly its score and failure class, and every prompt the server saw
must hash to the outcome's prompt hash (the join the audit relies on).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from evalscope_helpers import gsm8k_answer, jsonl, picked_run, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.schema.evalscope import (
    EvalscopeErrorRecord,
    EvalscopeTasks,
    IndexMap,
    PromptHashRecord,
)
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.hashing import attempt_seed
from evalpipe.resolve import resolve
from evalpipe.server.nltk_data import punkt_tab_available

GSM8K = {  # test-split line → role
    0: "correct",
    1: "wrong",
    2: "truncated",
    3: "http500",
}
CEVAL = [("accountant", "0", "correct"), ("art_studies", "3", "unparsable")]
IFEVAL = {"1162": "follows", "1051": "violates", "1268": "needs_punkt"}
LIVE_CODE_BENCH = {"abc387_b": "correct", "3708": "index_error", "abc388_a": "wrong", "abc389_a": "syntax"}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, shared_datasets: Path):
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    gsm_rows = _lines(shared_datasets / "gsm8k" / "test.jsonl")
    gsm_ids = {gsm8k_id(gsm_rows[i]["question"]): role for i, role in GSM8K.items()}
    ceval_ids = [f"{subject}/{rid}" for subject, rid, _ in CEVAL]
    cfg = run_config(
        {
            "gsm8k": len(GSM8K),
            "ceval": len(CEVAL),
            "ifeval": len(IFEVAL),
            "live_code_bench": len(LIVE_CODE_BENCH),
        }
    )
    rundir, manifest, datasets = picked_run(
        tmp_path_factory.mktemp("e2e") / "run",
        cfg,
        {
            "gsm8k": list(gsm_ids),
            "ceval": ceval_ids,
            "ifeval": list(IFEVAL),
            "live_code_bench": list(LIVE_CODE_BENCH),
        },
        datasets_root=shared_datasets,
    )
    rec = {(name, r.source_id): r for name, d in datasets.items() for r in d.eval.records}

    rules: list[Rule] = []
    for sid, role in gsm_ids.items():
        raw = rec[("gsm8k", sid)].raw
        gold = gsm8k_answer(raw)
        if role == "correct":
            rules.append(
                Rule(raw["question"], f"Adding up: the total is \\boxed{{{gold}}}.", name=f"gsm8k:{role}")
            )
        elif role == "wrong":
            rules.append(
                Rule(raw["question"], f"The total is \\boxed{{{int(gold) + 1}}}.", name=f"gsm8k:{role}")
            )
        elif role == "truncated":  # the right answer, but the budget ran out: counted incorrect
            rules.append(
                Rule(
                    raw["question"],
                    f"So \\boxed{{{gold}}} and then",
                    finish_reason="length",
                    name=f"gsm8k:{role}",
                )
            )
        else:
            rules.append(Rule(raw["question"], "unused", status=500, fail_times=None, name=f"gsm8k:{role}"))
    for subject, rid, role in CEVAL:
        raw = rec[("ceval", f"{subject}/{rid}")].raw
        content = f"分析略。\n答案：{raw['answer']}" if role == "correct" else "我不确定。"
        rules.append(Rule(raw["question"], content, name=f"ceval:{role}"))
    ifeval_answers = {
        "follows": "Tiny bird of omen flying high\nwhat do you tell the watching sky",
        "violates": "DEAR FRIEND PLEASE GO AND VOTE TODAY",
        "needs_punkt": "I breathe slowly and feel calm.",
    }
    for key, role in IFEVAL.items():
        rules.append(Rule(rec[("ifeval", key)].raw["prompt"], ifeval_answers[role], name=f"ifeval:{role}"))
    programs = {
        "correct": "x = int(input())\nprint(sum(i * j for i in range(1, 10) for j in range(1, 10) if i * j != x))",
        "index_error": "class Solution:\n    def zigzagTraversal(self, grid):\n        return [grid[100][0]]",
        "wrong": "print(0)",
        "syntax": "def solve(:\n    pass",
    }
    for qid, role in LIVE_CODE_BENCH.items():
        raw = rec[("live_code_bench", qid)].raw
        answer = f"Here is my solution.\n```python\n{programs[role]}\n```\n"
        rules.append(Rule(raw["question_content"], answer, name=f"live_code_bench:{role}"))

    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    with ScriptedServer(rules, served_name=cfg.model.served_name) as srv:
        stage = run_evalscope(resolve(cfg), rundir, index_map, api_url=srv.base_url)
        requests = srv.requests
    outcomes = write_outcomes(rundir, manifest, index_map, resolve(cfg).benchmarks)
    roles = {
        **{("gsm8k", s): r for s, r in gsm_ids.items()},
        **{("ceval", f"{s}/{i}"): r for s, i, r in CEVAL},
        **{("ifeval", k): r for k, r in IFEVAL.items()},
        **{("live_code_bench", k): r for k, r in LIVE_CODE_BENCH.items()},
    }
    by_role = {(o.benchmark, roles[(o.benchmark, o.source_id)]): o for o in outcomes}
    return {
        "rundir": rundir,
        "manifest": manifest,
        "index_map": index_map,
        "stage": stage,
        "requests": requests,
        "outcomes": outcomes,
        "by_role": by_role,
        "records": rec,
    }


def test_one_outcome_per_manifest_entry_in_manifest_order(run) -> None:
    assert [(o.benchmark, o.source_id) for o in run["outcomes"]] == [
        (e.benchmark, e.source_id) for e in run["manifest"].entries
    ]
    assert len(run["outcomes"]) == 13


def test_gsm8k_scores_and_failure_classes(run) -> None:
    o = run["by_role"]
    ok, wrong, trunc, err = (
        o[("gsm8k", "correct")],
        o[("gsm8k", "wrong")],
        o[("gsm8k", "truncated")],
        o[("gsm8k", "http500")],
    )
    assert (ok.failure_class, ok.score, ok.stop_reason) == ("ok", 1.0, "stop")
    assert ok.extracted_answer == ok.gold_answer
    assert (wrong.failure_class, wrong.score) == ("wrong", 0.0)
    assert int(wrong.extracted_answer) == int(wrong.gold_answer) + 1
    # right answer, but cut off: EvalScope scores it 1, evalpipe classes it budget_exhausted
    assert (trunc.failure_class, trunc.stop_reason, trunc.score) == ("budget_exhausted", "max_tokens", 1.0)
    assert "EvalScope scored the truncated answer 1" in trunc.failure_detail
    assert (err.failure_class, err.prediction_present, err.review_present) == ("api_error", False, False)
    assert err.api_error.startswith("InternalServerError") and "500" in err.api_error
    assert err.score is None and err.n_predictions == 0


def test_ceval_scores(run) -> None:
    ok, bad = run["by_role"][("ceval", "correct")], run["by_role"][("ceval", "unparsable")]
    assert (ok.failure_class, ok.score, ok.subset) == ("ok", 1.0, "accountant")
    assert ok.extracted_answer == ok.gold_answer == run["records"][("ceval", "accountant/0")].raw["answer"]
    assert (bad.failure_class, bad.score, bad.extracted_answer, bad.subset) == (
        "unparsable_answer",
        0.0,
        "",
        "art_studies",
    )


def test_ifeval_scores_and_missing_punkt_is_a_scoring_error(run) -> None:
    follows, violates, punkt = (run["by_role"][("ifeval", r)] for r in ("follows", "violates", "needs_punkt"))
    assert follows.failure_class == "ok"
    assert follows.scores == {
        "prompt_level_strict": 1.0,
        "inst_level_strict": 1.0,
        "prompt_level_loose": 1.0,
        "inst_level_loose": 1.0,
    }
    assert (follows.instructions_total, follows.instructions_followed_strict) == (1, 1)
    assert (violates.failure_class, violates.score, violates.instructions_followed_loose) == ("wrong", 0.0, 0)
    if punkt_tab_available():
        assert punkt.failure_class == "ok"
    else:  # never silently "wrong", never dropped: a row with the reason
        assert (punkt.failure_class, punkt.score, punkt.review_present) == ("scoring_error", None, True)
        assert punkt.failure_detail == (
            "NLTK punkt_tab is not installed; needed by length_constraints:number_sentences"
        )
        assert punkt.instructions_total == 1 and punkt.instructions_followed_strict is None
        assert run["stage"].punkt_tab is False
        log = run["rundir"].evalscope_log.read_text(encoding="utf-8", errors="replace")
        assert "'punkt_tab' is not installed and evalpipe does not download at run time" in log
    log = run["rundir"].evalscope_log.read_text(encoding="utf-8", errors="replace")
    assert "downloading from mirror" not in log  # EvalScope never tried the network for NLTK data


def test_live_code_bench_failure_classes_from_review_metadata(run) -> None:
    o = run["by_role"]
    assert (o[("live_code_bench", "correct")].failure_class, o[("live_code_bench", "correct")].score) == (
        "ok",
        1.0,
    )
    ie = o[("live_code_bench", "index_error")]
    assert (ie.failure_class, ie.failure_detail, ie.score) == ("code_runtime_error", "IndexError", 0.0)
    assert ie.failure_label == "code_runtime_error:IndexError"
    assert o[("live_code_bench", "wrong")].failure_class == "code_wrong_answer"
    syn = o[("live_code_bench", "syntax")]
    assert syn.failure_class == "code_compile_error" and syn.failure_detail.startswith("SyntaxError")


def test_prompt_hashes_join_the_wire_and_the_recording(run) -> None:
    """The server's hash of each wire request == the outcome's prompt hash == the rendered record."""
    recorded = {
        (r.benchmark, r.source_id): r.prompt_sha256
        for r in read_jsonl(run["rundir"].prompt_hashes, PromptHashRecord)
    }
    wire = {r.prompt_sha256 for r in run["requests"]}
    for o in run["outcomes"]:
        assert o.expected_prompt_sha256 == recorded[(o.benchmark, o.source_id)]
        assert o.expected_prompt_sha256 in wire  # every entry was requested with exactly its rendered prompt
        if o.prediction_present:
            assert o.prompt_sha256 == o.expected_prompt_sha256
            assert o.prompt_contains_question is True
            assert o.response_id and o.response_id.startswith("chatcmpl-scripted-")
            assert o.review_matches_prediction is True
            assert o.input_tokens and o.output_tokens and o.latency_s is not None
    # the HTTP 500 sample was requested once (no hidden SDK retries) and recorded as an error
    failed = [r for r in run["requests"] if r.status == 500]
    assert len(failed) == 1
    errors = read_jsonl(run["rundir"].evalscope_errors, EvalscopeErrorRecord)
    assert [(e.benchmark, e.phase, e.error_type) for e in errors] == [
        ("gsm8k", "predict", "InternalServerError")
    ]


def test_requests_carry_the_configured_generation_settings(run) -> None:
    by_bench = {}
    for r in run["requests"]:
        by_bench.setdefault(r.rule.split(":")[0], r)
    assert by_bench["gsm8k"].max_tokens == 256
    assert by_bench["ceval"].max_tokens == 32768  # default_max_tokens
    body = by_bench["gsm8k"].body
    assert (body["model"], body["temperature"], body["top_p"]) == ("scripted-model", 0.0, 1.0)
    # generation.seed 42 is sent as the sample's own seed of attempt 0 (evalpipe.hashing.attempt_seed)
    gsm8k = [e.source_id for e in run["manifest"].entries if e.benchmark == "gsm8k"]
    assert body["seed"] in {attempt_seed(42, "gsm8k", sid, 0) for sid in gsm8k}
    seeds = [
        r.body.get("seed") for r in run["requests"] if (r.rule or "").startswith("gsm8k") and r.status == 200
    ]
    assert len(set(seeds)) == len(seeds)  # one attempt per sample: one seed each


def test_materialized_rows_reach_evalscope_byte_for_byte(run) -> None:
    """LiveCodeBench question text keeps its CRLF line endings all the way into the request."""
    import pyarrow.parquet as pq

    rundir = run["rundir"]
    table = pq.read_table(rundir.datasets_dir / "live_code_bench" / "release_v6" / "test.parquet")
    assert all(str(t) == "string" for t in table.schema.types)  # contest_date stays text
    rows = table.to_pylist()
    index_map = read_model(rundir.index_map, IndexMap)
    for entry, row in zip(index_map.for_benchmark("live_code_bench"), rows, strict=True):
        source = run["records"][("live_code_bench", entry.source_id)].raw
        assert row["question_content"] == source["question_content"]
        assert row["private_test_cases"] == "[]"
    raw_9x9 = run["records"][("live_code_bench", "abc387_b")].raw["question_content"]
    assert "\r\n" in raw_9x9
    sent = next(r for r in run["requests"] if r.rule == "live_code_bench:correct")
    user = [m for m in sent.body["messages"] if m["role"] == "user"][-1]["content"]
    assert raw_9x9 in user  # not normalised on the way
    readme = (rundir.datasets_dir / "ceval" / "README.md").read_text(encoding="utf-8")
    assert "config_name: accountant" in readme and "split: dev" in readme and "split: val" in readme


def test_evalscope_log_captured_and_tasks_recorded(run) -> None:
    rundir = run["rundir"]
    log = rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    # one worker served the four benchmarks side by side, costliest first; each task's start is marked
    (header,) = re.findall(r"EvalScope worker for (.*) \(side by side\) started", log)
    assert sorted(header.split(", ")) == ["ceval", "gsm8k", "ifeval", "live_code_bench"]
    for name in ("gsm8k", "ceval", "ifeval", "live_code_bench"):
        assert log.count(f"evalpipe: {name}: EvalScope task starts") == 1
    (pid,) = re.findall(r"worker pid (\d+)", log)
    tasks = read_model(rundir.evalscope_tasks, EvalscopeTasks).tasks
    assert {t.worker_pid for t in tasks} == {int(pid)} and len(tasks) == 4
    assert "\x1b[" not in log.split("EvalScope worker for")[1][:2000]  # colours off
    assert len(jsonl(rundir.prompt_hashes)) == 13  # one rendered-prompt record per entry
    assert not list(rundir.hf_cache_dir.iterdir())  # the worker's private dataset cache removed
    # EvalScope's own HTML report is not rendered (0.3-0.5 s of CPU per benchmark; evalpipe's report and
    # explorer replace it); its JSON reports, which the outcomes do not need but a reader may, are kept
    from evalpipe.evalscope_bridge.patches import HTML_REPORT_SKIPPED

    for name in ("gsm8k", "ceval", "ifeval", "live_code_bench"):
        reports = rundir.evalscope_work_dir(name) / "reports"
        assert not list(reports.rglob("*.html")) and list(reports.rglob(f"{name}.json")), name
    assert log.count(f"HTML report generated: {HTML_REPORT_SKIPPED}") == 4
