"""evalpipe.words.compare: the words of one compare.json block, made from its numbers (the line,
the MDE and its basis, the gate's verdict, the power sentences in compare.md's order)."""

from __future__ import annotations

from typing import Any

from evalpipe.artifacts.schema.compare import (
    Discordance,
    MdeBasis,
    NoiseComparison,
    NonInferiorityResult,
    PairedBenchmark,
    ScoreWithInterval,
)
from evalpipe.words.compare import (
    block_mde_sentence,
    mde_basis_text,
    paired_line,
    power_sentences,
    verdict_sentence,
)


def _block(**fields: Any) -> PairedBenchmark:
    score = ScoreWithInterval(correct=4, scored=5, score=0.8, ci_low=0.4, ci_high=0.96)
    base: dict[str, Any] = dict(
        benchmark="gsm8k", n_pairs=5, a=score, b=score, difference=-0.2, diff_ci_low=-0.6, diff_ci_high=0.0,
        both_correct=4, a_only=0, b_only=1, both_wrong=0, mcnemar_p=1.0, flips=[],
    )  # fmt: skip
    return PairedBenchmark(**{**base, **fields})


BASIS = MdeBasis(noise="A/A", second_moment=0.025, method="exact McNemar", repeats=1, power=0.8, alpha=0.05)


def test_the_line_counts_flips_and_says_when_the_numbers_are_the_first_attempts() -> None:
    assert paired_line(_block(), "fp8", "bf16") == (
        "fp8 vs bf16 (gsm8k): -20.0 pts (bootstrap 95 % [-60.0, +0.0], descriptive), McNemar p = 1, 0 flips"
    )
    repeated = _block(repeats=4, mcnemar_p=0.0312)
    assert paired_line(repeated, "fp8", "bf16") == (
        "fp8 vs bf16 (gsm8k): -20.0 pts (bootstrap 95 % [-60.0, +0.0], descriptive), McNemar p = 0.0312, 0 flips (first of 4 attempts)"
    )
    empty = _block(n_pairs=0, difference=None, diff_ci_low=None, diff_ci_high=None, mcnemar_p=None)
    assert paired_line(empty, "fp8", "bf16") == "fp8 vs bf16 (gsm8k): no samples"


def test_the_mde_basis_names_the_noise_pair_and_its_split_with_repeats() -> None:
    assert mde_basis_text(BASIS, 40) == (
        "A/A mean squared difference 0.0250 over 40 samples, one attempt each; exact McNemar, 1 attempt(s) per arm"
    )
    repeated = BASIS.model_copy(
        update={"within": 0.0312, "between": 0.0, "method": "normal approximation (score test)", "repeats": 4}
    )
    assert mde_basis_text(repeated, 40) == (
        "A/A mean squared difference 0.0250 over 40 samples with repeats (within-sample variance 0.0312 per "
        "attempt, between 0.0000); normal approximation (score test), 4 attempt(s) per arm"
    )
    assert mde_basis_text(None, 40) is None


def test_the_mde_sentence_needs_a_computed_mde() -> None:
    assert block_mde_sentence(_block()) is None  # no basis: no MDE was computed (an empty block)
    assert block_mde_sentence(_block(mde_basis=BASIS)) == (
        "this sample (5 samples) cannot detect a drop of any size with 80 % power; no regression can be ruled out"
    )
    assert block_mde_sentence(_block(mde_basis=BASIS, mde_pts=7.44)) == (
        "this sample detects a drop of ≥ 7.4 pts with 80 % power; smaller regressions cannot be ruled out"
    )


def test_a_verdict_without_a_basis_reads_as_the_fixed_interval_judged_it() -> None:
    old = NonInferiorityResult(
        margin_pts=2.0, lower_bound_pts=-1.3, upper_bound_pts=2.0, verdict="non-inferior"
    )
    assert verdict_sentence(old) == "non-inferior within 2 pts (95 % lower bound of test − control: -1.3 pts)"
    gated = old.model_copy(update={"basis": "fixed", "alpha": 0.025, "critical_value": 2.42})
    assert verdict_sentence(gated) == (
        "non-inferior within 2 pts (fixed look: test − control in [-1.3, +2.0] pts at z* = 2.42, one-sided α 0.025)"
    )


def test_power_sentences_in_compare_md_order() -> None:
    aa = Discordance(n_pairs=5, first_better=0, second_better=0, discordant=0, second_moment=0.0)
    noise = NoiseComparison(
        ab_changed=1, aa_changed=0, ab_only=1, aa_only=0, n_samples=5, p_value=1.0, exceeds=False
    )
    verdict = NonInferiorityResult(
        margin_pts=99.0, lower_bound_pts=-61.6, upper_bound_pts=33.0, verdict="non-inferior", basis="fixed"
    )
    block = _block(aa_discordant=aa, mde_basis=BASIS, noise_vs_ab=noise, non_inferiority=verdict)
    said = power_sentences(block)
    assert [s.split(" ")[0] for s in said] == ["A/A:", "this", "A/B", "non-inferior"]
    assert said[2] == (
        "A/B changed 1 of 5 answers, the A/A control 0: not distinguishable from the server's own noise "
        "(exact McNemar p = 1)"
    )
    assert power_sentences(_block()) == []
