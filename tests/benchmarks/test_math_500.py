"""MATH-500: records, the level regrouping EvalScope's adapter does, Math-Verify scoring of the answer key,
and one run end to end through the pipeline against the answer-key server (positive and negative)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.registry_controls import RegistryControls

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.benchmarks import benchmark
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.engines.answer_key import AnswerKey, truncated_response
from evalpipe.errors import DataError
from evalpipe.samplers.loading import load_local
from evalpipe.samplers.strata import check_sampling_rule

BUNDLED = bundled_data_dir() / "math_500"
REPO = Path(__file__).resolve().parents[2]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_records_ids_subsets_and_strata() -> None:
    data = load_local("math_500", BUNDLED)
    rows = _rows(BUNDLED / "test.jsonl")
    assert [r.source_id for r in data.eval.records] == [r["unique_id"] for r in rows]
    assert [r.subset for r in data.eval.records] == [f"Level {r['level']}" for r in rows]
    assert [r.stratum_fields for r in data.eval.records] == [{"level": r["level"]} for r in rows]
    assert data.eval.name == benchmark("math_500").meta.eval_split and data.fewshot is None


def test_real_file_levels_and_hash_stable_across_formats(shared_datasets: Path, tmp_path: Path) -> None:
    data = load_local("math_500", shared_datasets / "math_500")
    levels: dict[int, int] = {}
    for r in data.eval.records:
        levels[r.stratum_fields["level"]] = levels.get(r.stratum_fields["level"], 0) + 1
    assert levels == {1: 43, 2: 90, 3: 105, 4: 128, 5: 134}
    # a CSV copy (level as text) hashes the same
    import pandas as pd

    pd.DataFrame(_rows(shared_datasets / "math_500" / "test.jsonl")).to_csv(
        tmp_path / "test.csv", index=False
    )
    again = load_local("math_500", tmp_path)
    assert [r.record_sha256 for r in again.eval.records] == [r.record_sha256 for r in data.eval.records]
    assert again.eval.fingerprint == data.eval.fingerprint


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("level", 6, "level"),
        ("level", "Level 2", "level"),
        ("answer", " ", "answer"),
        ("unique_id", None, "unique_id"),
    ],
)
def test_bad_rows_name_file_line_and_field(tmp_path: Path, field: str, value: Any, message: str) -> None:
    rows = _rows(BUNDLED / "test.jsonl")
    rows[1][field] = value
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError, match=rf"test.jsonl:2: .*{message}"):
        load_local("math_500", tmp_path)


def test_plan_stratifies_by_level_only() -> None:
    from evalpipe.config.loader import load_sampling_rule
    from evalpipe.errors import ConfigError

    plan = load_sampling_rule(REPO / "samplers" / "math_500.yaml")
    check_sampling_rule(plan, "math_500")
    with pytest.raises(ConfigError, match="stratify_by 'subject' is not available"):
        check_sampling_rule(plan.model_copy(update={"stratify_by": "subject"}), "math_500")


# ---------------------------------------------------------------- scoring by EvalScope's own adapter


@pytest.fixture(scope="module")
def adapter() -> Any:
    import evalscope.benchmarks.math_500.math_500_adapter  # noqa: F401  (registers the benchmark)
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig

    return get_benchmark("math_500", TaskConfig(model="answer-key", datasets=["math_500"]))


def _score(adapter: Any, raw: dict[str, Any], content: str, stop: str = "stop") -> Any:
    from evalscope.api.evaluator import TaskState
    from evalscope.api.model import ModelOutput

    sample = adapter.record_to_sample(raw)
    out = ModelOutput.from_content(model="answer-key", content=content, stop_reason=stop)
    return adapter.calculate_metrics(
        TaskState(model="answer-key", sample=sample, output=out, completed=True)
    ).score


def test_answer_key_replies_score_with_math_verify(adapter: Any) -> None:
    key = AnswerKey.load(bundled_data_dir())
    items = [it for it in key.items if it.benchmark == "math_500"]
    assert len(items) == 10
    raws = {r.source_id: r.raw for r in load_local("math_500", BUNDLED).eval.records}
    for it in items:
        pos = _score(adapter, raws[it.source_id], key.reply(it, mode="positive", faults=[]).content)
        neg = _score(adapter, raws[it.source_id], key.reply(it, mode="negative", faults=[]).content)
        cut = _score(adapter, raws[it.source_id], truncated_response(it), "length")
        assert pos.main_value == 1.0, (it.label, pos.extracted_prediction)
        assert neg.main_value == 0.0, (it.label, neg.extracted_prediction)
        assert cut.main_value == 0.0 and not cut.extracted_prediction, it.label


def test_math_verify_accepts_the_answer_key_form_for_every_real_answer(
    adapter: Any, shared_datasets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled ten prove the path; the real 500 prove the form: every reference answer of the real
    file, in the answer key's reply form, is scored correct by the adapter's own Math-Verify scoring, so a
    run against the answer-key server on the real data scores 1.0 (and a neighbour's answer scores 0).

    EvalScope runs each Math-Verify call (answer extraction, comparison) in a child forked from the scoring
    process only to bound it by a deadline (``evalscope.metrics.math.isolation``: the child runs the same
    function on the same arguments and sends back its result); forking this test process twice per answer
    cost 1-2 minutes.  So the 500 are scored in this process, as EvalScope itself scores inside a daemonic
    process (isolation off), and what the fork adds is checked apart: each answer's calls take well under
    the deadline (CPU time, so a busy host does not count: none would be excluded as an execution failure
    in a run), and the isolated path — the one a run takes — gives the same score and extracted answer on
    a sample (the first two rows of each of the five levels) and scores the neighbour's answer 0."""
    import time

    from evalscope.metrics.math import parser

    from evalpipe.benchmarks.math_500 import response

    rows = _rows(shared_datasets / "math_500" / "test.jsonl")
    assert len(rows) == 500
    spread = [r for level in range(1, 6) for r in [x for x in rows if x["level"] == level][:2]]
    isolated = [_score(adapter, r, response(r["answer"])) for r in spread]
    assert _score(adapter, rows[0], response(rows[1]["answer"])).main_value == 0.0

    monkeypatch.setattr(parser, "isolation_available", lambda: False)
    scores, cpu_s = {}, {}
    for r in rows:
        t0 = time.process_time()
        scores[r["unique_id"]] = _score(adapter, r, response(r["answer"]))
        cpu_s[r["unique_id"]] = time.process_time() - t0
    rejected = [uid for uid, s in scores.items() if s.main_value != 1.0]
    assert rejected == []
    slowest = max(cpu_s, key=cpu_s.__getitem__)
    assert cpu_s[slowest] < parser.MATH_DEADLINE_S / 10, (slowest, cpu_s[slowest])
    in_process = [scores[r["unique_id"]] for r in spread]
    assert [(s.value, s.extracted_prediction) for s in isolated] == [
        (s.value, s.extracted_prediction) for s in in_process
    ]


# ---------------------------------------------------------------- end to end


@pytest.mark.parametrize("name", ["math_500"])  # the session's registry_controls must include MATH-500
@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_end_to_end_against_the_answer_key_server(
    mode: str, name: str, registry_controls: RegistryControls
) -> None:
    """The self-test's controls through the whole pipeline (answer-key server, EvalScope, audit), shared
    with the benchmark contract test: MATH-500 materialised as the one config the adapter regroups."""
    rundir = registry_controls.rundir(mode)
    index = read_model(rundir.index_map, IndexMap)
    ds = index.dataset(name)
    assert ds.subsets == [f"Level {n}" for n in range(1, 6)]
    assert set(ds.files) == {"default/test.parquet", "README.md"}  # one config the adapter regroups
    by_subset: dict[str, list[int]] = {}
    for e in index.for_benchmark(name):
        by_subset.setdefault(e.subset, []).append(e.index)
    assert by_subset == {f"Level {n}": [0, 1] for n in range(1, 6)}
    rows = registry_controls.outcomes(mode, name)
    assert len(rows) == 10
    want = (1.0, "ok") if mode == "positive" else (0.0, "wrong")
    assert {(r.score, r.failure_class) for r in rows} == {want}
    summary = (registry_controls.positive if mode == "positive" else registry_controls.negative).summary
    assert summary is not None
    (b,) = [b for b in summary.benchmarks if b.benchmark == name]
    assert (b.display_name, b.metric, b.correct, b.scored) == (
        "MATH-500",
        "acc",
        10 if mode == "positive" else 0,
        10,
    )
