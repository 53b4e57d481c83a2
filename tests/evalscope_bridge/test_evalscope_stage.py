"""The EvalScope stage refuses to run when the index ↔ manifest mapping cannot be trusted.

Each test starts a real EvalScope worker (a few seconds) but stops it before any request is sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from evalscope_helpers import picked_run, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.errors import DataError
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.protocol import Finished, RenderedSample, Sample, Start
from evalpipe.evalscope_bridge.runner import EvalscopeFailed
from evalpipe.evalscope_bridge.stage import RenderingChanged, run_evalscope
from evalpipe.resolve import resolve

IDS = ["1162", "1051", "1268"]


@pytest.fixture
def ifeval_run(tmp_path: Path, shared_datasets: Path):
    cfg = run_config({"ifeval": len(IDS)})
    rundir, manifest, datasets = picked_run(
        tmp_path / "run", cfg, {"ifeval": IDS}, datasets_root=shared_datasets
    )
    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    return cfg, rundir, index_map


def test_rows_that_do_not_load_back_in_order_stop_the_run_before_any_request(ifeval_run) -> None:
    cfg, rundir, index_map = ifeval_run
    path = rundir.datasets_dir / "ifeval" / "default" / "train.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([lines[1], lines[0], lines[2]]) + "\n", encoding="utf-8")  # rows swapped
    with ScriptedServer([], default=Rule("", "answer")) as srv:
        with pytest.raises(DataError, match="does not load back through EvalScope") as info:
            run_evalscope(resolve(cfg), rundir, index_map, api_url=srv.base_url)
        assert srv.requests == []
    e0, e1 = index_map.entries[0], index_map.entries[1]
    assert (
        f"default[0]: rendered prompt does not contain the question of {e0.source_id}" in info.value.details
    )
    assert (
        f"default[1]: rendered prompt does not contain the question of {e1.source_id}" in info.value.details
    )
    assert len(info.value.details) == 2


def test_worker_failure_is_one_error_pointing_at_the_log(ifeval_run) -> None:
    cfg, rundir, index_map = ifeval_run
    (rundir.datasets_dir / "ifeval" / "default" / "train.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(EvalscopeFailed, match="EvalScope failed on ifeval") as info:
        run_evalscope(resolve(cfg), rundir, index_map, api_url="http://127.0.0.1:9/v1")
    assert f"log: {rundir.evalscope_log}" in info.value.details
    assert "Traceback" in rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    assert not list(rundir.hf_cache_dir.iterdir())


def test_resume_refuses_prompts_rendered_differently_than_recorded(ifeval_run) -> None:
    cfg, rundir, index_map = ifeval_run
    recorded = [
        {
            "schema_version": 1,
            "benchmark": "ifeval",
            "subset": "default",
            "index": e.index,
            "source_id": e.source_id,
            "prompt_sha256": "0" * 64 if e.index == 1 else "f" * 64,
            "n_messages": 1,
            "recorded_at": "2026-01-01T00:00:00+00:00",
            "evalscope_version": "1.14.1",
        }
        for e in index_map.entries
    ]
    rundir.prompt_hashes.write_text("".join(json.dumps(r) + "\n" for r in recorded), encoding="utf-8")
    with pytest.raises(RenderingChanged, match="renders 3 prompt") as info:
        run_evalscope(resolve(cfg), rundir, index_map, api_url="http://127.0.0.1:9/v1", resume=True)
    assert any(
        f"default/{index_map.entries[1].source_id}: recorded 000000000000" in d for d in info.value.details
    )


def test_parquet_check_helper_is_exact(tmp_path: Path) -> None:
    """write_config: every split of a config shares one schema (HF casts to the first file's)."""
    from evalpipe.evalscope_bridge.materialize import write_config

    (tmp_path / "s").mkdir()
    files = write_config(
        tmp_path / "s",
        [("val", [{"id": "0", "q": "a\r\nb"}]), ("dev", [{"id": "1", "q": "c", "explanation": "why"}])],
        all_strings=False,
        what="t",
    )
    assert sorted(files) == ["s/dev.parquet", "s/val.parquet"]
    val, dev = pq.read_table(tmp_path / "s" / "val.parquet"), pq.read_table(tmp_path / "s" / "dev.parquet")
    assert val.schema == dev.schema
    assert val.to_pylist() == [{"id": "0", "q": "a\r\nb", "explanation": None}]


def test_check_rendering_names_missing_extra_and_foreign_samples() -> None:
    from evalpipe.artifacts.schema.evalscope import IndexMapEntry
    from evalpipe.evalscope_bridge.stage import check_rendering

    entries = [
        IndexMapEntry(benchmark="b", subset="s", index=i, source_id=f"id{i}", record_sha256="r", stratum="x",
                      question=f"question {i}")
        for i in range(3)
    ]  # fmt: skip

    def rendered(subset: str, index: int, user_text: str | None) -> RenderedSample:
        return RenderedSample(
            subset=subset, index=index, prompt_sha256="p", n_messages=1, user_text=user_text
        )

    good = [rendered("s", i, f"Q: question {i}\nA:") for i in range(3)]
    check_rendering("b", entries, good)
    bad = [good[0], rendered("s", 1, "Q: question 2"), rendered("t", 0, None)]
    with pytest.raises(DataError) as info:
        check_rendering("b", entries, bad)
    assert info.value.details == [
        "s[1]: rendered prompt does not contain the question of id1",
        "t[0]: EvalScope loaded a sample the index map does not have",
        "s[2]: id2 was not loaded by EvalScope",
    ]


def test_progress_sink_drives_a_rich_task() -> None:
    import io

    from rich.console import Console
    from rich.progress import Progress

    from evalpipe.evalscope_bridge.stage import _ProgressSink

    progress = Progress(console=Console(file=io.StringIO()))
    sink = _ProgressSink(progress, "gsm8k", 5)
    sink(Start(benchmark="gsm8k", total=5, cached=2))
    sink(Sample(benchmark="gsm8k", subset="main", index=0, ok=True))
    sink(Sample(benchmark="gsm8k", subset="main", index=1, ok=False, phase="predict"))
    (task,) = progress.tasks
    assert (task.total, task.completed, sink.failed) == (5, 4, 1)
    assert "1 failed" in task.description
    sink(Finished(benchmark="gsm8k", ran=True))
    assert progress.tasks[0].completed == 5
