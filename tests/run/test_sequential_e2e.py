"""generation.sequential and pools: end to end on the answer-key server (no GPU, no model).

The demo's GSM8K and C-Eval samples, ``faults`` under test against ``clean``: compare.json must carry the
sequential block of every block with a margin, the pool of both benchmarks with its own verdicts, and the
gate must read the pool by name — the wiring from the run config through ``run_variants`` to compare.json.
"""

from __future__ import annotations

import json

import pytest

from evalpipe.artifacts.schema.compare import SequentialResult
from evalpipe.config.loader import load_config
from evalpipe.config.models import AnswerKeyConfig, GateConfig, SequentialConfig, ServerVariant
from evalpipe.resolve import resolve
from evalpipe.run.variants import run_variants
from evalpipe.selftest.controls import demo_config_path
from evalpipe.words.sentences import sequential_sentence


def test_sequential_and_pool_blocks_from_the_run_config(tmp_path_factory: pytest.TempPathFactory) -> None:
    cfg = load_config(demo_config_path())
    server = cfg.server.model_copy(
        update={"answer_key": AnswerKeyConfig(mode="positive", faults=["truncate"])}
    )
    generation = cfg.generation.model_copy(update={"sequential": SequentialConfig(alpha=0.05)})
    run_cfg = cfg.model_copy(
        update={
            "server": server,
            "generation": generation,
            "variants": [
                cfg.variants[0],
                ServerVariant(name="clean", label="clean", overrides={"answer_key": {"faults": []}}),
            ],
            "gates": GateConfig(
                max_error_findings=100, non_inferiority_margin_pts={"gsm8k": 50.0, "both": 50.0}
            ),
            "benchmarks": [b for b in cfg.benchmarks if b.name in ("gsm8k", "ceval")],
            "pools": {"both": ["gsm8k", "ceval"]},
        }
    )
    run_cfg._config_path = cfg.config_path
    outcome = run_variants(resolve(run_cfg), out=tmp_path_factory.mktemp("seq") / "run")
    root, compares = outcome.rundir, [c.compare_json for c in outcome.comparisons]
    cmp = json.loads(compares[0].read_text())
    by = {b["benchmark"]: b for b in cmp["benchmarks"]}
    gsm, ceval = by["gsm8k"], by["ceval"]
    seq = gsm["sequential"]
    assert seq is not None and seq["units_available"] == gsm["n_pairs"] and seq["planned_n"] == gsm["n_pairs"]
    assert seq["verdict"] in ("non-inferior", "inferior", "inconclusive")
    assert ceval["sequential"] is None  # no margin for ceval alone
    (pool,) = cmp["pools"]
    assert pool["benchmark"] == "both" and pool["members"] == ["gsm8k", "ceval"]
    assert pool["n_pairs"] == gsm["n_pairs"] + ceval["n_pairs"]
    assert (
        pool["a_only"] + pool["b_only"] == gsm["a_only"] + gsm["b_only"] + ceval["a_only"] + ceval["b_only"]
    )
    assert pool["sequential"]["units_available"] == pool["n_pairs"]
    assert pool["non_inferiority"]["margin_pts"] == 50.0
    assert (
        f"; {sequential_sentence(SequentialResult.model_validate(seq))}; "
        in (root.root / "compare.md").read_text()
    )
    # the design and the path (compare.json's looks, compare.md's column and line, the report's line)
    assert seq["repeats"] == 1 and seq["looks"] and seq["looks"][-1]["unit"] == seq["units_used"]
    assert seq["output_tokens_fixed"] is None or seq["output_tokens_spent"] <= seq["output_tokens_fixed"]
    md = (root.root / "compare.md").read_text()
    assert f"| {seq['verdict']} at {seq['units_used']}/{seq['units_available']} |" in md
    assert "- both: sequential design: " in md and "(pool of gsm8k, ceval)" in md
    reports = [p.read_text() for p in root.root.rglob("report.md")]
    assert any("Sequential (gsm8k): sequential design: " in r for r in reports)
    # inside the run (variants in turn: the control first, whole): the pool gated both members in its own
    # order; 8 units cannot cross a 50-point margin, so every arm sent every unit and the pool was judged on
    # all of them
    from evalpipe.artifacts import RunDir, read_model
    from evalpipe.artifacts.schema.sequential import SequentialStops

    for variant in ("faults", "clean"):
        stops = read_model(RunDir(root.root / variant).sequential_stop, SequentialStops).benchmarks
        assert {(s.benchmark, s.block) for s in stops} == {("gsm8k", "both"), ("ceval", "both")}
        assert all(s.units_not_sent == 0 and s.stop_reason == "units exhausted" for s in stops)
    assert pool["sequential"]["stopped_in_run"] and pool["sequential"]["units_planned"] == pool["n_pairs"]
    assert (
        pool["sequential"]["units_sent"] == pool["n_pairs"] and pool["sequential"]["stop_unit_in_run"] is None
    )
