"""``evalpipe run --extend RUN``: a larger plan (same seed) reuses RUN's answered samples and sends only the
added ones; the outcomes equal a fresh run's at the larger plan.

A scripted server behind ``--endpoint`` answers the demo's bundled GSM8K and C-Eval items and counts every
request, so the test sees exactly which prompts reached it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.run import ExtensionRecord
from evalpipe.config.loader import load_config
from evalpipe.config.models import RunConfig, SamplingRule
from evalpipe.errors import ConfigError
from evalpipe.resolve import resolve
from evalpipe.run import pipeline
from evalpipe.run.options import ExtendedRun, FreshRun, ServerTarget
from evalpipe.run.sample import sample_stage
from evalpipe.run.spec import RunSpec
from evalpipe.selftest.controls import demo_config_path

NOWHERE = "http://127.0.0.1:9"  # never asked: the refusal comes first


def _cfg(gsm8k_total: int, ceval_per_subject: int) -> RunConfig:
    cfg = load_config(demo_config_path())
    plans = {
        "gsm8k": SamplingRule(total=gsm8k_total, allocation="uniform"),
        "ceval": SamplingRule(stratify_by="subject", per_stratum=ceval_per_subject),
    }
    benchmarks = [b.model_copy(update={"sampling": plans[b.name]}) for b in cfg.benchmarks if b.name in plans]
    gates = cfg.gates.model_copy(update={"max_error_findings": 100})
    model = cfg.model.model_copy(update={"reasoning_parser": "none", "thinking": "model_default"})
    update = {"benchmarks": benchmarks, "variants": [], "gates": gates, "model": model}
    out = cfg.model_copy(update=update)
    out._config_path = cfg.config_path
    return out


def _run(cfg: RunConfig, out: Path, srv: ScriptedServer, extend: Path | None = None) -> pipeline.RunResult:
    origin = FreshRun(out) if extend is None else ExtendedRun(extend, out)
    return pipeline.run(RunSpec(resolve(cfg), origin, ServerTarget(endpoint=srv.base_url)))


def _facts(rows: list[OutcomeRow]) -> set[tuple[str, str, str, float | None, str | None]]:
    return {(r.benchmark, r.source_id, r.failure_class, r.score, r.response_sha256) for r in rows}


def test_extend_sends_only_the_added_samples(tmp_path: Path) -> None:
    small, large = _cfg(3, 1), _cfg(6, 2)  # twice the samples per stratum
    answer = Rule("", "The answer is A. \\boxed{A}")
    with ScriptedServer([], default=answer, served_name=small.model.served_name) as srv:
        first = _run(small, tmp_path / "small", srv)
        asked_first = {r.last_user for r in srv.requests}
        n_first = len(srv.requests)
        grown = _run(large, tmp_path / "grown", srv, extend=tmp_path / "small")
        grown_requests = srv.requests[n_first:]
    old_ids = {e.source_id for e in first.manifest.entries}
    new_ids = {e.source_id for e in grown.manifest.entries}
    assert old_ids < new_ids and len(new_ids) == 2 * len(old_ids) == 12
    # exactly the added samples were sent, each once; none of the old prompts again
    assert len(grown_requests) == len(new_ids - old_ids) == 6
    assert not {r.last_user for r in grown_requests} & asked_first
    ext = read_model(grown.rundir.extension, ExtensionRecord)
    assert (ext.old_samples, ext.new_samples, ext.reused, ext.added) == (6, 12, 6, 6)
    assert ext.statement.startswith("extended from 6 to 12 samples; 6 reused")
    s = grown.summary
    assert s is not None
    codes = {f.code for f in s.findings}
    assert "extended_run" in codes
    # the reused responses link to the old run's requests: nothing unlogged, no duplicates, no repairs
    assert not codes & {
        "response_not_logged",
        "duplicate_requests",
        "cache_repair",
        "selection_rule_violated",
    }

    with ScriptedServer([], default=answer, served_name=small.model.served_name) as fresh_srv:
        fresh = _run(large, tmp_path / "fresh", fresh_srv)
        assert len(fresh_srv.requests) == 12
    assert fresh.manifest.entries == grown.manifest.entries
    assert _facts(read_jsonl(grown.rundir.outcomes, OutcomeRow)) == _facts(
        read_jsonl(fresh.rundir.outcomes, OutcomeRow)
    )


def test_extend_refuses_a_selection_that_does_not_contain_the_old_one(tmp_path: Path) -> None:
    """The refusal reads only the old run's manifest.json: the sample stage writes it (as the run's first
    stage does), and the refusal comes before any server is launched or asked."""
    small = _cfg(3, 1)
    sample_stage(small, dataset_root=None, out=tmp_path / "small", allow_drift=False)
    other_seed = _cfg(6, 2).model_copy(update={"sampling_seed": 7})
    other_seed._config_path = small.config_path
    with pytest.raises(ConfigError) as err:
        grown = ExtendedRun(tmp_path / "small", tmp_path / "grown")
        pipeline.run(RunSpec(resolve(other_seed), grown, ServerTarget(endpoint=NOWHERE)))
    assert "does not contain the old one" in str(err.value)
    assert any("seed" in d for d in err.value.details)
    assert not (tmp_path / "grown").exists()
