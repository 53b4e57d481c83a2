"""The internal pilot's rule and its path (``evalpipe.stats.pilot``).

The rule is declared before the first unit (share, threshold, attempts) and reads only the pilot's answers: type I
at the margin stays at most α for every block at every discordance — while a rule that re-asks a unit because of
its own answer (not predictable) passes a release at the margin most of the time, which these bounds would see.
At 2p(1 − p) the sensitive profile's three blocks pass a release with no regression ≥ 0.95 together.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalpipe.stats.operating import GateDesign, gate_codes, unit_probabilities
from evalpipe.stats.pilot import (
    AttemptModel,
    PilotBlockDesign,
    PilotCounts,
    PilotRule,
    chance_discordance,
    simulate_pilot,
)

ALPHA = 0.025
PATHS = 2000
#: configs/glm-fp8-sensitive.yaml's gated blocks: name, n, margin, design accuracy
SENSITIVE = (
    ("competition_math", 153, 13.0, 0.91),
    ("gpqa_diamond", 198, 13.0, 0.862),
    ("kv_probe", 288, 9.0, 0.93),
)
RULE = PilotRule(0.3, 0.65, 6, 0.35)  # configs/glm-fp8-sensitive.yaml's


def _blocks() -> list[PilotBlockDesign]:
    return [PilotBlockDesign(name, GateDesign(n, m, ALPHA, 1.0), p, 1.0) for name, n, m, p in SENSITIVE]


def _psi(ratio: float, blocks: list[PilotBlockDesign], cap: float = 0.15) -> list[float]:
    return [min(ratio * chance_discordance(b.accuracy), 1.0 - cap) for b in blocks]


def test_the_rule_and_its_bounds() -> None:
    assert RULE.pilot_units(153) == 46 and RULE.pilot_units(1) == 1 and RULE.pilot_units(288) == 86
    assert RULE.agreement_units(46) == 16 and RULE.agreement_units(1) == 1 and RULE.agreement_units(0) == 0
    # 20 judged, 8 discordant against 10 expected: R = 0.8 > 0.65; four units paired
    split = PilotCounts(
        20, 8, 10.0, 4, 0.5, 0.25
    )  # one of the four changed by one: w = (0.5/4) / (8/20) = 0.3125
    assert split.ratio == 0.8 and split.within_share() == pytest.approx(0.3125)
    # the fewest k: 0.8 × (0.3 + 0.7 × (1 − w + w/k)) is 0.71 at k = 2 and 0.65 at k = 6: none reaches 0.65 …
    assert RULE.effective_ratio(split, 4) == pytest.approx(0.8 * (0.3 + 0.7 * (1 - 0.3125 * 0.75)))
    # … and one standard error up (x = 0, 0, 0, 0.5: s.e. 0.108 → w 0.58, k = 6: 0.53) the most attempts do
    assert RULE.effective_ratio(split, 6) == pytest.approx(0.6542, abs=1e-4)
    assert RULE.attempts_after(split) == 6
    within = PilotCounts(20, 8, 10.0, 4, 2.0, 2.0)  # every pair changed by one: w = 0.5 / 0.4 → 1
    assert within.within_share() == 1.0 and RULE.attempts_after(within) == 2  # 0.8 × (0.3 + 0.35) = 0.52
    between = PilotCounts(20, 8, 10.0, 4, 0.0, 0.0)  # every pair repeated itself: ρ = 1, s.e. 0
    assert between.within_share() == 0.0 and RULE.attempts_after(between) == 1
    assert RULE.attempts_after(PilotCounts(20, 6, 10.0, 4, 2.0, 2.0)) == 1  # R 0.6: one attempt reaches it
    assert RULE.attempts_after(PilotCounts(20, 8, 10.0, 0, 0.0, 0.0)) == 1  # nothing paired: nothing to split
    assert RULE.attempts_after(PilotCounts(0, 0, 0.0, 0, 0.0, 0.0)) == 1  # nothing judged: nothing to size
    assert split + between == PilotCounts(40, 16, 20.0, 8, 0.5, 0.25)
    for bad in ({"share": 0.0}, {"share": 1.0}, {"threshold": 0.0}, {"attempts": 1}, {"agreement": 0.0}):
        with pytest.raises(ValueError):
            PilotRule(**{"share": 0.4, "threshold": 0.7, "attempts": 4, "agreement": 0.25, **bad})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sequential_share 1"):
        simulate_pilot(
            [PilotBlockDesign("b", GateDesign(50, 10.0, ALPHA, 0.5), 0.8)],
            RULE,
            [0.1],
            [0.0],
            paths=1,
            seed=0,
        )


@pytest.mark.parametrize("ratio", [0.1, 0.467, 1.0])
def test_type_one_at_the_margin_stays_within_alpha_for_every_block(ratio: float) -> None:
    blocks = _blocks()
    psi = _psi(ratio, blocks)
    for b, block in enumerate(blocks):
        drops = [0.0] * len(blocks)
        drops[b] = block.design.margin_pts / 100.0
        out = simulate_pilot(blocks, RULE, psi, drops, paths=PATHS, seed=7 + b)
        se = math.sqrt(ALPHA * (1 - ALPHA) / PATHS)
        assert out.p_pass(b) <= ALPHA + 3 * se, (ratio, block.name, out.p_pass(b))


def test_a_rule_that_reasks_a_units_own_loss_breaks_the_bound_these_tests_apply() -> None:
    """The negative control: re-ask a unit whose first attempt was a loss (its value the mean of both) — not
    predictable — and the gate's own rule passes a release at the margin far above α."""
    design = GateDesign(198, 13.0, ALPHA, 1.0)
    gain, loss = unit_probabilities(0.111, 0.13)
    draw = np.random.default_rng(5).random((PATHS, design.n, 2))
    attempt = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
    d = np.where(attempt[:, :, 0] < 0.0, attempt.mean(axis=2), attempt[:, :, 0])
    codes, _, _ = gate_codes(d, design)
    assert float((codes == 1).mean()) > 0.3


def test_at_chance_discordance_the_sensitive_sign_off_passes_a_good_release_and_fails_a_single_block_miss() -> (
    None
):
    blocks = _blocks()
    zero = simulate_pilot(blocks, RULE, _psi(1.0, blocks), [0.0, 0.0, 0.0], paths=PATHS, seed=11)
    assert zero.p_pass() >= 0.95 and zero.fired.mean() > 0.9  # at 2p(1 − p) the rule chose 4 attempts
    argued = simulate_pilot(blocks, RULE, _psi(0.467, blocks), [0.0, 0.0, 0.0], paths=PATHS, seed=12)
    assert argued.p_pass() >= 0.95 and argued.fired.mean() < 0.1  # at the argued ratio it mostly did not
    # the spend follows the choice: one attempt nearly everywhere at the argued ratio
    assert argued.tokens(blocks) < zero.tokens(blocks)
    miss = simulate_pilot(blocks, RULE, _psi(1.0, blocks), [0.0, 0.15, 0.0], paths=PATHS, seed=13)
    assert miss.p_pass() <= 0.01  # GPQA at #22671's −15 points, the others unchanged


def test_the_chosen_attempts_go_to_the_units_after_the_pilot_only() -> None:
    """A margin too tight for the e-processes to cross in 40 units but by chance: every arm sends every unit, so
    a path spends K + m + (n − K) × k attempts per arm — the pilot's units at one attempt (its first m at two),
    whatever the rule chose for the rest — and less only where a chance crossing stopped it."""
    rule = PilotRule(0.25, 0.5, 3, 0.4)
    block = PilotBlockDesign("b", GateDesign(40, 0.5, ALPHA, 1.0), 0.8)
    out = simulate_pilot([block], rule, [0.6], [0.0], paths=200, seed=3, arms=3)
    k_pilot, m = rule.pilot_units(40), rule.agreement_units(rule.pilot_units(40))
    assert (k_pilot, m) == (10, 4) and set(np.unique(out.chosen)) >= {1, 2}  # both choices occur
    per_arm = k_pilot + m + (40 - k_pilot) * out.chosen
    assert np.all(out.attempts[0] <= 3.0 * per_arm) and np.mean(out.attempts[0] == 3.0 * per_arm) > 0.95


def test_attempts_of_one_unit_that_repeat_themselves_are_measured_and_not_bought() -> None:
    """At 2p(1 − p): attempts that disagree independently (ρ = 0) are bought and the sign-off reaches 0.95; attempts
    that repeat themselves (ρ = 1) are never bought — the pilot's pairs all agree — and the spend is the
    one-attempt design's plus the pilot's second attempts."""
    blocks = _blocks()
    psi = _psi(1.0, blocks)
    independent = simulate_pilot(blocks, RULE, psi, [0.0] * 3, paths=PATHS, seed=21)
    assert independent.p_pass() >= 0.95 and independent.fired.mean() > 0.85
    repeated = simulate_pilot(blocks, RULE, psi, [0.0] * 3, paths=PATHS, seed=21, model=AttemptModel(1.0))
    assert not repeated.fired.any()
    extra = sum(
        3 * RULE.agreement_units(RULE.pilot_units(b.design.n)) * b.tokens_per_attempt for b in blocks
    )  # the pilot's second attempts in three arms, at most
    assert repeated.tokens(blocks) <= independent.tokens(blocks) / 1.5
    assert 0.70 <= repeated.p_pass() <= 0.82 and extra > 0  # the one-attempt design's 0.77 at ratio 1
