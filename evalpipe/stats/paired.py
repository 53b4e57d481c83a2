"""Two runs on the same samples: the paired difference, exact McNemar, the paired bootstrap, excess discordance.

Per sample ``i`` the difference of per-sample means ``d_i = x̄_i(test) − x̄_i(control)``; the
difference of the two scores is their mean ``d̄`` (test − control: a regression is negative).

* **Standard error** — Miller, "Adding Error Bars to Evals" (arXiv 2411.00640, 2024), §4.2 (paired
  differences): ``SE = sqrt( Σ_i (d_i − d̄)² / (n (n − 1)) )``, i.e. ``sqrt((Var(x_A) + Var(x_B) −
  2 Cov(x_A, x_B)) / n)`` from the question-level differences.
* **95 % interval** — the adjusted Wald interval of Bonett & Price (2012), "Adjusted Wald confidence
  interval for a difference of binomial proportions based on paired data", *J. Educ. Behav. Stat.*
  37(4): with ``f12``/``f21`` the two discordant counts, ``p̃12 = (f12 + 1)/(n + 2)``,
  ``p̃21 = (f21 + 1)/(n + 2)`` and ``(p̃12 − p̃21) ± z sqrt((p̃12 + p̃21 − (p̃12 − p̃21)²)/(n + 2))``.
  That is algebraically the Wald interval of the paired mean after adding one pseudo-pair with
  ``d = +1`` and one with ``d = −1`` (plug-in variance over n + 2), which is how it is computed here, so
  the same interval applies unchanged to per-sample means with repeats.  The plain Wald interval
  collapses to a point when no pair is discordant (50 identical answers would "prove" a 0-pt
  difference); the adjusted one keeps a width of about ±5 pts at n = 50, which is what makes a
  non-inferiority gate on its lower bound safe.
* **Test** — the p-value shown next to the difference, chosen by the design, not by the data.  With
  one attempt per sample in each arm and 0/1 scores the data are a 2×2 table and the test is the
  exact (conditional, binomial) McNemar test via statsmodels (McNemar 1947, "Note on the sampling error
  of the difference between correlated proportions or percentages", *Psychometrika* 12; exact form: the
  discordant counts are Binomial(f12 + f21, 1/2) under the null; lm-evaluation-harness issue #3831: the
  paired test for two runs on the same items) — ``exact_mcnemar_p``, the only McNemar in evalpipe.  Otherwise it is the score (sign-flip) statistic
  ``z = Σ d_i / sqrt(Σ d_i²)`` against the normal distribution: its denominator is the null variance,
  and on 0/±1 differences it is exactly McNemar's asymptotic statistic ``(f12 − f21)/sqrt(f12 + f21)``.

The minimum detectable effect (``evalpipe.stats.power``) is computed for the same two tests.  (The
lm-evaluation-harness #3831 thread also argues for the mid-p McNemar variant, which gains power at
small discordant counts; evalpipe keeps the exact test, the one compare.json prints.)

``second_moment = (1/n) Σ d_i²`` is the generalised discordance: with one attempt per arm it is the
share of discordant samples; it is the quantity the power calculation (``evalpipe.stats.power``) needs.

* **Paired bootstrap** — the interval compare.json prints next to the first-attempt difference: the
  percentile bootstrap (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, §13.3) of the mean
  of ``d_i = a_i − b_i``, resampling samples (pairs) with replacement so that each resample keeps the
  pairing (lm-evaluation-harness ``paired_bootstrap_test`` resamples the same way).  Seeded numpy, so a
  comparison is repeatable.  Coverage by simulation (``tests/stats/test_stats_paired.py``): 0.94–0.96 with 15 or
  more expected discordant pairs; about 0.86 with 3 (a resample without discordant pairs has no spread), which
  is why the non-inferiority verdict reads the Bonett–Price interval, not this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import norm
from statsmodels.stats.contingency_tables import mcnemar

from evalpipe.stats.intervals import two_sided_z
from evalpipe.stats.repeats import per_sample_means

PairedTest = Literal["exact McNemar", "paired score test"]


@dataclass(frozen=True)
class PairedDifference:
    """Test − control on the same samples (proportions, not points)."""

    n_pairs: int
    test_mean: float
    control_mean: float
    difference: float
    standard_error: float
    interval: tuple[float, float]
    test_better: int
    control_better: int
    second_moment: float
    binary: bool
    p_value: float
    test: PairedTest


def exact_mcnemar_p(first_only: int, second_only: int) -> float:
    """Two-sided exact McNemar p-value on the discordant counts (module docstring; statsmodels
    ``mcnemar(exact=True)``: ``min(1, 2 · F_Binom(f12 + f21, 1/2)(min(f12, f21)))``); 1.0 with none."""
    if first_only + second_only == 0:
        return 1.0
    return float(mcnemar([[0, first_only], [second_only, 0]], exact=True).pvalue)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """Percentile-bootstrap interval of ``mean(a − b)``, resampling pairs (Efron & Tibshirani 1993, §13.3;
    module docstring): ``resamples`` draws of n pair indices with replacement from numpy's
    ``default_rng(seed)``, the ``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles of their means."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(resamples, len(d)))
    means = d[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def adjusted_wald_interval(
    differences: Sequence[float] | np.ndarray, confidence: float = 0.95
) -> tuple[float, float]:
    """Bonett–Price (2012) adjusted Wald interval of the mean paired difference (module docstring)."""
    d = np.asarray(differences, dtype=np.float64)
    n_adj = len(d) + 2
    centre = float(d.sum()) / n_adj
    second = (float(np.square(d).sum()) + 2.0) / n_adj
    half = two_sided_z(confidence) * max(0.0, second - centre * centre) ** 0.5 / n_adj**0.5
    return max(-1.0, centre - half), min(1.0, centre + half)


def paired_difference(
    test: Sequence[Sequence[float]],
    control: Sequence[Sequence[float]],
    confidence: float = 0.95,
) -> PairedDifference:
    """Paired difference of two runs: ``test[i]`` and ``control[i]`` are the attempts of the same sample.

    Miller's (2024, §4.2) standard error, the Bonett–Price interval, and the exact McNemar or paired score
    test (module docstring)."""
    if len(test) != len(control):
        raise ValueError(f"runs are not paired: {len(test)} test samples vs {len(control)} control samples")
    if not test:
        raise ValueError("no samples")
    x_test, x_control = per_sample_means(test), per_sample_means(control)
    d = x_test - x_control
    n = len(d)
    mean = float(d.mean())
    se = float(np.std(d, ddof=1)) / n**0.5 if n >= 2 else 1.0
    test_better, control_better = int(np.sum(d > 0)), int(np.sum(d < 0))
    single = all(len(a) == 1 for a in test) and all(len(a) == 1 for a in control)
    binary = single and bool(np.all(np.isin(d, (-1.0, 0.0, 1.0))) and np.all(np.isin(x_test, (0.0, 1.0))))
    test_name: PairedTest
    if binary:
        p_value, test_name = exact_mcnemar_p(test_better, control_better), "exact McNemar"
    else:
        ss = float(np.square(d).sum())
        p_value = 1.0 if ss == 0.0 else float(min(1.0, 2.0 * norm.sf(abs(float(d.sum())) / ss**0.5)))
        test_name = "paired score test"
    return PairedDifference(
        n_pairs=n,
        test_mean=float(x_test.mean()),
        control_mean=float(x_control.mean()),
        difference=mean,
        standard_error=se,
        interval=adjusted_wald_interval(d, confidence),
        test_better=test_better,
        control_better=control_better,
        second_moment=float(np.mean(np.square(d))),
        binary=binary,
        p_value=p_value,
        test=test_name,
    )


@dataclass(frozen=True)
class ExcessDiscordance:
    """Does A/B change more answers than the server's own noise (A/A), on the same samples?"""

    n_samples: int
    ab_changed: int
    aa_changed: int
    ab_only: int
    aa_only: int
    p_value: float

    @property
    def exceeds(self) -> bool:
        """A/B changed significantly more samples than A/A (two-sided α = 0.05, in that direction)."""
        return self.p_value <= 0.05 and self.ab_only > self.aa_only


def excess_discordance(ab_changed: Sequence[bool], aa_changed: Sequence[bool]) -> ExcessDiscordance:
    """Exact McNemar test on the per-sample "changed" indicators of the A/B and the A/A pair.

    Both pairs share the control run and the samples, so whether a sample's correctness changed is a
    paired binary outcome; the samples changed by A/B only against those changed by A/A only are the
    discordant pairs (same test as the paired difference, on a different 0/1 variable).
    """
    if len(ab_changed) != len(aa_changed):
        raise ValueError(f"not the same samples: {len(ab_changed)} A/B vs {len(aa_changed)} A/A")
    ab_only = sum(1 for ab, aa in zip(ab_changed, aa_changed, strict=True) if ab and not aa)
    aa_only = sum(1 for ab, aa in zip(ab_changed, aa_changed, strict=True) if aa and not ab)
    return ExcessDiscordance(
        n_samples=len(ab_changed),
        ab_changed=sum(1 for x in ab_changed if x),
        aa_changed=sum(1 for x in aa_changed if x),
        ab_only=ab_only,
        aa_only=aa_only,
        p_value=exact_mcnemar_p(ab_only, aa_only),
    )
