"""configs/demo-sequential.yaml end to end: the sequential rule stops a paired run inside it, twice.

Three arms at once (parallel_variants) on answer-key servers answering the real GSM8K and MATH-500 test
sets' local copies: the candidate answers a fixed half of the GSM8K questions wrong (a planted regression),
MATH-500 like the reference.  GSM8K must stop "inferior" and MATH-500 "non-inferior", both at a crossing,
both before their planned units were all sent — the verdict of compare.json the one found inside the run,
no arm more than a batch beyond it, the A/A arm on the same units — and compare.md, the reports and the
stop records must say what was never sent and the output tokens spent against the fixed design's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.compare import SequentialResult
from evalpipe.artifacts.schema.sequential import SequentialStops
from evalpipe.config.loader import load_config
from evalpipe.resolve import resolve
from evalpipe.run.variants import run_variants
from evalpipe.words.sentences import sequential_sentence

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "demo-sequential.yaml"
VERDICTS = {"gsm8k": "inferior", "math_500": "non-inferior"}


def test_a_planted_regression_and_an_unchanged_benchmark_both_stop_inside_the_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    cfg = load_config(CONFIG)
    assert cfg.parallel_variants and cfg.generation.sequential is not None
    outcome = run_variants(resolve(cfg), out=tmp_path_factory.mktemp("seqdemo") / "run")
    root, results = outcome.rundir, outcome.results
    compares = [c.compare_json for c in outcome.comparisons]
    cmp = json.loads(compares[0].read_text())
    blocks = {b["benchmark"]: b for b in cmp["benchmarks"]}
    stops = {
        v.name: {
            s.benchmark: s
            for s in read_model(RunDir(root.root / v.name).sequential_stop, SequentialStops).benchmarks
        }
        for v in cfg.variants
    }
    md = (root.root / "compare.md").read_text()
    for bench, verdict in VERDICTS.items():
        seq = blocks[bench]["sequential"]
        planned = seq["units_planned"]
        assert seq["stopped_in_run"] and planned == 80
        assert (seq["verdict"], seq["stop_reason"]) == (verdict, "crossing")
        assert seq["stop_unit_in_run"] == seq["units_used"]  # outcomes.jsonl agrees with the worker's scores
        # what compare pairs: the units every arm sent, fewer than planned, the verdict at the same unit
        assert blocks[bench]["n_pairs"] == seq["units_sent"] == seq["units_available"] < planned
        assert seq["units_used"] <= seq["units_sent"]
        assert seq["units_unsent_share"] == pytest.approx((planned - seq["units_sent"]) / planned)
        assert 0 < seq["output_tokens_spent"] < seq["output_tokens_fixed"]
        for variant, by_bench in stops.items():
            stop = by_bench[bench]
            assert (stop.stop_unit, stop.verdict, stop.stop_reason) == (
                seq["units_used"],
                verdict,
                "crossing",
            )
            # advancing together: nothing sent beyond a batch past the verdict's unit, never all the plan
            assert seq["units_used"] <= stop.units_sent_prefix <= stop.units_sent
            assert stop.units_sent <= seq["units_used"] + stop.batch_units < planned, variant
        sentence = sequential_sentence(SequentialResult.model_validate(seq))
        assert sentence in md and sentence.endswith("never sent") and seq["stopped_in_run"]
        assert f"{seq['verdict']} at {seq['units_used']}/{seq['units_available']}" in md
    for variant in cfg.variants:
        report = (root.root / variant.name / "report.md").read_text()
        assert "the sequential rule stopped sending after" in report
        summary = results[variant.name].summary
        assert summary is not None and summary.finding_counts["error"] == 0  # unsent samples are no errors
    # the report of the variant under test: the design line with the tokens spent vs the fixed design's
    report = (root.root / cfg.variants[0].name / "report.md").read_text()
    assert "Sequential (gsm8k): " in report and "Sequential (math_500): " in report
    assert report.count("spent against about") == 2
    assert blocks["gsm8k"]["non_inferiority"]["verdict"] == "inferior"
