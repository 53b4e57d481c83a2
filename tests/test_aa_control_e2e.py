"""The A/A control and the paired gates end to end on the answer-key server (no GPU, no model).

Three variants on one manifest: ``faults`` (under test), ``clean`` (control) and ``clean_again``
(``repeat_of: clean``, relaunched).  compare.json must carry the A/B and A/A discordance, the noise
sentence, the MDE with the A/A noise model and the non-inferiority verdict of every configured block;
the gates judge the variant under test from it (inconclusive fails), never the control.
"""

from __future__ import annotations

import json

import pytest

from evalpipe import pipeline
from evalpipe.config import load_config
from evalpipe.config.models import AnswerKeyConfig, GateConfig, ServerVariant
from evalpipe.power import non_inferiority
from evalpipe.selftest.controls import demo_config_path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def aa_run(tmp_path_factory: pytest.TempPathFactory):
    cfg = load_config(demo_config_path())
    server = cfg.server.model_copy(
        update={"answer_key": AnswerKeyConfig(mode="positive", faults=["truncate"])}
    )
    variants = [
        cfg.variants[0],
        ServerVariant(name="clean", label="clean", overrides={"answer_key": {"faults": []}}),
        ServerVariant(name="clean_again", label="clean again", repeat_of="clean"),
    ]
    gates = GateConfig(
        max_error_findings=100,
        non_inferiority_margin_pts={"gsm8k": 99.0, "ceval": 0.5},
        max_mde_pts=1.0,
    )
    out = cfg.model_copy(
        update={
            "server": server,
            "variants": variants,
            "gates": gates,
            "benchmarks": [b for b in cfg.benchmarks if b.name in ("gsm8k", "ceval")],
        }
    )
    out._config_path = cfg.config_path
    return pipeline.run_variants(out, out=tmp_path_factory.mktemp("aa") / "run")


def test_compare_json_carries_aa_noise_mde_and_non_inferiority(aa_run) -> None:
    root, results, compares = aa_run
    assert set(results) == {"faults", "clean", "clean_again"}
    assert compares == [root.root / "compare.json"]  # one A/B comparison; the repeat is its noise
    cmp = json.loads(compares[0].read_text())
    assert cmp["schema_version"] == 2 and cmp["run_aa"].endswith("clean_again")
    by = {b["benchmark"]: b for b in cmp["benchmarks"]}
    gsm, ceval = by["gsm8k"], by["ceval"]
    # A/B: the truncated answer is the one flip; A/A: the answer-key server is deterministic
    assert gsm["ab_discordant"]["discordant"] == gsm["a_only"] + gsm["b_only"] == 1
    assert gsm["aa_discordant"]["discordant"] == 0 and gsm["aa_discordant"]["responses_differed"] == 0
    assert gsm["aa_discordant"]["responses_compared"] == gsm["n_pairs"]
    assert gsm["noise_vs_ab"]["ab_changed"] == 1 and gsm["noise_vs_ab"]["aa_changed"] == 0
    assert "not distinguishable from the server's own noise" in gsm["noise_vs_ab"]["sentence"]
    assert gsm["mde_basis"].startswith("A/A") and "exact McNemar" in gsm["mde_basis"]
    # k = 1: the paired test is the exact McNemar the table prints
    assert gsm["paired_test"] == "exact McNemar" and gsm["paired_p"] == pytest.approx(gsm["mcnemar_p"])
    # the Bonett-Price interval does not collapse when nothing flipped
    assert ceval["ab_discordant"]["discordant"] == 0 and ceval["paired_ci_low"] < 0 < ceval["paired_ci_high"]
    for block, margin in ((gsm, 99.0), (ceval, 0.5)):
        ni = block["non_inferiority"]
        expected = non_inferiority((block["paired_ci_low"], block["paired_ci_high"]), margin)
        assert (ni["margin_pts"], ni["verdict"]) == (margin, expected.verdict)
    assert gsm["non_inferiority"]["verdict"] == "non-inferior"
    assert ceval["non_inferiority"]["verdict"] == "inconclusive"
    assert cmp["overall"]["non_inferiority"] is None  # no margin named the overall block
    md = (root.root / "compare.md").read_text()
    assert "MDE (80 %)" in md and "A/A control" in md and ceval["non_inferiority"]["sentence"] in md


def test_paired_gates_judge_the_variant_under_test(aa_run) -> None:
    _, results, compares = aa_run
    cmp = json.loads(compares[0].read_text())
    test = results["faults"].summary
    assert test is not None
    gates = {(g.gate, g.benchmark): g for g in test.gates}
    assert gates[("non_inferiority_margin_pts", "gsm8k")].passed
    ceval = gates[("non_inferiority_margin_pts", "ceval")]
    assert not ceval.passed and ceval.message.startswith("ceval: inconclusive")
    mde = {b: g for (name, b), g in gates.items() if name == "max_mde_pts"}
    assert set(mde) == {"gsm8k", "ceval", "overall"} and not any(g.passed for g in mde.values())
    by = {b["benchmark"]: b for b in cmp["benchmarks"]}
    assert mde["gsm8k"].actual == by["gsm8k"]["mde_pts"]
    assert test.verdict == "gate_failed" and test.exit_code == 1
    # the report states what the comparison could see, in compare.json's own words
    assert f"Power (gsm8k): {by['gsm8k']['mde_sentence']}" in " ".join(test.limitations)
    for control in ("clean", "clean_again"):  # a control's own audit carries no paired gate
        s = results[control].summary
        assert s is not None
        assert not [g for g in s.gates if g.gate in ("non_inferiority_margin_pts", "max_mde_pts")]


def test_paired_gate_without_a_control_fails(tmp_path) -> None:
    from evalpipe.gates import paired_gates

    failed = paired_gates(GateConfig(non_inferiority_margin_pts=2.0), None, under_test=True)
    assert [(g.passed, g.message) for g in failed] == [
        (False, "non_inferiority_margin_pts: non-inferiority needs a control variant (one paired comparison, "
         "compare.json)")
    ]  # fmt: skip


def test_plan_from_the_run_uses_its_aa_noise(aa_run) -> None:
    from evalpipe.config import load_config
    from evalpipe.io import read_model
    from evalpipe.samplers.mde_plan import plan_benchmark
    from evalpipe.schema.compare import CompareResult
    from evalpipe.schema.manifest import Manifest
    from evalpipe.selftest.controls import demo_config_path

    root, _, compares = aa_run
    cmp = read_model(compares[0], CompareResult)
    manifest = read_model(root.manifest, Manifest)

    block = manifest.sampling_for("gsm8k")
    plan = plan_benchmark(load_config(demo_config_path()), block, manifest, 20.0, root.root, write=False)
    gsm = next(b for b in cmp.benchmarks if b.benchmark == "gsm8k")
    assert plan.noise.source == "aa" and plan.noise.basis.startswith("A/A")
    assert plan.base_accuracy == gsm.b.score and plan.n_now == gsm.n_pairs
    # the same noise model and accuracy as compare.json's MDE: the same number
    assert (
        plan.mde_now.mde_pts == pytest.approx(gsm.mde_pts)
        if gsm.mde_pts is not None
        else plan.mde_now.mde is None
    )
