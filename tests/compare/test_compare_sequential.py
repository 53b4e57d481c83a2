"""compare.json's sequential block (generation.sequential): the paired comparison judged unit by unit.

Two synthetic runs on one synthetic manifest (no dataset): the block must consume units in the seeded
sequence order (``evalpipe.hashing.sequence_key``) — not manifest order, not the order rows sit in
outcomes.jsonl — stop where ``evalpipe.stats.sequential`` stops on that order, and count the units and
output tokens after the stop.  Without the config, compare.json carries no sequential block and every other
field is unchanged.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from helpers.config import config_data
from helpers.scored_runs import one_stratum_manifest, write_scored_run
from pydantic import ValidationError

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.manifest import (
    Manifest,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.compare import Arms, GatePolicy, PairedDesign, compare_runs
from evalpipe.config.models import RunConfig, SequentialConfig
from evalpipe.hashing import sequence_key
from evalpipe.report.compare_markdown import compare_markdown
from evalpipe.stats.sequential import sequential_decision
from evalpipe.words.compare import verdict_sentence
from evalpipe.words.sentences import sequential_sentence

SEED = 7
N = 200
BENCH = "aime"


def _manifest() -> Manifest:
    return one_stratum_manifest(SEED, {BENCH: [f"q{i:03d}" for i in range(N)]})


def _run(root: Path, manifest: Manifest, correct: set[str], *, shuffle: int | None = None) -> Path:
    """A run directory: the manifest and one outcome row per entry, 1000 output tokens when right and
    3000 when wrong (rows shuffled with ``shuffle`` as the seed: completion order is not manifest order)."""
    return write_scored_run(
        root,
        manifest,
        lambda e: e.source_id in correct,
        output_tokens=lambda e, ok: 1000 if ok else 3000,
        shuffle=shuffle,
    )


def _regression_runs(tmp_path: Path, *, shuffle: int | None = None) -> tuple[Path, Path, list[str]]:
    """Control right on 160 of 200; the test arm loses 50 of them and gains none (Δ = −25 pts)."""
    manifest = _manifest()
    ids = [e.source_id for e in manifest.entries]
    rng = random.Random(3)
    control = set(rng.sample(ids, 160))
    lost = set(rng.sample(sorted(control), 50))
    a = _run(tmp_path / "a", manifest, control - lost, shuffle=shuffle)
    b = _run(tmp_path / "b", manifest, control)
    return a, b, ids


def test_planted_regression_stops_inferior_in_sequence_order(tmp_path: Path) -> None:
    a, b, ids = _regression_runs(tmp_path, shuffle=11)
    gate = GatePolicy(margins=lambda _b: 5.0, sequential=SequentialConfig(alpha=0.05, sequential_share=1.0))
    result = compare_runs(PairedDesign(Arms(a, b, "fp8", "bf16"), gate=gate))
    assert result.schema_version == 10
    block = result.benchmarks[0]
    seq = block.sequential
    assert seq is not None and seq.verdict == "inferior" and seq.stop_reason == "crossing"
    assert seq.sequence_seed == SEED

    # the same decision, recomputed from the outcomes in sequence-key order
    test_right, control_right = _right(a), _right(b)
    ordered = sorted(ids, key=lambda s: sequence_key(SEED, BENCH, s))
    d = np.array([(s in test_right) - (s in control_right) for s in ordered], dtype=float)
    expected = sequential_decision(d, 5.0, 0.05, cap=300, planned_n=N)
    assert (seq.units_used, seq.cap, seq.planned_n, seq.bets) == (expected.units_used, 300, N, "planned")
    assert seq.e_value_inferior == pytest.approx(expected.e_value_inferior)
    assert (seq.cs_low, seq.cs_high) == pytest.approx((expected.cs_lower, expected.cs_upper))
    in_manifest_order = sequential_decision(
        np.array([(s in test_right) - (s in control_right) for s in ids], dtype=float), 5.0, 0.05, planned_n=N
    )
    assert (
        in_manifest_order.units_used != seq.units_used
    )  # the order is the sequence key's, not the manifest's

    after = ordered[seq.units_used :]
    assert seq.units_unsent_share == pytest.approx(len(after) / N)
    tokens = {s: (1000 if s in test_right else 3000) + (1000 if s in control_right else 3000) for s in ids}
    assert seq.output_tokens_unsent_share == pytest.approx(
        sum(tokens[s] for s in after) / sum(tokens.values())
    )
    sentence = sequential_sentence(seq)
    assert sentence.startswith(f"sequential: inferior beyond -5 pts after {seq.units_used} of 200 units")
    assert sentence.endswith(
        f"stopping there leaves {100 * len(after) / N:.0f} % of the units and "
        f"{100 * seq.output_tokens_unsent_share:.0f} % of the output tokens unsent"
    )
    assert sentence in compare_markdown(result)


def _right(run: Path) -> set[str]:
    return {r.source_id for r in read_jsonl(RunDir(run).outcomes, OutcomeRow) if r.failure_class == "ok"}


def test_row_order_does_not_matter(tmp_path: Path) -> None:
    """Rows in completion order or in manifest order: the same units, the same stop."""
    a1, b1, _ = _regression_runs(tmp_path / "one", shuffle=11)
    a2, b2, _ = _regression_runs(tmp_path / "two", shuffle=None)
    gate = GatePolicy(margins=lambda _b: 5.0, sequential=SequentialConfig(alpha=0.05, sequential_share=1.0))
    r1 = compare_runs(PairedDesign(Arms(a1, b1), gate=gate))
    r2 = compare_runs(PairedDesign(Arms(a2, b2), gate=gate))
    s1, s2 = r1.benchmarks[0].sequential, r2.benchmarks[0].sequential
    assert s1 is not None and s2 is not None
    assert s1.model_dump() == s2.model_dump()


def test_without_the_config_nothing_else_changes(tmp_path: Path) -> None:
    a, b, _ = _regression_runs(tmp_path)
    plain = compare_runs(PairedDesign(Arms(a, b), gate=GatePolicy(margins=lambda _b: 5.0)))
    sequential = SequentialConfig(alpha=0.01, sequential_share=1.0, cap_factor=2.0)
    judged = compare_runs(PairedDesign(Arms(a, b), gate=GatePolicy(margins=lambda _b: 5.0, sequential=sequential)))
    assert plain.benchmarks[0].sequential is None
    seq = judged.benchmarks[0].sequential
    assert seq is not None and (seq.alpha, seq.cap) == (0.01, 400)
    # the gate's verdict and its operating characteristic follow the design; nothing else changes
    assert plain.benchmarks[0].non_inferiority is not None and judged.benchmarks[0].non_inferiority is not None
    assert plain.benchmarks[0].non_inferiority.basis == "fixed"
    assert judged.benchmarks[0].non_inferiority.basis == "sequential crossing"
    design_fields = {"sequential": None, "non_inferiority": None, "operating": None}
    assert (
        plain.model_copy(
            update={"benchmarks": [plain.benchmarks[0].model_copy(update=design_fields)]}
        ).model_dump()
        == judged.model_copy(
            update={"benchmarks": [judged.benchmarks[0].model_copy(update=design_fields)]}
        ).model_dump()
    )
    no_margin = compare_runs(
        PairedDesign(Arms(a, b), gate=GatePolicy(sequential=SequentialConfig(alpha=0.05, sequential_share=1.0)))
    )
    assert no_margin.benchmarks[0].sequential is None  # judged against a margin or not at all


def test_inconclusive_when_the_units_run_out(tmp_path: Path) -> None:
    """No difference at all and a 1-pt margin: 200 units cannot decide; nothing is left unsent."""
    manifest = _manifest()
    right = {e.source_id for e in manifest.entries[:150]}
    a = _run(tmp_path / "a", manifest, right)
    b = _run(tmp_path / "b", manifest, right)
    gate = GatePolicy(margins=lambda _b: 1.0, sequential=SequentialConfig(alpha=0.05, sequential_share=1.0))
    seq = compare_runs(PairedDesign(Arms(a, b), gate=gate)).benchmarks[0].sequential
    assert seq is not None
    assert (seq.verdict, seq.stop_reason, seq.units_used, seq.units_unsent_share) == (
        "inconclusive",
        "units exhausted",
        200,
        0.0,
    )
    assert seq.output_tokens_unsent_share == 0.0
    assert sequential_sentence(seq).startswith(
        "sequential: inconclusive when the units ran out after 200 of 200 units"
    )
    assert "unsent" not in sequential_sentence(seq)  # nothing was left


def test_config_needs_a_margin_and_forbids_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="non_inferiority_margin_pts"):
        RunConfig.model_validate(config_data(generation={"sequential": {}}))
    ok = RunConfig.model_validate(
        config_data(generation={"sequential": {"alpha": 0.01}}, gates={"non_inferiority_margin_pts": 5})
    )
    assert ok.generation.sequential == SequentialConfig(alpha=0.01, cap_factor=1.5)
    with pytest.raises(ValidationError):
        SequentialConfig.model_validate({"alpha": 0.05, "look_every": 10})
    with pytest.raises(ValidationError):
        SequentialConfig(cap_factor=0.5)


def _cli(args: list[str]) -> int:
    from evalpipe.cli.main import main

    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_compare_cli_judges_sequentially(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _ = _regression_runs(tmp_path)
    out = tmp_path / "out"
    assert _cli(["compare", str(a), str(b), "--margin", "5", "--sequential", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    block = read_model(out / "compare.json", CompareResult).benchmarks[0]
    assert block.sequential is not None and block.sequential.verdict == "inferior"
    assert block.non_inferiority is not None
    assert f"  {sequential_sentence(block.sequential)}\n" in text
    assert f"  non-inferiority: {verdict_sentence(block.non_inferiority)}\n" in text
    assert _cli(["compare", str(a), str(b), "--sequential", "--out", str(out)]) == 2
    assert "--sequential judges against a margin" in capsys.readouterr().err


def test_the_block_carries_its_design_path_and_tokens(tmp_path: Path) -> None:
    """compare.json's sequential block: the design (n, k), the looks (K+, K−, CS) thinned to about ten up to
    the stop — each the value the rule computed at that unit —, each side's first crossing, the tokens spent
    against the fixed design's; compare.md renders a column and a line, the report's limitations the line."""
    from evalpipe.stats.sequential import betting_eprocesses

    a, b, ids = _regression_runs(tmp_path, shuffle=11)
    gate = GatePolicy(margins=lambda _b: 5.0, sequential=SequentialConfig(alpha=0.05, sequential_share=1.0))
    result = compare_runs(PairedDesign(Arms(a, b), gate=gate))
    seq = result.benchmarks[0].sequential
    assert seq is not None and seq.repeats == 1
    test_right, control_right = _right(a), _right(b)
    ordered = sorted(ids, key=lambda s: sequence_key(SEED, BENCH, s))
    d = np.array([(s in test_right) - (s in control_right) for s in ordered], dtype=float)
    processes = betting_eprocesses(d, 5.0, planned_n=N, alpha=0.05)
    assert seq.look_every is not None and 1 <= len(seq.looks) <= 11
    assert [x.unit for x in seq.looks][-1] == seq.units_used
    assert all(x.unit % seq.look_every == 0 for x in seq.looks[:-1])
    for x in seq.looks:
        assert x.e_value_inferior == pytest.approx(processes.wealth_inferior[x.unit - 1])
        assert x.e_value_non_inferior == pytest.approx(processes.wealth_non_inferior[x.unit - 1])
        assert x.cs_low <= x.cs_high
    assert seq.looks[-1].e_value_inferior == pytest.approx(seq.e_value_inferior)
    assert (seq.looks[-1].cs_low, seq.looks[-1].cs_high) == pytest.approx((seq.cs_low, seq.cs_high))
    # the verdict is the first crossing of K-; K+ never crosses on a 25-point drop
    assert seq.first_crossing_inferior == seq.units_used and seq.first_crossing_non_inferior is None
    assert seq.max_e_value_inferior == pytest.approx(seq.e_value_inferior)
    tokens = {s: (1000 if s in test_right else 3000) + (1000 if s in control_right else 3000) for s in ids}
    assert seq.output_tokens_fixed == sum(tokens.values())
    assert seq.output_tokens_spent == sum(tokens[s] for s in ordered[: seq.units_used])
    md = compare_markdown(result)
    assert f"| inferior at {seq.units_used}/200 |" in md
    assert "sequential design: 200 units × 1 attempt per arm, planned bet tuned to n = 200, cap 300" in md
    assert f"{seq.units_used} (stop): " in md and f"first crossing K+ never, K− at {seq.units_used}" in md
    assert "spent of" in md and "(the fixed design)" in md


def _stopped_inside(run: Path, ordered: list[str], sent: int) -> None:
    """The run as the rule stopped it inside: the units after the first ``sent`` of the sequence order were
    never sent (no prediction), and its ``sequential_stop.json`` says so."""
    from evalpipe.artifacts import write_jsonl_atomic, write_model
    from evalpipe.artifacts.schema.sequential import BenchmarkStop, SequentialStops

    rd = RunDir(run)
    unsent = set(ordered[sent:])
    rows = [
        r.model_copy(
            update={
                "prediction_present": False,
                "review_present": False,
                "n_predictions": 0,
                "n_reviews": 0,
                "output_tokens": None,
                "score": None,
                "failure_class": "missing_prediction",
            }
        )
        if r.source_id in unsent
        else r
        for r in read_jsonl(rd.outcomes, OutcomeRow)
    ]
    write_jsonl_atomic(rd.outcomes, rows)
    stop = BenchmarkStop(
        benchmark=BENCH,
        planned_units=N,
        batch_units=4,
        test="a",
        control="b",
        together=True,
        units_sent=sent,
        units_sent_prefix=sent,
        units_complete=sent,
        stop_unit=None,
        verdict="inconclusive",
        stop_reason="units exhausted",
        units_not_sent=N - sent,
    )
    write_model(rd.sequential_stop, SequentialStops(variant=run.name, benchmarks=[stop]))


def test_a_run_stopped_inside_pairs_the_units_every_arm_sent(tmp_path: Path) -> None:
    """Arms stopped inside the run (sequential_stop.json): the block pairs the units both sent (the smaller
    prefix), the bets stay tuned to the planned n, and the tokens spent are the recorded ones against the
    same per unit over the plan."""
    a, b, ids = _regression_runs(tmp_path)
    ordered = sorted(ids, key=lambda s: sequence_key(SEED, BENCH, s))
    _stopped_inside(a, ordered, 90)
    _stopped_inside(b, ordered, 94)  # the control sent a few more in flight: not paired
    gate = GatePolicy(margins=lambda _b: 5.0, sequential=SequentialConfig(alpha=0.05, sequential_share=1.0))
    result = compare_runs(PairedDesign(Arms(a, b), gate=gate))
    block = result.benchmarks[0]
    seq = block.sequential
    assert seq is not None and block.n_pairs == 90
    assert (seq.stopped_in_run, seq.units_planned, seq.units_sent, seq.units_available) == (True, N, 90, 90)
    assert seq.stop_unit_in_run is None  # the records say the rule did not cross inside the run
    test_right, control_right = _right(a), _right(b)
    d = np.array([(s in test_right) - (s in control_right) for s in ordered[:90]], dtype=float)
    expected = sequential_decision(d, 5.0, 0.05, cap=300, planned_n=N)
    assert (seq.units_used, seq.planned_n, seq.verdict) == (expected.units_used, N, expected.verdict)
    spent = sum(
        (1000 if s in test_right else 3000) + (1000 if s in control_right else 3000) for s in ordered[:90]
    )
    assert seq.output_tokens_spent == spent and seq.output_tokens_fixed == round(spent * N / 90)
    assert seq.units_unsent_share == pytest.approx((N - 90) / N)
    assert sequential_sentence(seq).endswith(
        f"stopped inside the run, {N - 90} of {N} planned units and about 55 % of "
        "the fixed design's output tokens never sent"
    )


def test_the_comparison_states_its_operating_characteristic_at_the_measured_discordance(tmp_path: Path) -> None:
    """compare.json's ``operating`` and compare.md: P(pass) at no regression, at the margin and at the must-catch
    drop for this block's design, at the A/B discordance measured here (no A/A arm)."""
    from evalpipe.stats.operating import GateDesign, fixed_pass_probability

    a, b, _ = _regression_runs(tmp_path)
    result = compare_runs(PairedDesign(Arms(a, b), gate=GatePolicy(margins=lambda _b: 5.0, must_catch=lambda _b: 20.0)))
    block = result.benchmarks[0]
    oc = block.operating
    assert oc is not None and oc.discordance_source == "A/B" and oc.sequential_share is None
    assert oc.n == block.n_pairs and oc.must_catch_drop_pts == 20.0
    assert [p.delta_pts for p in oc.points] == [0.0, -5.0, -20.0]
    assert block.ab_discordant is not None
    assert oc.discordance == pytest.approx(block.ab_discordant.second_moment)
    for point in oc.points:  # the fixed design: exact, the gate's own look
        design = GateDesign(oc.n, 5.0, oc.alpha)
        expected = fixed_pass_probability(design.n, oc.discordance, -point.delta_pts / 100, 5.0, oc.alpha)
        assert point.method == "exact enumeration" and point.p_pass == pytest.approx(expected)
    assert oc.points[1].p_pass <= 0.025
    md = compare_markdown(result)
    assert f"with the discordance seen here (A/B ψ = {oc.discordance:.3f}), this fixed design of {oc.n} units" in md
    assert "one with a 20-pt drop" in md
    gate = GatePolicy(margins=lambda _b: 5.0, sequential=SequentialConfig(alpha=0.025, sequential_share=0.5))
    judged = compare_runs(PairedDesign(Arms(a, b), gate=gate)).benchmarks[0].operating
    assert judged is not None and judged.paths == 4000 and judged.points[0].method == "simulation"
