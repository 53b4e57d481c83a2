"""Materialization for EvalScope, and the EvalScope task built from a run config (no EvalScope run)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from evalscope_helpers import picked_run, run_config

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.benchmarks import REGISTRY
from evalpipe.errors import ConfigError, DataError
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.task import (
    build_task,
    check_generation,
    model_id,
    task_differences,
)
from evalpipe.hashing import sha256_hex
from evalpipe.resolve import resolve

CODE_IDS = ["abc387_b", "3708"]


def _gsm_ids(datasets: Path, n: int) -> list[str]:
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    rows = [json.loads(x) for x in (datasets / "gsm8k" / "test.jsonl").read_text().splitlines()[:n]]
    return [gsm8k_id(r["question"]) for r in rows]


# ---------------------------------------------------------------- materialize


def test_materialize_layout_order_and_bytes(tmp_path: Path, shared_datasets: Path) -> None:
    gsm = _gsm_ids(shared_datasets, 3)
    cfg = run_config({"gsm8k": 3, "ceval": 2, "ifeval": 2, "live_code_bench": 2})
    rundir, manifest, datasets = picked_run(
        tmp_path / "run",
        cfg,
        {
            "gsm8k": gsm,
            "ceval": ["accountant/0", "art_studies/3"],
            "ifeval": ["1162", "1001"],
            "live_code_bench": CODE_IDS,
        },
        datasets_root=shared_datasets,
    )
    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    assert read_model(rundir.index_map, IndexMap) == index_map

    # one index-map entry per manifest entry; index = position within (benchmark, subset)
    assert sorted((e.benchmark, e.source_id) for e in index_map.entries) == sorted(
        (e.benchmark, e.source_id) for e in manifest.entries
    )
    for ds in index_map.datasets:
        f = REGISTRY[ds.benchmark].meta
        for subset in ds.subsets:
            entries = [e for e in index_map.entries if e.benchmark == ds.benchmark and e.subset == subset]
            manifest_order = [
                e.source_id for e in manifest.entries if e.benchmark == ds.benchmark and e.subset == subset
            ]
            assert [e.source_id for e in entries] == manifest_order
            assert [e.index for e in entries] == list(range(len(entries)))
            fmt = "jsonl" if ds.benchmark == "ifeval" else "parquet"
            path = rundir.root / ds.path / subset / f"{f.eval_split}.{fmt}"
            if fmt == "jsonl":
                rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            else:
                rows = pq.read_table(path).to_pylist()
            records = {r.source_id: r.raw for r in datasets[ds.benchmark].eval.records}
            for e, row in zip(entries, rows, strict=True):
                raw = records[e.source_id]
                assert row[f.question_field] == raw[f.question_field] == e.question  # text untouched
            assert ds.files[f"{subset}/{f.eval_split}.{fmt}"] == sha256_hex(path.read_bytes())

    # few-shot splits: the full GSM8K train split, each C-Eval subject's dev split
    gsm_train = pq.read_table(rundir.datasets_dir / "gsm8k" / "main" / "train.parquet")
    assert gsm_train.num_rows == len(datasets["gsm8k"].fewshot.records) == 7473
    assert index_map.dataset("ceval").fewshot_rows == {"accountant": 5, "art_studies": 5}
    dev = pq.read_table(rundir.datasets_dir / "ceval" / "accountant" / "dev.parquet")
    val = pq.read_table(rundir.datasets_dir / "ceval" / "accountant" / "val.parquet")
    assert dev.schema == val.schema  # one schema per config: HF casts every split to the first one's
    assert val.column("explanation").to_pylist() == [None]
    assert val.column("id").to_pylist() == ["0"]  # CSV text stays text

    # LiveCodeBench: string columns, CRLF kept, missing private tests → "[]"
    live_code_bench = pq.read_table(rundir.datasets_dir / "live_code_bench" / "release_v6" / "test.parquet")
    assert {str(t) for t in live_code_bench.schema.types} == {"string"}
    rows = {r["question_id"]: r for r in live_code_bench.to_pylist()}
    assert "\r\n" in rows["abc387_b"]["question_content"]
    assert rows["abc387_b"]["contest_date"] == "2025-01-04T00:00:00"
    assert rows["3708"]["private_test_cases"] == "[]"

    # IFEval instruction ids recorded for per-sample NLTK detection; kwargs survive as structs
    ife = {e.source_id: e for e in index_map.for_benchmark("ifeval")}
    assert ife["1162"].instruction_ids == ["punctuation:no_comma"]
    ifeval_rows = (rundir.datasets_dir / "ifeval" / "default" / "train.jsonl").read_text().splitlines()
    source = {r.source_id: r.raw for r in datasets["ifeval"].eval.records}
    assert [json.loads(x) for x in ifeval_rows] == [
        source[e.source_id] for e in index_map.for_benchmark("ifeval")
    ]
    assert json.loads(ifeval_rows[0])["kwargs"] == [
        {}
    ]  # empty kwargs dicts survive (parquet cannot hold them)

    readme = (rundir.datasets_dir / "gsm8k" / "README.md").read_text()
    assert readme.startswith("---\nconfigs:\n- config_name: main\n")
    assert "path: main/test.parquet" in readme and "path: main/train.parquet" in readme


def test_materialize_refuses_a_changed_record_and_fewshot_without_split(
    tmp_path: Path, shared_datasets: Path
) -> None:
    cfg = run_config({"gsm8k": 1})
    rundir, manifest, datasets = picked_run(
        tmp_path / "run", cfg, {"gsm8k": _gsm_ids(shared_datasets, 1)}, datasets_root=shared_datasets
    )
    tampered = manifest.model_copy(
        update={"entries": [manifest.entries[0].model_copy(update={"record_sha256": "0" * 64})]}
    )
    with pytest.raises(DataError, match="changed since the manifest was written"):
        materialize(rundir, tampered, datasets, resolve(cfg))
    bad = run_config({"ifeval": 1})
    bad.benchmarks[0].few_shot = 2
    rundir2, manifest2, datasets2 = picked_run(
        tmp_path / "run2", run_config({"ifeval": 1}), {"ifeval": ["1162"]}, datasets_root=shared_datasets
    )
    with pytest.raises(ConfigError, match="no few-shot split"):
        materialize(rundir2, manifest2, datasets2, resolve(bad))


# ---------------------------------------------------------------- task


def test_build_task_from_run_config(tmp_path: Path) -> None:
    cfg = run_config(
        {"gsm8k": 1},
        generation={
            "temperature": 0.6,
            "top_p": 0.95,
            "seed": 7,
            "concurrency": 3,
            "max_tokens": {"gsm8k": 999},
        },
    )
    cfg.model.served_name = "org/GLM-5.3 FP8"
    task = build_task(
        cfg,
        "gsm8k",
        api_url="http://h:1/v1",
        dataset_dir=tmp_path / "d",
        subsets=["main"],
        work_dir=tmp_path / "w",
    )
    assert (
        task["model"] == "org/GLM-5.3 FP8"
        and task["model_id"] == model_id("org/GLM-5.3 FP8") == "org_GLM-5.3_FP8"
    )
    assert task["eval_type"] == "openai_api" and task["api_url"] == "http://h:1/v1"
    assert task["dataset_args"] == {
        "gsm8k": {"dataset_id": str((tmp_path / "d").resolve()), "subset_list": ["main"], "few_shot_num": 4}
    }
    g = task["generation_config"]
    assert (g["temperature"], g["top_p"], g["seed"], g["max_tokens"]) == (0.6, 0.95, 7, 999)
    # generation.retries counts re-sends (0 here); EvalScope counts attempts
    assert (g["retries"], g["retry_interval"]) == (1, 10)
    assert task["eval_batch_size"] == 3 and task["ignore_errors"] is True and task["no_timestamp"] is True
    assert task["model_args"] == {"max_retries": 0}
    assert "api_key" not in json.dumps(task)
    moved = build_task(
        cfg,
        "gsm8k",
        api_url="http://other:2/v1",
        dataset_dir=tmp_path / "x",
        subsets=["main"],
        work_dir=tmp_path / "y",
    )
    assert task_differences(task, moved) == []  # transport and run-dir paths may change on resume
    cfg.generation.max_tokens["gsm8k"] = 1000
    changed = build_task(
        cfg,
        "gsm8k",
        api_url="http://h:1/v1",
        dataset_dir=tmp_path / "d",
        subsets=["main"],
        work_dir=tmp_path / "w",
    )
    assert task_differences(task, changed) == ["generation_config"]


def test_review_timeout_reaches_evalscopes_benchmark_meta_and_a_change_is_a_task_difference(
    tmp_path: Path,
) -> None:
    """``review_timeout_s`` is EvalScope's ``review_timeout`` (a ``BenchmarkMeta`` field that ``dataset_args``
    sets); a resume with another limit is a different task."""
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig

    cfg = run_config({"live_code_bench": 1})
    kw = {"api_url": "http://h:1/v1", "dataset_dir": tmp_path / "d", "subsets": ["v6"], "work_dir": tmp_path}
    default = build_task(cfg, "live_code_bench", **kw)
    assert "review_timeout" not in default["dataset_args"]["live_code_bench"]
    cfg.benchmark("live_code_bench").review_timeout_s = 2.5
    task = build_task(cfg, "live_code_bench", **kw)
    assert task["dataset_args"]["live_code_bench"]["review_timeout"] == 2.5
    assert task_differences(default, task) == ["dataset_args"]
    adapter = get_benchmark("live_code_bench", TaskConfig(**task))
    assert adapter.review_timeout == 2.5
    assert get_benchmark("live_code_bench", TaskConfig(**default)).review_timeout == 6


def test_thinking_mode_and_settings_the_bridge_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = run_config({"gsm8k": 1})
    cfg.model.thinking = "disabled"
    cfg.model.reasoning_parser = "glm45"  # the toggle's name comes from the reasoning parser
    task = build_task(
        cfg, "gsm8k", api_url="http://h/v1", dataset_dir=Path("d"), subsets=["main"], work_dir=Path("w")
    )
    assert task["generation_config"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
    cfg.generation.n = 2
    with pytest.raises(ConfigError, match=r"generation\.n"):
        check_generation(resolve(cfg))
    live_code_bench = run_config({"live_code_bench": 1})
    live_code_bench.benchmarks[0].extra_params = {"start_date": "2025-01-01"}
    with pytest.raises(ConfigError, match="start_date"):
        check_generation(resolve(live_code_bench))
    keyed = run_config({"gsm8k": 1})
    keyed.server.api_key_env = "EVALPIPE_TEST_KEY_UNSET"
    monkeypatch.delenv("EVALPIPE_TEST_KEY_UNSET", raising=False)
    with pytest.raises(ConfigError, match="EVALPIPE_TEST_KEY_UNSET"):
        check_generation(resolve(keyed))


def test_adapter_facts_match_installed_evalscope(shared_datasets: Path) -> None:
    """Drift test: the splits/subsets evalpipe writes are the ones EvalScope's adapters read."""
    code = (
        "import json\nfrom evalscope.api.registry import get_benchmark\n"
        "from evalpipe.benchmarks import benchmark\nout = {}\n"
        f"for n in {sorted(REGISTRY)!r}:\n"
        "    benchmark(n).register_evalscope_adapter()  # an adapter evalpipe registers (kv_probe) first\n"
        "    m = get_benchmark(n).benchmark_meta\n"
        "    out[n] = [m.eval_split, m.train_split, m.subset_list, m.few_shot_random]\n"
        "print('FACTS' + json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("FACTS"))
    metas = json.loads(line[len("FACTS") :])
    for name, spec in REGISTRY.items():
        f = spec.meta
        eval_split, train_split, subsets, few_shot_random = metas[name]
        assert f.eval_split == eval_split
        assert f.fewshot_split == train_split
        assert few_shot_random is False  # the first few_shot rows of the few-shot split are the shots
        if f.default_subset is not None and not f.regrouped:
            assert f.default_subset in subsets
    from evalpipe.samplers.loading import load_local

    for name, spec in REGISTRY.items():  # the loaders name their splits as the adapter does
        f = spec.meta
        if (shared_datasets / f.mirror_dir).is_dir() and name != "live_code_bench":
            data = load_local(name, shared_datasets / f.mirror_dir)
            assert data.eval.name == f.eval_split
            assert (data.fewshot.name if data.fewshot else None) == f.fewshot_split
    ceval_subjects = {
        p.stem.removesuffix("_val") for p in (shared_datasets / "ceval" / "val").glob("*_val.csv")
    }
    assert ceval_subjects <= set(metas["ceval"][2])
