"""compare's gate (``evalpipe.compare.gate``): one decision object per block, read by every view.

The gate's verdict and its interval come from ``evalpipe.stats.operating.gate_verdict``; its operating
characteristic is computed at the A/A discordance when the run has an A/A control (never the A/B pair's, which
holds the effect under test); the sequential block spends ``α × sequential_share``; a fixed design grown by
``--extend`` keeps its look at the first run's units.
"""

from __future__ import annotations

import random

from evalpipe.artifacts.schema.compare import (
    Discordance,
    NonInferiorityResult,
    OperatingCharacteristic,
    SequentialResult,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.compare.gate import gate_fields
from evalpipe.compare.sequential import sequential_fields
from evalpipe.compare.units import BlockGate, PairedOutcomes
from evalpipe.config.models import SequentialConfig
from evalpipe.words.compare import verdict_sentence

BENCH = "gpqa"
SEED = 3


def _row(source_id: str, right: bool) -> OutcomeRow:
    return OutcomeRow(
        benchmark=BENCH, subset="main", index=0, source_id=source_id, stratum="all", prediction_present=True,
        review_present=True, n_predictions=1, n_reviews=1, prompt_sha256="0" * 64,
        score=1.0 if right else 0.0, failure_class="ok" if right else "wrong",
    )  # fmt: skip


def _arms(
    n: int, lost: int
) -> tuple[list[tuple[str, str, str]], dict[tuple[str, str], OutcomeRow], dict[tuple[str, str], OutcomeRow]]:
    ids = [f"q{i:03d}" for i in range(n)]
    losing = set(random.Random(1).sample(ids, lost))
    test = {(BENCH, s): _row(s, s not in losing) for s in ids}
    control = {(BENCH, s): _row(s, True) for s in ids}
    return [(BENCH, s, "all") for s in ids], test, control


def _discordance(n: int, discordant: int) -> Discordance:
    return Discordance(
        n_pairs=n, first_better=discordant // 2, second_better=discordant - discordant // 2,
        discordant=discordant, second_moment=discordant / n,
    )  # fmt: skip


def test_the_operating_characteristic_uses_the_aa_discordance_not_the_ab_pairs() -> None:
    keys, oa, ob = _arms(100, 4)
    fields = {"aa_discordant": _discordance(100, 2), "ab_discordant": _discordance(100, 30)}
    out = gate_fields(keys, PairedOutcomes(oa, ob), BlockGate(margin_pts=10.0, fixed_alpha=0.025), fields)
    oc = out["operating"]
    assert isinstance(oc, OperatingCharacteristic)
    assert (oc.discordance_source, oc.discordance) == ("A/A", 0.02)


def test_the_sequential_block_spends_the_share_of_alpha() -> None:
    """alpha 0.05, share 0.5: the sequential block's e-processes run at 0.025, and so does the gate's crossing."""
    keys, oa, ob = _arms(120, 0)
    config = SequentialConfig(alpha=0.05, sequential_share=0.5)
    block_gate = BlockGate(margin_pts=20.0, fixed_alpha=0.025, sequential=(config, SEED))
    seq = sequential_fields(keys, PairedOutcomes(oa, ob), block_gate)["sequential"]
    assert isinstance(seq, SequentialResult) and seq.alpha == 0.025
    gate = gate_fields(keys, PairedOutcomes(oa, ob), block_gate, {"sequential": seq})
    ni = gate["non_inferiority"]
    assert isinstance(ni, NonInferiorityResult)
    assert (ni.basis, ni.alpha_spent, ni.units_used) == ("sequential crossing", 0.025, seq.units_used)
    assert (ni.lower_bound_pts, ni.upper_bound_pts) == (100 * seq.cs_low, 100 * seq.cs_high)
    assert ni.verdict == seq.verdict == "non-inferior" and ni.lower_bound_pts > -20.0


def test_a_fixed_design_extended_is_judged_at_its_first_runs_look() -> None:
    """100 units, then 200 more by --extend: the fixed look spent α at the first 100 (inconclusive there: 12
    lost), so the added units — every one agreeing — do not enter it; the sentence says so."""
    ids = [f"q{i:03d}" for i in range(300)]
    losing = set(ids[:12])
    keys = [(BENCH, s, "all") for s in ids]
    oa = {(BENCH, s): _row(s, s not in losing) for s in ids}
    ob = {(BENCH, s): _row(s, True) for s in ids}
    generations = {(BENCH, s): (0 if i < 100 else 1) for i, s in enumerate(ids)}
    fixed = BlockGate(margin_pts=10.0, fixed_alpha=0.025)
    grown = gate_fields(keys, PairedOutcomes(oa, ob, generations=generations), fixed, {})["non_inferiority"]
    first = gate_fields(keys[:100], PairedOutcomes(oa, ob), fixed, {})["non_inferiority"]
    whole = gate_fields(keys, PairedOutcomes(oa, ob), fixed, {})["non_inferiority"]
    assert isinstance(grown, NonInferiorityResult) and isinstance(first, NonInferiorityResult)
    assert (
        isinstance(whole, NonInferiorityResult) and whole.verdict == "non-inferior"
    )  # a fresh look would pass
    assert (grown.basis, grown.units_used, grown.verdict) == ("fixed: first run", 100, first.verdict)
    assert first.verdict == "inconclusive" and grown.lower_bound_pts == first.lower_bound_pts
    assert "first run's 100 units" in verdict_sentence(grown)
