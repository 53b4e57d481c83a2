"""One contract, checked for every registered benchmark (lm-evaluation-harness runs one battery over every
registered task in ``tests/test_tasks.py``; this is the same idea for ``evalpipe.benchmarks``).

Every test below that takes ``name`` runs once per registered benchmark, on its bundled miniature
(``Benchmark.bundled_dir()``), so a benchmark is covered the moment it is registered — built in, or
registered from outside evalpipe through ``EVALPIPE_BENCHMARK_MODULES``.  The last section proves that
with a dummy module written into a temporary directory: the battery runs on it in a pytest subprocess
without any other test being edited, and a broken variant of it fails.

The battery: facts and loaders agree; ids unique and stable (a second load, rows in another order); record
hashes independent of file format and line endings; declared strata = strata produced; the answer key
covers every record; and through the whole pipeline (the self-test's controls, ``registry_controls``:
one EvalScope worker per control run) the materialised dataset loads back through EvalScope at
the mapped indices, the positive control scores every item and the negative control at most 10 %.
"""

from __future__ import annotations

import csv
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.registry_controls import RegistryControls

from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.schema.evalscope import IndexMap, PromptHashRecord
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.benchmarks import PLUGINS_ENV, REGISTRY, Benchmark, names
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.engines.answer_key import AnswerKey
from evalpipe.errors import ConfigError
from evalpipe.samplers.strata import check_sampling_rule
from evalpipe.selftest.controls import FAULT_EXPECTATIONS, NEGATIVE_MAX_SCORE, fault_targets
from evalpipe.sources.base import BenchmarkData, read_rows

REPO = Path(__file__).resolve().parents[2]
DUMMY = Path(__file__).resolve().parents[1] / "fixtures" / "contract_dummy"
DATA_SUFFIXES = (".jsonl", ".csv", ".parquet")


@pytest.fixture(params=names(), scope="module")
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def spec(name: str) -> Benchmark:
    return REGISTRY[name]


@pytest.fixture(scope="module")
def bundled(spec: Benchmark) -> BenchmarkData:
    return spec.load_local(spec.bundled_dir(), None)


def _ids_and_hashes(data: BenchmarkData) -> dict[str, list[tuple[str, str]]]:
    out = {"eval": [(r.source_id, r.record_sha256) for r in data.eval.records]}
    if data.fewshot is not None:
        out["fewshot"] = [(r.source_id, r.record_sha256) for r in data.fewshot.records]
    return out


# ---------------------------------------------------------------- rewriting the bundled files


def _rows(path: Path) -> list[dict[str, Any]]:
    rows, info = read_rows(path)
    out = [raw for _, raw in rows]
    info.result()
    return out


def _write(path: Path, rows: list[dict[str, Any]], *, newline: str = "\n") -> None:
    if path.suffix == ".jsonl":
        path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + newline for r in rows).encode("utf-8"))
    elif path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator=newline)
            writer.writeheader()
            writer.writerows(rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)


def _rewrite(
    src: Path,
    dst: Path,
    change: Callable[[Path, list[dict[str, Any]]], tuple[str, list[dict[str, Any]], str]],
) -> Path:
    """A copy of ``src`` with every data file's rows passed through ``change`` → (suffix, rows, newline)."""
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.suffix in DATA_SUFFIXES:
            target.parent.mkdir(parents=True, exist_ok=True)
            suffix, rows, newline = change(path, _rows(path))
            _write(target.with_suffix(suffix), rows, newline=newline)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return dst


def _crlf(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\n", "\r\n")
    if isinstance(value, dict):
        return {k: _crlf(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_crlf(v) for v in value]
    return value


OTHER_FORMAT = {".jsonl": ".parquet", ".csv": ".jsonl", ".parquet": ".jsonl"}


def _data_files(root: Path) -> dict[str, str]:
    """``{path without suffix: suffix}`` of the data files under ``root``."""
    return {
        str(p.relative_to(root).with_suffix("")): p.suffix
        for p in root.rglob("*")
        if p.suffix in DATA_SUFFIXES
    }


# ---------------------------------------------------------------- facts, ids, hashes, strata, answer key


def test_facts_and_loaders_agree(name: str, spec: Benchmark, bundled: BenchmarkData) -> None:
    meta = spec.meta
    assert meta.name == name and meta.display_name and meta.primary_metric and meta.mirror_dir
    assert bundled.benchmark == name and bundled.eval.name == meta.eval_split
    assert (bundled.fewshot.name if bundled.fewshot else None) == meta.fewshot_split
    assert (meta.fewshot_split is None) == (meta.max_few_shot == 0)  # no few-shot split, no few-shot
    # a record filter is declared exactly when the benchmark implements one
    assert meta.record_filter == (type(spec).filter_records is not Benchmark.filter_records)
    rec = bundled.eval.records[0]
    row = spec.materialize_row(rec, False, f"{rec.file}:{rec.row + 1}")
    assert isinstance(row.get(meta.question_field), str) and spec.prompt_text(row)


def test_ids_unique_and_stable(spec: Benchmark, bundled: BenchmarkData, tmp_path: Path) -> None:
    bundled.check_unique_ids()
    assert bundled.eval.records
    again = spec.load_local(spec.bundled_dir(), None)
    assert _ids_and_hashes(again) == _ids_and_hashes(bundled)
    reordered_dir = _rewrite(
        spec.bundled_dir(),
        tmp_path / "reordered",
        lambda p, rows: (p.suffix, rows[::-1], "\n"),  # every file in reverse order
    )
    reordered = spec.load_local(reordered_dir, None)
    for split, pairs in _ids_and_hashes(bundled).items():
        assert dict(_ids_and_hashes(reordered)[split]) == dict(pairs), split  # same id → same record
    assert reordered.eval.fingerprint == bundled.eval.fingerprint


@pytest.mark.parametrize("variant", ["other_format", "crlf"])
def test_record_hashes_independent_of_format_and_line_endings(
    variant: str, spec: Benchmark, bundled: BenchmarkData, tmp_path: Path
) -> None:
    """A parquet copy of JSONL rows (JSONL of CSV rows, …) and a copy with CRLF line endings, in the files
    and inside every text value, hold the same records: same ids, same record hashes, same fingerprint."""
    src = spec.bundled_dir()
    if variant == "other_format":
        copy = _rewrite(src, tmp_path / variant, lambda p, rows: (OTHER_FORMAT[p.suffix], rows, "\n"))
        assert _data_files(copy) == {k: OTHER_FORMAT[v] for k, v in _data_files(src).items()}
    else:
        copy = _rewrite(src, tmp_path / variant, lambda p, rows: (p.suffix, [_crlf(r) for r in rows], "\r\n"))
        assert all(b"\r\n" in (copy / f"{k}{v}").read_bytes() for k, v in _data_files(copy).items())
    data = spec.load_local(copy, None)
    assert _ids_and_hashes(data) == _ids_and_hashes(bundled)
    assert data.eval.fingerprint == bundled.eval.fingerprint


def test_declared_strata_are_produced(spec: Benchmark, bundled: BenchmarkData) -> None:
    declared = set(spec.meta.stratifications)
    for rec in bundled.eval.records:
        assert set(rec.stratum_fields) == declared, rec.source_id
    assert spec.strata_choices() == {"none", *declared}
    for stratify_by in declared:
        strata = {str(r.stratum_fields[stratify_by]) for r in bundled.eval.records}
        buckets = {spec.length_bucket(stratify_by, s) for s in strata}
        assert buckets == {None} or buckets <= set(spec.meta.length_order), (stratify_by, buckets)
    demo_plan = REPO / "samplers" / "demo" / f"{spec.meta.name}.yaml"
    if demo_plan.is_file():
        from evalpipe.config.loader import load_sampling_rule

        check_sampling_rule(load_sampling_rule(demo_plan), spec.meta.name)


def test_answer_key_covers_every_record(name: str, spec: Benchmark, bundled: BenchmarkData) -> None:
    key = AnswerKey.load(bundled_data_dir())
    items = [it for it in key.items if it.benchmark == name]
    assert [it.source_id for it in items] == [r.source_id for r in bundled.eval.records]
    for it in items:
        assert key.match(it.needle) is it, it.label  # its question text identifies it
        partner = key.negative_partner(it)
        assert partner.benchmark == name and partner.gold != it.gold
        cut = spec.truncated_text(it)
        assert cut.strip() and cut != it.answer


# ---------------------------------------------------------------- through the pipeline


def test_materialised_dataset_loads_back_through_evalscope(
    name: str, registry_controls: RegistryControls
) -> None:
    """Every entry sits at its mapped (subset, index) when EvalScope loads the materialised dataset (the run's
    render check passed), its prompt was recorded once, and the request EvalScope sent carried its question."""
    rundir = registry_controls.rundir("positive")
    manifest = read_model(rundir.manifest, Manifest)
    index_map = read_model(rundir.index_map, IndexMap)
    entries = index_map.for_benchmark(name)
    assert sorted(e.source_id for e in entries) == sorted(e.source_id for e in manifest.entries_for(name))
    assert len({(e.subset, e.index) for e in entries}) == len(entries)
    hashed = {r.source_id for r in read_jsonl(rundir.prompt_hashes, PromptHashRecord) if r.benchmark == name}
    assert hashed == {e.source_id for e in entries}
    rows = registry_controls.outcomes("positive", name)
    assert {r.source_id for r in rows} == {e.source_id for e in entries}
    for r in rows:
        assert r.prompt_contains_question and r.review_matches_prediction, r.source_id
        assert r.prompt_sha256 == r.expected_prompt_sha256, r.source_id


def test_positive_control_scores_every_item(name: str, registry_controls: RegistryControls) -> None:
    """100 % except the planted faults that change a score, each with its expected class."""
    planted = {fault_targets()[f]: c for f, (_, c) in FAULT_EXPECTATIONS.items() if c is not None}
    rows = registry_controls.outcomes("positive", name)
    assert rows
    for r in rows:
        want = planted.get((r.benchmark, r.source_id), "ok")
        assert r.failure_class == want, (r.source_id, r.failure_label)
        if want == "ok":
            assert r.score == 1.0, r.source_id
    summary = registry_controls.positive.summary
    assert summary is not None
    (result,) = [b for b in summary.benchmarks if b.benchmark == name]
    assert result.scored == len(rows)
    assert result.correct == len(rows) - sum(1 for r in rows if (r.benchmark, r.source_id) in planted)
    assert result.display_name == REGISTRY[name].meta.display_name
    assert not [p for p in registry_controls.positive.problems if p.startswith(f"{name} ")]


def test_negative_control_scores_at_most_ten_percent(name: str, registry_controls: RegistryControls) -> None:
    summary = registry_controls.negative.summary
    assert summary is not None
    (result,) = [b for b in summary.benchmarks if b.benchmark == name]
    assert result.scored > 0 and result.score is not None and result.score <= NEGATIVE_MAX_SCORE
    assert all(r.score == 0.0 for r in registry_controls.outcomes("negative", name))


# ---------------------------------------------------------------- a benchmark registered from outside


def _contract_tests() -> set[str]:
    """The tests of this module that run once per registered benchmark."""
    per_benchmark = {"name", "spec", "bundled"}
    return {
        n
        for n, f in globals().items()
        if n.startswith("test_") and callable(f) and per_benchmark & set(inspect.signature(f).parameters)
    }


def _plugin(tmp_path: Path, *, broken: bool = False) -> dict[str, str]:
    """The dummy module copied into ``tmp_path`` (optionally broken), and the environment registering it."""
    folder = tmp_path / "plugin"
    shutil.copytree(DUMMY, folder)
    if broken:
        module = folder / "contract_dummy.py"
        text = module.read_text(encoding="utf-8")
        # two classic mistakes: a positional id, and a declared stratification no record produces
        text = text.replace("source_id=gsm8k_id(question),", 'source_id=f"item-{row}",')
        text = text.replace('stratifications=("topic",),', 'stratifications=("topic", "difficulty"),')
        module.write_text(text, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, PLUGINS_ENV: "contract_dummy", "PYTHONPATH": path}


def _pytest(tmp_path: Path, env: dict[str, str], selection: str) -> tuple[int, dict[str, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "-k", selection,
         "--basetemp", str(tmp_path / "pytest"), str(Path(__file__))],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    outcomes = dict(
        (m.group(2), m.group(1))
        for m in re.finditer(r"^(PASSED|FAILED|ERROR) \S+::(\S+)", proc.stdout, flags=re.MULTILINE)
    )
    return proc.returncode, outcomes


def test_a_registered_module_is_covered_without_editing_a_test(tmp_path: Path) -> None:
    code, outcomes = _pytest(tmp_path, _plugin(tmp_path), "contract_dummy")
    ran = {test.partition("[")[0] for test in outcomes if "contract_dummy" in test}
    assert code == 0 and set(outcomes.values()) == {"PASSED"}, outcomes
    assert ran == _contract_tests()


def test_a_broken_module_fails_the_contract(tmp_path: Path) -> None:
    code, outcomes = _pytest(
        tmp_path, _plugin(tmp_path, broken=True), "contract_dummy and not control and not loads_back"
    )
    failed = {test.partition("[")[0] for test, how in outcomes.items() if how != "PASSED"}
    assert code == 1 and failed == {"test_ids_unique_and_stable", "test_declared_strata_are_produced"}, (
        outcomes
    )


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        ("evalpipe.benchmarks.gsm8k", "benchmark 'gsm8k' is registered twice"),
        ("no_such_benchmark_module", "benchmark module 'no_such_benchmark_module' not found"),
        ("misnamed_benchmark", "module misnamed_benchmark declares benchmark 'gsm8k'"),
    ],
)
def test_registration_refuses_duplicates_missing_and_misnamed_modules(
    modules: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry as it is built at import, with ``EVALPIPE_BENCHMARK_MODULES`` set (the subprocess test
    above shows the variable read at import; here the builder's refusals)."""
    from evalpipe.benchmarks import _MODULES, _build, described

    (tmp_path / "misnamed_benchmark.py").write_text("from evalpipe.benchmarks.gsm8k import BENCHMARK\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGINS_ENV, modules)
    with pytest.raises(ConfigError, match=re.escape(message)):
        _build()
    monkeypatch.delenv(PLUGINS_ENV)
    builtins = (*_MODULES, *(b.meta.name for b in described.builtin()))
    assert tuple(_build()) == builtins  # without the variable: the built-ins, in their order
