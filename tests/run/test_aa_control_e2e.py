"""The A/A control and the paired gates end to end on the answer-key server (no GPU, no model).

Three variants on one manifest: ``faults`` (under test), ``clean`` (control) and ``clean_again``
(``repeat_of: clean``, relaunched) — the session's ``paired_demo`` run, shared with the replay and speed
tests; the A/A-only run (no A/B control) is this module's own.  compare.json must carry the A/B and A/A
discordance, A/B against that noise, the MDE with the A/A noise model and the non-inferiority verdict of every
configured block, as numbers (compare.md, the report and the gates say them in words); the gates judge the
variant under test from it (inconclusive fails), never the control.  Each variant is audited once, after
the comparison (``timings.json`` holds one audit per variant), and the arms' reports cite it.
"""

from __future__ import annotations

import json

import pytest
from helpers.paired_demo import PairedDemo, gsm8k_ceval

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.config.loader import load_config
from evalpipe.config.models import GateConfig, ServerVariant
from evalpipe.resolve import resolve
from evalpipe.run.variants import run_variants
from evalpipe.selftest.controls import demo_config_path
from evalpipe.stats.noninferiority import non_inferiority
from evalpipe.words.compare import block_mde_sentence, mde_basis_text, verdict_sentence
from evalpipe.words.sentences import aa_sentence


@pytest.fixture(scope="module")
def aa_run(paired_demo: PairedDemo) -> PairedDemo:
    """The session's paired demo run: faults (truncate + HTTP 500 once), clean, clean_again, with the gates
    ``non_inferiority_margin_pts`` {gsm8k: 99, ceval: 0.5}, ``max_mde_pts`` 1 (``helpers/paired_demo.py``)."""
    return paired_demo


def _run_gsm8k_ceval(cfg, variants, gates, tmp_path_factory: pytest.TempPathFactory, name: str):
    """The demo config's GSM8K and C-Eval samples through these variants and gates."""
    return run_variants(resolve(gsm8k_ceval(cfg, variants, gates)), out=tmp_path_factory.mktemp(name) / "run")


def test_compare_json_carries_aa_noise_mde_and_non_inferiority(aa_run) -> None:
    root, results = aa_run.rundir, aa_run.results
    compares = [c.compare_json for c in aa_run.comparisons]
    assert set(results) == {"faults", "clean", "clean_again"}
    assert compares == [root.root / "compare.json"]  # one A/B comparison; the repeat is its noise
    cmp = json.loads(compares[0].read_text())
    assert cmp["schema_version"] == 10 and cmp["run_aa"].endswith("clean_again")
    by = {b["benchmark"]: b for b in cmp["benchmarks"]}
    gsm, ceval = by["gsm8k"], by["ceval"]
    # A/B: the truncated answer is the one flip; A/A: the answer-key server is deterministic
    assert gsm["ab_discordant"]["discordant"] == gsm["a_only"] + gsm["b_only"] == 1
    assert gsm["aa_discordant"]["discordant"] == 0 and gsm["aa_discordant"]["responses_differed"] == 0
    assert gsm["aa_discordant"]["responses_compared"] == gsm["n_pairs"]
    assert gsm["noise_vs_ab"]["ab_changed"] == 1 and gsm["noise_vs_ab"]["aa_changed"] == 0
    assert gsm["noise_vs_ab"]["n_samples"] == gsm["n_pairs"] and gsm["noise_vs_ab"]["exceeds"] is False
    basis = gsm["mde_basis"]
    assert (basis["noise"], basis["method"]) == ("A/A", "exact McNemar")
    assert (basis["repeats"], basis["within"], basis["power"]) == (1, None, 0.8)  # one attempt each
    assert basis["second_moment"] == gsm["aa_discordant"]["second_moment"] == 0.0
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
    typed = read_model(compares[0], CompareResult)
    ceval_block = next(b for b in typed.benchmarks if b.benchmark == "ceval")
    assert ceval_block.non_inferiority is not None
    assert "MDE (80 %)" in md and "A/A control" in md
    assert f"; {verdict_sentence(ceval_block.non_inferiority)}; " in md
    assert "not distinguishable from the server's own noise (exact McNemar p = 1); " in md


def test_paired_gates_judge_the_variant_under_test(aa_run) -> None:
    results, compares = aa_run.results, [c.compare_json for c in aa_run.comparisons]
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
    # the report states what the comparison could see, in the words its numbers make
    said = " ".join(test.limitations)
    gsm = next(b for b in read_model(compares[0], CompareResult).benchmarks if b.benchmark == "gsm8k")
    assert gsm.aa_discordant is not None
    assert f"Power (gsm8k): {aa_sentence(gsm.aa_discordant)}; {block_mde_sentence(gsm)}; " in said
    assert mde["gsm8k"].message.endswith(
        f": {block_mde_sentence(gsm)} ({mde_basis_text(gsm.mde_basis, gsm.n_pairs)})"
    )
    for control in ("clean", "clean_again"):  # a control's own audit carries no paired gate
        s = results[control].summary
        assert s is not None
        assert not [g for g in s.gates if g.gate in ("non_inferiority_margin_pts", "max_mde_pts")]


def test_each_variant_is_audited_once_after_the_comparison(aa_run) -> None:
    stages = read_model(aa_run.rundir.timings, StageTimings).stages
    audits = [s.variant for s in stages if s.stage == "audit"]
    assert sorted(audits) == sorted(aa_run.results)  # once each: no variant's own run audits it
    names = [s.stage for s in stages]
    assert names.index("compare") < names.index("audit")
    for name in ("faults", "clean"):  # the arms' reports cite the comparison they are arms of
        summary = aa_run.results[name].summary
        assert summary is not None and summary.paired_control is not None
        assert summary.paired_control.endswith("(compare.json)")
        assert read_model(aa_run.rundir.root / name / "summary.json", Summary) == summary
    worst = max((r.summary for r in aa_run.results.values() if r.summary), key=lambda s: s.exit_code)
    assert aa_run.verdict is not None and aa_run.verdict.exit_code == worst.exit_code == 1
    assert aa_run.comparisons[0].speed_compare == aa_run.rundir.speed_compare


def test_paired_gate_without_a_control_fails(tmp_path) -> None:
    from evalpipe.audit.gates import paired_gates

    failed = paired_gates(GateConfig(non_inferiority_margin_pts=2.0), None, under_test=True)
    assert [(g.passed, g.message) for g in failed] == [
        (False, "non_inferiority_margin_pts: non-inferiority needs a control variant (one paired comparison, "
         "compare.json)")
    ]  # fmt: skip


def test_plan_from_the_run_uses_its_aa_noise(aa_run) -> None:
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.config.loader import load_config
    from evalpipe.plan.mde import plan_benchmark
    from evalpipe.selftest.controls import demo_config_path

    root, compares = aa_run.rundir, [c.compare_json for c in aa_run.comparisons]
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


@pytest.fixture(scope="module")
def aa_only_run(tmp_path_factory: pytest.TempPathFactory):
    """No A/B control: the variant and its repeat. The record of the server's noise must still be written."""
    cfg = load_config(demo_config_path())
    variants = [
        ServerVariant(name="clean", label="clean"),
        ServerVariant(name="clean_again", label="clean again", repeat_of="clean"),
    ]
    gates = GateConfig(
        max_error_findings=100,
        non_inferiority_margin_pts={"ceval": 0.5},
        max_mde_pts=1.0,
        advisory=["non_inferiority_margin_pts"],
    )
    return _run_gsm8k_ceval(cfg, variants, gates, tmp_path_factory, "aa-only")


def test_aa_only_run_writes_the_noise_record(aa_only_run) -> None:
    from evalpipe.cli.run_cmd import power_lines

    root, results = aa_only_run.rundir, aa_only_run.results
    compares = [c.compare_json for c in aa_only_run.comparisons]
    assert compares == [root.root / "compare.json"]
    cmp = read_model(compares[0], CompareResult)
    assert cmp.aa_only and cmp.run_aa == cmp.run_b and cmp.run_b.endswith("clean_again")
    for block in [*cmp.benchmarks, cmp.overall]:
        assert block is not None
        aa = block.aa_discordant
        assert aa is not None and aa.n_pairs == block.n_pairs
        # the answer-key server answers identically: nothing differed, and the words say so
        assert (aa.discordant, aa.responses_differed, aa.responses_compared) == (0, 0, block.n_pairs)
        assert power_lines(block)[0] == (
            f"A/A: 0 of {block.n_pairs} responses differed byte for byte; the score changed on 0 of "
            f"{block.n_pairs} samples (0 better the first time, 0 the second)"
        )
        # no A/B ran: nothing restates the A/A pair as an A/B one
        assert block.ab_discordant is None and block.noise_vs_ab is None
        assert block.mde_basis is not None and block.mde_basis.noise == "A/A"
        mde_line = block_mde_sentence(block)
        assert mde_line is not None and power_lines(block)[1] == f"MDE: {mde_line}"
    md = (root.root / "compare.md").read_text()
    assert "## A/A control: clean vs its repeat clean again" in md and "No A/B control ran" in md
    # the advisory non-inferiority gate is reported but does not decide; max_mde_pts does
    test = results["clean"].summary
    assert test is not None
    ni = [g for g in test.gates if g.gate == "non_inferiority_margin_pts"]
    assert [(g.benchmark, g.passed, g.advisory) for g in ni] == [("ceval", False, True)]
    mde = [g for g in test.gates if g.gate == "max_mde_pts"]
    assert mde and all(not g.passed and not g.advisory for g in mde)
    assert test.verdict == "gate_failed"


def test_advisory_gates_never_decide_the_verdict(aa_only_run) -> None:
    from evalpipe.artifacts import read_model
    from evalpipe.artifacts.schema.compare import CompareResult
    from evalpipe.audit.gates import decide, mark_advisory, paired_gates

    compares = [c.compare_json for c in aa_only_run.comparisons]
    cmp = read_model(compares[0], CompareResult)
    strict = GateConfig(non_inferiority_margin_pts={"ceval": 0.5})
    assert decide(mark_advisory(strict, paired_gates(strict, cmp, under_test=True)))[0] == "gate_failed"
    advisory = strict.model_copy(update={"advisory": ["non_inferiority_margin_pts"]})
    results = mark_advisory(advisory, paired_gates(advisory, cmp, under_test=True))
    assert [g.passed for g in results] == [False] and decide(results)[0] == "pass"


def test_plan_from_an_aa_only_run_takes_its_noise(aa_only_run) -> None:
    from evalpipe.artifacts import read_model
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.plan.mde import measured

    root = aa_only_run.rundir
    manifest = read_model(root.manifest, Manifest)
    noise, p, _ = measured(root.root, manifest, "gsm8k")
    assert noise is not None and noise.source == "aa" and p is not None


@pytest.mark.parametrize(
    ("advisory", "message"),
    [
        (["max_mde_pts"], "advisory: max_mde_pts is not set"),
        (["max_error_findings"], "advisory.0"),
    ],
)
def test_advisory_gate_config_errors(advisory: list[str], message: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        GateConfig.model_validate({"advisory": advisory})
