"""The internal pilot inside a run, without a server (``generation.sequential.pilot``).

Before the decision every arm is released its gated block's pilot only (its first ``K`` units) and halts once it
holds them; the pilot's counts are the in-run rule's (units complete in both arms, before a crossing); after the
decision the pilot rows are asked one attempt and the rest the decision's, a unit complete only once every
attempt it is asked has answered; the worker's gate refuses an attempt a row is not asked, at once.  The config
refuses a pilot it cannot run, with one line naming the field.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.config import config_data, entry
from helpers.stopper import Recorder, index_map
from pydantic import ValidationError

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.pilot import PilotBlock, PilotDecision
from evalpipe.config.models import RunConfig
from evalpipe.evalscope_bridge.protocol import Sample
from evalpipe.evalscope_bridge.scheduling import SequenceGate
from evalpipe.run.pilot import decide, statement
from evalpipe.run.sequential_stop import SequentialArm, SequentialStopper, in_run_order
from evalpipe.stats.pilot import PilotCounts, PilotRule
from evalpipe.stats.pilot_rule import decide as pooled_choice

SEED = 11
BENCH = "gsm8k"
N = 40
K = 10  # round(0.25 × 40)
TWICE = 3  # round(0.3 × 10): the pilot's units asked twice
ATTEMPTS = 3


def _data(**pilot: object) -> dict[str, object]:
    return config_data(
        benchmarks=[entry(BENCH, subset="main"), entry("ceval")],
        generation={
            "concurrency": 4,
            "sequential": {
                "alpha": 0.05,
                "sequential_share": 1.0,
                "batch_units": 3,
                "pilot": {"share": 0.25, "threshold": 0.7, "attempts": ATTEMPTS, "agreement": 0.3, **pilot},
            },
        },
        variants=[{"name": "test"}, {"name": "control"}, {"name": "again", "repeat_of": "control"}],
        gates={"non_inferiority_margin_pts": {BENCH: 10.0}},
        design={BENCH: {"accuracy": 0.8, "discordance": 0.1, "basis": "test"}},
    )


def _index_map() -> IndexMap:
    return index_map(BENCH, N)


def _arm(tmp_path: Path, variant: str) -> SequentialArm:
    return SequentialArm(
        tmp_path / "sequential", variant, "test", "control", ("test", "control", "again"), False
    )


def _answer(stopper: SequentialStopper, rows: list[tuple[str, int]], right: bool, attempt: int = 0) -> None:
    for subset, row in rows:
        index = row * ATTEMPTS + attempt
        stopper.observe(
            BENCH, Sample(benchmark=BENCH, subset=subset, index=index, ok=True, correct=float(right))
        )


def test_the_pilot_is_sent_first_its_counts_decide_and_the_rest_is_asked_the_decisions_attempts(
    tmp_path: Path,
) -> None:
    cfg, imap = RunConfig.model_validate(_data()), _index_map()
    assert cfg.task_attempts(BENCH) == ATTEMPTS and cfg.task_attempts("ceval") == 1
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    # the control, piloting: released its pilot only — its first TWICE units two attempts, the others one —
    # and halted once it holds it
    control = SequentialStopper(_arm(tmp_path, "control"), cfg, SEED, imap)
    asked = dict(zip(control.sequence(BENCH) or [], control.attempts(BENCH) or [], strict=True))
    assert control.piloting() and [asked[row] for row in order] == [2] * TWICE + [1] * (N - TWICE)
    control.begin(BENCH)
    worker = Recorder()
    control.poll(worker)
    assert worker.released == {BENCH: 3} and not worker.halted  # a batch at a time, as ever
    for unit in range(K):
        for attempt in range(2 if unit < TWICE else 1):
            _answer(control, order[unit : unit + 1], right=True, attempt=attempt)
        control.poll(worker)
        assert worker.released[BENCH] == min(K, unit + 1 + 3)  # never beyond the pilot
    assert BENCH in worker.halted
    control.finish(BENCH)
    # the test arm: 4 of its 10 pilot units differ in their first attempt (wrong where the control was right);
    # of the three asked twice, unit 0 is wrong again (the same difference) and units 1 and 2 right (x = 1/2 each)
    test = SequentialStopper(_arm(tmp_path, "test"), cfg, SEED, imap)
    test.begin(BENCH)
    worker = Recorder()
    for unit in range(K):
        test.poll(worker)
        _answer(test, order[unit : unit + 1], right=unit >= 4)
        if unit < TWICE:
            _answer(test, order[unit : unit + 1], right=unit > 0, attempt=1)
    test.poll(worker)
    assert worker.released[BENCH] == K and BENCH in worker.halted
    test.finish(BENCH)
    # the counts the decision reads (an observer of both files), and the rule on them
    observer = SequentialStopper(_arm(tmp_path, ""), cfg, SEED, imap)
    counts, crossed = observer.pilot_counts(BENCH, 0.8)
    expected = K * 2 * 0.8 * 0.2  # 3.2: R = 4 / 3.2 = 1.25 > 0.7
    assert counts == PilotCounts(K, 4, pytest.approx(expected), TWICE, 1.0, 0.5) and crossed is None
    rule = PilotRule(0.25, 0.7, ATTEMPTS, 0.3)
    # w = mean x / mean d1² = (1/3) / (4/10) = 0.83: no k reaches 0.7 (3 attempts: 1.25 × (0.25 + 0.75 × (1 − w +
    # w/3)) = 0.73), but one standard error up (√(var x / 3) = 0.136: w = 1) 3 attempts reach 0.625
    assert counts.within_share() == pytest.approx((1 / 3) / 0.4)
    assert rule.effective_ratio(counts, 3) == pytest.approx(0.7292, abs=1e-4)
    assert rule.effective_ratio(counts, 3, standard_errors=1.0) == pytest.approx(0.625)
    assert rule.attempts_after(counts) == ATTEMPTS
    entries = observer.pilot_entries(BENCH)
    assert entries == [f"{BENCH}/s{row:02d}" for _, row in order[:K]]
    assert observer.agreement_entries(BENCH) == entries[:TWICE]
    block = PilotBlock(
        block=BENCH, members=[BENCH], units=N, pilot_units=K, judged=counts.judged, discordant=counts.discordant,
        accuracy=0.8, crossed=None, entries=entries, agreement_entries=entries[:TWICE], paired=TWICE, within=1.0,
        within_squares=0.5,
    )  # fmt: skip
    decision = PilotDecision(
        test="test", control="control", share=0.25, threshold=0.7, attempts_if_above=ATTEMPTS, agreement=0.3,
        blocks=[block], discordant=4, expected=expected, ratio=4 / expected, attempts=ATTEMPTS,
        statement=statement([block], counts, rule, ATTEMPTS), decided_at="2026-12-06T00:00:00+00:00",
    )  # fmt: skip
    assert (
        "4 of 10 judged units differ" in decision.statement
        and "3 attempts per remaining unit" in decision.statement
    )
    assert "asked twice on 3: 83% of the disagreement within a unit" in decision.statement
    assert "noise to 0.73 × chance (0.63 one standard error of the within share up)" in decision.statement
    assert decision.attempts_for(BENCH, f"s{order[0][1]:02d}") == 2
    assert decision.attempts_for(BENCH, f"s{order[TWICE][1]:02d}") == 1
    assert decision.attempts_for(BENCH, f"s{order[K][1]:02d}") == ATTEMPTS
    assert decision.attempts_for("ceval", "x") == 1
    # after the decision: the control resumes; pilot rows as they were asked, the rest three, released beyond it
    resumed = SequentialStopper(_arm(tmp_path, "control"), cfg, SEED, imap, pilot=decision)
    assert not resumed.piloting()
    asked = dict(zip(resumed.sequence(BENCH) or [], resumed.attempts(BENCH) or [], strict=True))
    assert [asked[row] for row in order] == [2] * TWICE + [1] * (K - TWICE) + [ATTEMPTS] * (N - K)
    resumed.begin(BENCH)
    worker = Recorder()
    resumed.poll(worker)
    assert worker.released[BENCH] == K + 3 and not worker.halted
    # a remaining unit with one of its three attempts answered is not complete: the prefix stays at K
    _answer(resumed, order[K : K + 1], right=True, attempt=0)
    assert len(resumed._values(resumed.blocks[BENCH], "control")) == K
    for attempt in (1, 2):
        _answer(resumed, order[K : K + 1], right=True, attempt=attempt)
    assert len(resumed._values(resumed.blocks[BENCH], "control")) == K + 1


def _send_pilot(tmp_path: Path, cfg: RunConfig, variant: str, wrong: set[int], units: int = K) -> None:
    """``variant``'s arm sends its first ``units`` pilot units (both attempts of those asked twice), wrong on
    the units numbered in ``wrong`` (in the block's order), right on the others."""
    imap = _index_map()
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    arm = SequentialStopper(_arm(tmp_path, variant), cfg, SEED, imap)
    arm.begin(BENCH)
    for unit in range(units):
        for attempt in range(2 if unit < TWICE else 1):
            _answer(arm, order[unit : unit + 1], right=unit not in wrong, attempt=attempt)
    arm.finish(BENCH)


def test_the_chance_level_counts_the_judged_units_only(tmp_path: Path) -> None:
    """The pilot's expected discordance is Σ judged × 2p(1 − p): a unit the test arm has not answered is not
    judged, and counting it would lower R (and the attempts it buys)."""
    cfg = RunConfig.model_validate(_data())
    _send_pilot(tmp_path, cfg, "control", wrong=set())
    _send_pilot(tmp_path, cfg, "test", wrong={0, 4}, units=6)
    counts, crossed = SequentialStopper(_arm(tmp_path, ""), cfg, SEED, _index_map()).pilot_counts(BENCH, 0.8)
    assert crossed is None and (counts.judged, counts.discordant, counts.paired) == (6, 2, TWICE)
    assert counts.expected == pytest.approx(6 * 2 * 0.8 * 0.2)


def test_the_decision_pairs_the_test_arm_with_the_control_not_its_aa_repeat(tmp_path: Path) -> None:
    """Three arms: the A/A repeat ("again") disagrees with the control on half the pilot, the test arm never:
    the decision reads the test and control arms only — nothing differs, one attempt."""
    cfg = RunConfig.model_validate(_data())
    _send_pilot(tmp_path, cfg, "control", wrong=set())
    _send_pilot(tmp_path, cfg, "test", wrong=set())
    _send_pilot(tmp_path, cfg, "again", wrong={0, 1, 2, 3, 4})
    decision = decide(cfg, RunDir(tmp_path), Manifest(seed=SEED, benchmarks=[], entries=[]), _index_map())
    assert (decision.test, decision.control) == ("test", "control")
    assert (decision.discordant, decision.attempts) == (0, 1)
    assert read_model(RunDir(tmp_path).pilot, PilotDecision) == decision


def test_the_blocks_share_one_decision_on_their_pooled_pilot() -> None:
    """One block above the threshold, one far below: pooled, R = 0.4 ≤ 0.65 — one attempt for both, though the
    first alone (R 1.0, all of it within a unit) would buy two."""
    rule = PilotRule(0.3, 0.65, 4, 0.35)
    noisy = PilotCounts(10, 4, 4.0, 4, 2.0, 2.0)
    quiet = PilotCounts(90, 4, 16.0, 30, 0.0, 0.0)
    assert rule.attempts_after(noisy) == 2 and rule.attempts_after(quiet) == 1
    pooled, attempts = pooled_choice(rule, [noisy, quiet])
    assert pooled == PilotCounts(100, 8, 20.0, 34, 2.0, 2.0) and pooled.ratio == 0.4 and attempts == 1


def test_the_gate_refuses_an_attempt_a_row_is_not_asked_at_once() -> None:
    gate = SequenceGate({("main", 0): 0, ("main", 1): 1}, {("main", 0): 1, ("main", 1): 3})
    gate.release(2)
    assert gate.admit("main", 0, 0) and not gate.admit("main", 0, 1)  # the pilot row: its first attempt only
    assert all(gate.admit("main", 1, a) for a in range(3)) and not gate.admit("main", 1, 3)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"generation": {"repeats": 2}}, "needs generation.repeats 1"),
        ({"share": 0.5, "seq": {"sequential_share": 0.5}}, "needs sequential_share 1"),
        ({"seq": {"in_run": False}}, "needs in_run true"),
        ({"parallel_variants": True}, "needs the variants run in turn"),
        ({"design": {}}, "needs design: accuracy for every gated block"),
        (
            {"variants": [{"name": "test"}, {"name": "again", "repeat_of": "test"}]},
            "needs variants with a control",
        ),
    ],
)
def test_a_pilot_the_run_cannot_carry_out_is_refused_naming_the_field(
    change: dict[str, object], words: str
) -> None:
    data = _data()
    generation = data["generation"]
    assert isinstance(generation, dict)
    if "generation" in change:
        generation.update(change["generation"])  # type: ignore[arg-type]
    if "seq" in change:
        generation["sequential"].update(change["seq"])  # type: ignore[arg-type]
    for key in ("design", "variants", "parallel_variants"):
        if key in change:
            data[key] = change[key]
    with pytest.raises(ValidationError, match="generation.sequential.pilot: " + words):
        RunConfig.model_validate(data)
