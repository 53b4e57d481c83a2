"""The resume hazard, reproduced and repaired.

EvalScope's ``use_cache`` restores predictions and reviews by positional index with no content check.
When the materialized dataset is reordered between two runs, plain EvalScope attaches the old answers
to the new questions (and scores them against the new targets).  ``evalpipe run --resume`` checks
every cached row against its manifest entry first, drops and records each one that moved, and has
exactly those re-requested.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evalscope_helpers import gsm8k_answer, jsonl, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import RunDir, read_jsonl, read_model, write_model
from evalpipe.artifacts.schema.evalscope import EvalscopeTasks
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import CacheRepair
from evalpipe.evalscope_bridge.layout import predictions_file, reviews_file
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.runner import WorkerProcess
from evalpipe.hashing import attempt_seed, normalize_newlines
from evalpipe.resolve import resolve
from evalpipe.run import pipeline
from evalpipe.run.options import FreshRun, ResumedRun, ServerTarget
from evalpipe.run.spec import RunSpec
from evalpipe.samplers.loading import load_benchmark

N = 5  # reversed: indices 0↔4 and 1↔3 move, index 2 stays


def _rules(datasets: Path) -> list[Rule]:
    rows = [json.loads(line) for line in (datasets / "gsm8k" / "test.jsonl").read_text().splitlines()]
    return [Rule(r["question"], f"Step by step... \\boxed{{{gsm8k_answer(r)}}}") for r in rows]


def _user(row: dict) -> str:
    return normalize_newlines([m for m in row["messages"] if m["role"] == "user"][-1]["content"])


def test_reorder_between_runs_plain_use_cache_misattributes_and_evalpipe_repairs(
    tmp_path, shared_datasets: Path
) -> None:
    cfg = run_config({"gsm8k": N})
    run_dir, resume_dir = tmp_path / "run", tmp_path / "resume"
    rules = _rules(shared_datasets)
    with ScriptedServer(rules, served_name=cfg.model.served_name) as first:
        fresh = FreshRun(out=run_dir, dataset_root=shared_datasets)
        result = pipeline.run(RunSpec(resolve(cfg), fresh, ServerTarget(endpoint=first.base_url)))
        assert [o.failure_class for o in result.outcomes] == ["ok"] * N
        assert len(first.requests) == N
        first_seeds = {r.last_user: r.body["seed"] for r in first.requests}
        rundir = RunDir(run_dir)
        tasks = read_model(rundir.evalscope_tasks, EvalscopeTasks)
        model_id = tasks.tasks[0].model_id
        before = {e.index: e for e in result.index_map.for_benchmark("gsm8k")}

        # --- between the runs, the materialized order changes (here: the manifest's entry order)
        manifest = read_model(rundir.manifest, Manifest)
        reordered = manifest.model_copy(update={"entries": list(reversed(manifest.entries))})
        write_model(rundir.manifest, reordered)
        shutil.copytree(run_dir, resume_dir)  # evalpipe resumes this copy below

        # --- plain EvalScope use_cache (same task, same server): old answers land on new questions
        data = {"gsm8k": load_benchmark(cfg, "gsm8k", shared_datasets)}
        index_map = materialize(rundir, reordered, data, resolve(cfg))
        task = {**tasks.tasks[0].task, "use_cache": tasks.tasks[0].task["work_dir"]}
        with WorkerProcess(rundir) as worker:
            worker.start([("gsm8k", task)])
            worker.rendered("gsm8k")
            ran = worker.run("gsm8k", task)
        assert ran.finished.rerun_review is False  # EvalScope accepted its cache as is
        assert len(first.requests) == N  # ...and re-asked nothing: it trusted the index
        after = {e.index: e for e in index_map.for_benchmark("gsm8k")}
        reviews = {
            r["index"]: r
            for r in jsonl(reviews_file(rundir.evalscope_work_dir("gsm8k"), model_id, "gsm8k", "main"))
        }
        moved = [i for i in range(N) if after[i].source_id != before[i].source_id]
        assert moved == [0, 1, 3, 4]
        for i in moved:
            assert normalize_newlines(before[i].question) in _user(reviews[i])  # the OLD question's answer...
            assert normalize_newlines(after[i].question) not in _user(
                reviews[i]
            )  # ...filed under the NEW entry
            assert reviews[i]["sample_score"]["score"]["value"]["accuracy"] == 1.0  # ...and counted correct

    # --- evalpipe resume of the copy: new server (the api_url changes too), and a torn cache line
    resumed_dir = RunDir(resume_dir)
    preds_path = predictions_file(resumed_dir.evalscope_work_dir("gsm8k"), model_id, "gsm8k", "main")
    with open(preds_path, "ab") as fh:
        fh.write(b'{"index": 2, "model": "scripted-mo')
    with ScriptedServer(rules, served_name=cfg.model.served_name) as second:
        again = ResumedRun(resume_dir, dataset_root=shared_datasets)
        resumed = pipeline.run(RunSpec(resolve(cfg), again, ServerTarget(endpoint=second.base_url)))
        asked = [r.last_user or "" for r in second.requests]
        # a re-sent sample carries the seed it was first sent with, though its position moved
        resent = {r.last_user: r.body["seed"] for r in second.requests}
        assert resent == {u: first_seeds[u] for u in resent}
        assert sorted(resent.values()) == sorted(
            attempt_seed(42, "gsm8k", after[i].source_id, 0) for i in moved
        )
    # exactly the moved entries were re-requested, each once; index 2 was reused
    assert len(asked) == len(moved)
    for i in moved:
        assert sum(normalize_newlines(after[i].question) in text for text in asked) == 1

    repairs = read_jsonl(resumed_dir.cache_repairs, CacheRepair)
    assert sorted((r.artifact, r.index, r.reason) for r in repairs) == sorted(
        [("prediction", i, "question_mismatch") for i in moved]
        + [("review", i, "question_mismatch") for i in moved]
        + [("prediction", 2, "unreadable")]
    )
    for r in repairs:
        assert r.expected_source_id == after[r.index].source_id
        if r.reason == "question_mismatch":
            assert r.found_prompt_sha256 and r.found_prompt_sha256 != r.expected_prompt_sha256
    assert len(resumed.evalscope.repairs) == len(repairs)

    out = {o.index: o for o in resumed.outcomes}
    assert [out[i].failure_class for i in range(N)] == ["ok"] * N
    for i in range(N):
        assert out[i].source_id == after[i].source_id
        assert out[i].prompt_contains_question is True
        assert out[i].prompt_sha256 == out[i].expected_prompt_sha256
        assert (out[i].n_predictions, out[i].n_reviews) == (1, 1)
        assert out[i].review_matches_prediction is True
    # the api_url (and the directory) changed, so EvalScope refused its own cache identity:
    # evalpipe had verified every row, so predictions were reused and reviews re-scored
    stage = resumed.evalscope.benchmarks[0]
    assert stage.rerun_review is True
    assert "Cannot reuse cache" in (stage.cache_identity_reason or "")


def test_a_resume_repeats_the_speed_flags_the_run_started_with(tmp_path: Path) -> None:
    """run.json records --no-speed / --waive-speed-gate; a resume with other flags is refused in one line (the
    speed section and its gate are part of what the run measures)."""
    import pytest

    from evalpipe.artifacts.schema.run import RunRecord
    from evalpipe.errors import ConfigError
    from evalpipe.run.sample import check_same_speed_flags

    cfg = run_config({"gsm8k": 1})
    rd = RunDir(tmp_path / "run")
    record = RunRecord(run_id="r", config_name=cfg.name, config_path="", config_sha256="0" * 64, created_at="t",
                       evalpipe_version="0", dataset_locations={}, no_speed=True, speed_gate_waived=True)  # fmt: skip
    check_same_speed_flags(record, cfg.accuracy_only(waive_speed_gate=True), rd)
    with pytest.raises(ConfigError) as caught:
        check_same_speed_flags(record, cfg.accuracy_only(), rd)
    assert caught.value.message == (
        f"--resume {rd.root}: the run started with --no-speed --waive-speed-gate ({rd.run_record}); resume it "
        "with the same (given: --no-speed)"
    )
    with pytest.raises(ConfigError, match=r"given: neither\)$"):
        check_same_speed_flags(record, cfg, rd)


def test_a_resume_of_a_task_evalscope_never_snapshotted(tmp_path, shared_datasets: Path) -> None:
    """A run stopped before EvalScope wrote a task's ``configs/task_config.yaml`` resumes.  EvalScope 1.14
    refuses ``use_cache`` without that snapshot ("previous=unknown"), so a task with nothing cached runs
    afresh, and one whose outputs survived without it reuses its checked predictions and re-scores them."""
    cfg = run_config({"gsm8k": 2})
    run_dir = tmp_path / "run"
    rules = _rules(shared_datasets)
    with ScriptedServer(rules, served_name=cfg.model.served_name) as server:
        pipeline.run(RunSpec(resolve(cfg), FreshRun(out=run_dir, dataset_root=shared_datasets),
                             ServerTarget(endpoint=server.base_url)))  # fmt: skip
        work_dir = RunDir(run_dir).evalscope_work_dir("gsm8k")

        # outputs without a snapshot: predictions reused (nothing asked again), reviews re-scored
        (work_dir / "configs" / "task_config.yaml").unlink()
        again = ResumedRun(run_dir, dataset_root=shared_datasets)
        resumed = pipeline.run(RunSpec(resolve(cfg), again, ServerTarget(endpoint=server.base_url)))
        assert len(server.requests) == 2
        stage = resumed.evalscope.benchmarks[0]
        assert stage.rerun_review is True
        assert "configs/task_config.yaml" in (stage.cache_identity_reason or "")
        assert [o.failure_class for o in resumed.outcomes] == ["ok"] * 2

        # nothing of EvalScope's at all (stopped before its task began): the task runs afresh
        shutil.rmtree(work_dir)
        work_dir.mkdir()
        resumed = pipeline.run(RunSpec(resolve(cfg), again, ServerTarget(endpoint=server.base_url)))
        assert len(server.requests) == 4
        stage = resumed.evalscope.benchmarks[0]
        assert (stage.rerun_review, stage.cache_identity_reason) == (False, None)
        assert [o.failure_class for o in resumed.outcomes] == ["ok"] * 2
