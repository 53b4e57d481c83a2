"""LongBench-v2 on the invented miniature: records and strata, the adapter's own scoring of the answer key,
the context-fit preflight (refuse, or drop with consent), and the by-length table (KV-cache view) in the
summary, the report and a paired compare.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.context_fit import ContextFit
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.compare import Arms, Bootstrap, PairedDesign, compare_runs
from evalpipe.config.loader import load_config
from evalpipe.config.models import AnswerKeyConfig, BenchmarkConfig, DatasetSource, GateConfig
from evalpipe.engines.answer_key import AnswerKey
from evalpipe.errors import DataError, PreflightError
from evalpipe.resolve import resolve
from evalpipe.run import pipeline
from evalpipe.run.context_fit import estimator, heuristic_tokens
from evalpipe.run.options import FreshRun
from evalpipe.run.spec import RunSpec
from evalpipe.samplers.loading import load_local
from evalpipe.selftest.controls import demo_config_path

BUNDLED = bundled_data_dir() / "longbench_v2"
REPO = Path(__file__).resolve().parents[2]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_miniature_is_what_the_generator_writes() -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from make_longbench_miniature import content

    assert (BUNDLED / "data.jsonl").read_text(encoding="utf-8") == content()


def test_records_strata_and_long_contexts() -> None:
    data = load_local("longbench_v2", BUNDLED)
    rows = _rows(BUNDLED / "data.jsonl")
    assert [r.source_id for r in data.eval.records] == [r["_id"] for r in rows]
    assert [r.subset for r in data.eval.records] == [r["length"] for r in rows]
    cells = {r.stratum_fields["length_difficulty"] for r in data.eval.records}
    assert cells == {f"{n}/{d}" for n in ("short", "medium", "long") for d in ("easy", "hard")}
    assert min(len(r["context"]) for r in rows) > 25_000 and max(len(r["context"]) for r in rows) > 100_000


@pytest.mark.parametrize(("field", "value"), [("length", "tiny"), ("answer", "E"), ("difficulty", "medium")])
def test_bad_rows_name_file_line_and_field(tmp_path: Path, field: str, value: str) -> None:
    rows = _rows(BUNDLED / "data.jsonl")[:2]
    rows[1][field] = value
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError, match=rf"data.jsonl:2: field '{field}'"):
        load_local("longbench_v2", tmp_path)


def test_answer_key_scored_by_the_adapter() -> None:
    import evalscope.benchmarks.longbench_v2.longbench_v2_adapter  # noqa: F401
    from evalscope.api.evaluator import TaskState
    from evalscope.api.model import ModelOutput
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig

    from evalpipe.hashing import message_text

    adapter = get_benchmark("longbench_v2", TaskConfig(model="k", datasets=["longbench_v2"]))
    key = AnswerKey.load(bundled_data_dir())
    raws = {r.source_id: r.raw for r in load_local("longbench_v2", BUNDLED).eval.records}
    for it in (i for i in key.items if i.benchmark == "longbench_v2"):
        sample = adapter.record_to_sample(dict(raws[it.source_id]))
        sample.input = adapter.process_sample_str_input(sample, raws[it.source_id]["length"])
        text = message_text([m for m in sample.input if m.role == "user"][-1].content)
        assert key.match(text) is it  # the prompt the adapter builds is recognised as this item
        for mode, want in (("positive", 1.0), ("negative", 0.0)):
            out = ModelOutput.from_content(model="k", content=key.reply(it, mode=mode, faults=[]).content)
            score = adapter.calculate_metrics(
                TaskState(model="k", sample=sample, output=out, completed=True)
            ).score
            assert score.main_value == want, (it.label, mode)


# ---------------------------------------------------------------- context fit


def test_heuristic_counts_cjk_per_character_and_other_text_high() -> None:
    assert heuristic_tokens("abcdef") == 2
    assert heuristic_tokens("上下文长度") == 5


def test_local_tokenizer_is_preferred(tmp_path: Path) -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = Tokenizer(WordLevel({"[UNK]": 0, "ledger": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    (tmp_path / "model").mkdir()
    tok.save(str(tmp_path / "model" / "tokenizer.json"))
    cfg = _cfg("positive", drop=False)
    cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"path": str(tmp_path / "model")})})
    count, kind, detail = estimator(cfg)
    assert kind == "tokenizer" and detail.endswith("tokenizer.json")
    assert count("the harbour ledger") == 3


def _cfg(mode: str, *, drop: bool, context_length: int = 24_000):
    cfg = load_config(demo_config_path())
    bench = BenchmarkConfig(
        name="longbench_v2",
        sampling=str(REPO / "samplers" / "demo" / "longbench_v2.yaml"),
        source=DatasetSource(local=str(BUNDLED)),
        drop_overlong=drop,
    )
    server = cfg.server.model_copy(update={"answer_key": AnswerKeyConfig(mode=mode, faults=[])})
    model = cfg.model.model_copy(update={"context_length": context_length})
    out = cfg.model_copy(
        update={
            "server": server,
            "model": model,
            "benchmarks": [bench],
            "variants": [],
            "gates": GateConfig(),
        }
    )
    out._config_path = cfg.config_path
    return out


def test_overlong_prompts_refuse_the_run_before_any_request(tmp_path: Path) -> None:
    with pytest.raises(
        PreflightError, match=r"2 sampled prompt\(s\) do not fit the context length 24,000"
    ) as exc:
        pipeline.run(RunSpec(resolve(_cfg("positive", drop=False)), FreshRun(out=tmp_path / "run")))
    assert all("long" in d for d in exc.value.details)
    assert not (tmp_path / "run" / "index_map.json").exists()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("lbv2")
    return {
        mode: pipeline.run(RunSpec(resolve(_cfg(mode, drop=True)), FreshRun(out=root / mode)))
        for mode in ("positive", "negative")
    }


def test_dropped_with_consent_and_reported(runs) -> None:
    result = runs["positive"]
    fit = read_model(result.rundir.context_fit, ContextFit)
    assert fit.estimator == "heuristic" and fit.context_length == 24_000
    assert {p.stratum for p in fit.overlong} == {"long/easy", "long/hard"}
    assert fit.benchmarks[0].dropped == 2
    rows = {r.stratum: r for r in result.outcomes}
    assert {(r.failure_class, r.score) for s, r in rows.items() if s.startswith("long")} == {
        ("context_overflow", None)
    }
    assert {(r.failure_class, r.score) for s, r in rows.items() if not s.startswith("long")} == {("ok", 1.0)}
    index_subsets = {e.subset for e in result.index_map.entries}
    assert index_subsets == {"short", "medium"}
    # a consented drop is a visible warning per entry, not an audit error
    assert result.summary.verdict == "pass"
    assert sorted(f.severity for f in result.summary.findings if "does not fit the context" in f.message) == [
        "warn",
        "warn",
    ]


def test_summary_and_report_carry_the_by_length_table(runs) -> None:
    (b,) = runs["positive"].summary.benchmarks
    assert [(x.length, x.n, x.correct) for x in b.by_length] == [
        ("short", 2, 2),
        ("medium", 2, 2),
        ("long", 2, 0),
    ]
    assert b.by_length[0].interval is not None
    assert any(f.failure_class == "context_overflow" and f.count == 2 for f in b.failures)
    report = (runs["positive"].rundir.root / "report.md").read_text(encoding="utf-8")
    assert "LongBench-v2 by context length" in report and "| long " in report


def test_compare_carries_difference_and_flips_per_length(runs, tmp_path: Path) -> None:
    result = compare_runs(
        PairedDesign(Arms(runs["positive"].rundir.root, runs["negative"].rundir.root), bootstrap=Bootstrap(resamples=200))
    )
    (b,) = result.benchmarks
    got = [(x.length, x.n_pairs, x.a_only, x.b_only, len(x.flips)) for x in b.by_length]
    # the two long items exceed the context in both arms: dropped before generation, they leave the comparison
    assert got == [("short", 2, 2, 0, 2), ("medium", 2, 2, 0, 2), ("long", 0, 0, 0, 0)]
    assert [(d.reason, d.units) for d in b.by_length[2].dropped] == [("context fit", 2)]
    assert b.n_pairs == 4 and sum(d.units for d in b.dropped) == 2
    assert b.by_length[0].difference == pytest.approx(1.0)
    from evalpipe.report.compare_markdown import compare_markdown

    md = compare_markdown(result)
    assert "By context length" in md
    # the positive arm is better at every length: the verdict names none, and compare.md carries the line
    assert "\n- longbench_v2: the candidate is behind at no length (short, medium, long)\n" in md
