"""Power of a paired sign-off: the smallest drop it detects, and the n it takes to detect a given drop.

**What is compared.**  Per sample the paired difference of per-sample means ``d_i = x̄_i(test) −
x̄_i(control)`` (``evalpipe.stats.paired``).  Its *second moment* ``m = E[d_i²]`` is the noise measure
this module calls **discordance**: with one attempt per arm, ``d_i ∈ {−1, 0, +1}`` and ``m`` is exactly
the share of samples whose correctness differs between the two runs (McNemar's discordant pairs over
n); with repeats it is the mean squared difference of per-sample means.

**Noise model (Miller's decomposition).**  Miller, "Adding Error Bars to Evals" (arXiv 2411.00640,
2024), §3.1 and §5: the per-sample difference has a between-sample part (the true per-sample effects)
and a within-sample part (the answer-to-answer noise of each arm), and only the latter shrinks with
the number of attempts k::

    m0(k) = between + within / k          within = σ²_test + σ²_control (per attempt)

Miller's sample-size formula is ``n = (z_{α/2} + z_β)² (ω² + σ²_A/K_A + σ²_B/K_B) / δ²``.

**The alternative (what a regression of δ looks like).**  Miller's formula takes one variance for
both hypotheses.  On paired correctness that is not enough: a regression is itself made of flips, and
the test's denominator is the *observed* discordance, which includes them.  The model here: a drop of
δ turns a share δ of the samples from right to wrong in every attempt, on top of the noise —
``P(control-only right) = m0/2 + δ``, ``P(test-only right) = m0/2`` with one attempt, and in general
``m1 = E[d²] = m0 + δ``.  This "concentrated" regression is the conservative choice (a drop spread
thinly over all samples is easier to see with repeats).  With distinct null and alternative variances
the normal-theory sample size of the paired test is Connor (1987), "Sample size for testing
differences in proportions for the paired-sample design", *Biometrics* 43::

    n = [ z_{α/2} sqrt(m1) + z_β sqrt(m1 − δ²) ]² / δ²

(statsmodels ``normal_sample_size_one_tail`` with std_null = sqrt(m1), std_alternative =
sqrt(m1 − δ²); with equal variances it is Miller's formula).  It brackets the searches below.

**One attempt per arm: exact.**  Then the report's p-value is the exact conditional McNemar test
(statsmodels, ``evalpipe.stats.paired.exact_mcnemar_p``), and at n = 50 its discreteness matters (it needs at least
6 one-directional flips to reach p < 0.05 at all).  So for k = 1 the power is computed exactly: the
number of discordant pairs D ~ Binomial(n, m1), given D the control-only count ~ Binomial(D, (m0/2 + δ)/m1),
and the test rejects when ``2 · F_Binom(D, 1/2)(min count) ≤ α`` (statsmodels' p-value).  Power is
*directional* (the test rejects and the test arm is the worse one): "detects a drop".

**Repeats: normal theory, to second order.**  With k > 1 the p-value is the score test
``Σ(−d_i) > z_{α/2} sqrt(Σ d_i²)`` (``evalpipe.stats.paired``).  Connor's formula treats the denominator
as fixed; under a regression it is not (more flips raise both the numerator and Σ d_i²), and at the
n of a sign-off that makes Connor's power 4–8 points too low (simulated: 0.84–0.88 at its own MDE).
The power used here linearises the statistic by the delta method (van der Vaart, *Asymptotic
Statistics*, 1998, §3.1): with ``c = z_{α/2} / (2 sqrt(n m1))`` the test rejects when
``Σ u_i > z_{α/2} sqrt(n m1) − z_{α/2} n Var(d²) / (8 (n m1)^{3/2})`` with ``u_i = −d_i − c d_i²``,
``Var(u) = (m1 − δ²) − 2cδ(1 − m1) + c² Var(d²)`` (``Cov(d, d²) = −δ(1 − m1)``: the noise is
symmetric and a regressed sample has d = −1) and ``Var(d²) = M4 − m1²``, where the fourth moment is
bounded above (conservatively) by ``M4 ≤ between + within (3k − 1)/(2k³) + δ`` (between-sample
differences are at most ±1; for a sample answered k times per arm with per-attempt variance v,
``E[d⁴] = (2kv + 12k(k − 1)v²)/k⁴ ≤ 2v (3k − 1)/(2k³)`` since v ≤ 1/4).  As n grows c → 0 and this is
Connor's power.  The linearisation needs ``c ≤ 1/2`` (``n m1 ≥ z²_{α/2}``, about four expected units
of squared difference); below that the power is taken as 0, which only understates it (a power of
50 % or more already needs ``n m1 > z²``: the shift must be positive and ``m1 ≥ δ``), so the MDE and
the sample size are always computed by the second-order formula.  The simulation test finds 0.80 ± 0.03 at
this MDE for n = 30–400, k = 2–8.

**MDE** is the δ at which that power equals 80 % (two-sided α = 0.05), found by root-finding; the
inverse gives the smallest n at which the power reaches 80 % (bisection; the exact power is slightly
saw-toothed in n, so a smaller n can occasionally reach it too).  No finite-population correction:
samples are treated as draws from the benchmark's super-population, as in Miller (§2), which is
conservative for a split sampled close to its size.

**Where the noise comes from** (``NoiseModel.source``):

* ``aa`` — an A/A control (the control configuration run twice).  Both runs share every per-sample
  probability, so with one attempt the whole discordance is within-sample: ``within = ψ_AA``,
  ``between = 0``; repeats shrink it as ``ψ_AA / k``.
* ``ab`` — no A/A control: the observed A/B discordance stands in for the noise (conservative: it also
  contains the effect itself), counted as between-sample so that repeats are not credited.
* ``assumed`` — nothing measured.  Default ``between = 2 p (1 − p)`` at base accuracy p: the
  discordance of two runs that agree no more than chance (independent answers at accuracy p), i.e.
  pairing is assumed to buy nothing; counted as between-sample so repeats are not credited either.
  Two runs of one model are positively correlated, so real discordance is far lower (SmolLM2 on
  llama.cpp: 1 flip in 15).  The only larger value, ``2 min(p, 1 − p)`` (the two runs never wrong on
  the same sample), requires anti-correlated runs; near the ceiling it differs from 2p(1 − p) by the
  factor p only (0.080 vs 0.077 at p = 0.96).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq
from scipy.stats import binom, norm
from statsmodels.stats.power import normal_power_het, normal_sample_size_one_tail

from evalpipe.stats.repeats import per_sample_means

ALPHA = 0.05
TARGET_POWER = 0.80
MAX_SAMPLE_SIZE = 10_000_000

NoiseSource = Literal["aa", "ab", "assumed"]
PowerMethod = Literal["exact McNemar", "normal approximation (score test)"]


@dataclass(frozen=True)
class NoiseModel:
    """Second moment of the per-sample paired difference under no regression, split à la Miller."""

    between: float
    within: float
    source: NoiseSource
    basis: str

    def __post_init__(self) -> None:
        if self.between < 0 or self.within < 0 or self.between + self.within > 1:
            raise ValueError(f"noise components out of range: between={self.between}, within={self.within}")

    def second_moment(self, repeats: int = 1) -> float:
        """``m0(k) = between + within / k``: the discordance expected with k attempts per arm."""
        if repeats < 1:
            raise ValueError("repeats must be >= 1")
        return self.between + self.within / repeats


def noise_from_discordance(discordant: int, n: int, source: Literal["aa", "ab"]) -> NoiseModel:
    """Noise from one attempt per arm: ``discordant`` of ``n`` samples changed correctness (Miller 2024 §3.1
    split, module docstring: an A/A share is all within-sample, an A/B share all between-sample)."""
    if n <= 0 or not 0 <= discordant <= n:
        raise ValueError(f"discordant={discordant} outside [0, n={n}]")
    share = discordant / n
    basis = f"{'A/A' if source == 'aa' else 'A/B'} discordance {discordant}/{n}"
    if source == "aa":
        return NoiseModel(between=0.0, within=share, source="aa", basis=basis)
    return NoiseModel(between=share, within=0.0, source="ab", basis=basis)


def _arm_within(samples: Sequence[Sequence[float]]) -> float | None:
    """Mean within-sample variance per attempt (ddof=1) over samples with >= 2 attempts; None if none."""
    variances = [float(np.var(np.asarray(a, dtype=np.float64), ddof=1)) for a in samples if len(a) >= 2]
    return float(np.mean(variances)) if variances else None


def noise_from_runs(
    test: Sequence[Sequence[float]], control: Sequence[Sequence[float]], source: Literal["aa", "ab"]
) -> NoiseModel:
    """Noise measured on two paired runs with their attempts (k_i may differ per sample and arm).

    ``within`` is the sum over both arms of the mean unbiased within-sample variance per attempt
    (Miller §3.1: the sample variance of a sample's k answers estimates its conditional variance);
    an arm without repeats borrows the other arm's value.  ``between = max(0, mean d_i² − Σ_i
    (σ²_test/k_test,i + σ²_control/k_control,i)/n)``: the observed discordance minus the part the
    within-sample noise explains at the observed k.  Without repeats in either arm this is the
    one-attempt rule of ``noise_from_discordance`` (A/A: all within; A/B: all between).
    """
    if len(test) != len(control) or not test:
        raise ValueError("runs are not paired (different or zero sample counts)")
    d = per_sample_means(test) - per_sample_means(control)
    m2 = float(np.mean(np.square(d)))
    n = len(d)
    w_test, w_control = _arm_within(test), _arm_within(control)
    label = "A/A" if source == "aa" else "A/B"
    if w_test is None and w_control is None:
        basis = f"{label} mean squared difference {m2:.4f} over {n} samples, one attempt each"
        if source == "aa":
            return NoiseModel(between=0.0, within=m2, source=source, basis=basis)
        return NoiseModel(between=m2, within=0.0, source=source, basis=basis)
    w_test = w_control if w_test is None else w_test
    w_control = w_test if w_control is None else w_control
    assert w_test is not None and w_control is not None
    k_test = np.array([len(a) for a in test], dtype=np.float64)
    k_control = np.array([len(a) for a in control], dtype=np.float64)
    explained = float(np.mean(w_test / k_test + w_control / k_control))
    within = min(1.0, w_test + w_control)
    between = min(max(0.0, m2 - explained), 1.0 - within)
    basis = (
        f"{label} mean squared difference {m2:.4f} over {n} samples with repeats "
        f"(within-sample variance {within:.4f} per attempt, between {between:.4f})"
    )
    return NoiseModel(between=between, within=within, source=source, basis=basis)


def assumed_noise(base_accuracy: float) -> NoiseModel:
    """The conservative default when nothing is measured: ``between = 2p(1 − p)`` (module docstring)."""
    if not 0.0 <= base_accuracy <= 1.0:
        raise ValueError(f"base accuracy {base_accuracy} outside [0, 1]")
    share = 2.0 * base_accuracy * (1.0 - base_accuracy)
    basis = f"assumed discordance 2p(1-p) = {share:.3f} at accuracy {base_accuracy:.3f} (nothing measured)"
    return NoiseModel(between=share, within=0.0, source="assumed", basis=basis)


# ------------------------------------------------------------------------------------------ power


def mcnemar_critical_counts(n: int, alpha: float = ALPHA) -> NDArray[np.int64]:
    """For D = 0..n discordant pairs, the largest minority count c with exact McNemar p ≤ α (−1: none).

    The p-value is statsmodels' ``min(1, 2 · binom.cdf(min(b, c), b + c, 1/2))``; the same expression
    decides here, so a count is critical exactly when statsmodels would report p ≤ α.
    """
    total = np.arange(n + 1)
    crit = np.nan_to_num(binom.ppf(alpha / 2.0, total, 0.5), nan=0.0).astype(np.int64)
    for _ in range(3):  # ppf lands within one step of the boundary; settle it with the p-value itself
        too_high = (crit >= 0) & (2.0 * binom.cdf(crit, total, 0.5) > alpha)
        crit = np.where(too_high, crit - 1, crit)
        next_ok = (crit + 1 < (total + 1) / 2.0) & (2.0 * binom.cdf(crit + 1, total, 0.5) <= alpha)
        crit = np.where(next_ok, crit + 1, crit)
    result: NDArray[np.int64] = crit.astype(np.int64)
    return result


def exact_drop_power(n: int, noise_discordance: float, drop: float, alpha: float = ALPHA) -> float:
    """P(exact McNemar rejects at α and the test arm is the worse one), one attempt per arm: the exact sum
    over D ~ Binomial(n, m1) and the control-only count ~ Binomial(D, (m0/2 + δ)/m1) (module docstring).

    Control-only pairs occur with probability ``noise_discordance/2 + drop``, test-only pairs with
    ``noise_discordance/2`` (module docstring).
    """
    p_drop, p_gain = noise_discordance / 2.0 + drop, noise_discordance / 2.0
    discordance = p_drop + p_gain
    if n < 1 or discordance <= 0.0:
        return 0.0
    if p_drop > 1.0 + 1e-12:
        raise ValueError(f"drop {drop} too large for discordance {noise_discordance}")
    total = np.arange(n + 1)
    crit = mcnemar_critical_counts(n, alpha)
    share_drop = min(1.0, p_drop / discordance)
    # reject with the drop visible  <=>  test-only count <= crit  <=>  control-only >= D - crit
    reject = np.where(crit >= 0, binom.sf(total - crit - 1, total, share_drop), 0.0)
    return float(np.sum(binom.pmf(total, n, min(1.0, discordance)) * reject))


def connor_sample_size(
    drop: float, noise_second_moment: float, alpha: float = ALPHA, power: float = TARGET_POWER
) -> float:
    """Connor's (1987) normal-theory n for a drop (statsmodels ``normal_sample_size_one_tail``)."""
    m1 = noise_second_moment + drop
    return float(
        normal_sample_size_one_tail(
            drop, power, alpha / 2.0, std_null=m1**0.5, std_alternative=max(m1 - drop * drop, 0.0) ** 0.5
        )
    )


def connor_power(n: float, drop: float, noise_second_moment: float, alpha: float = ALPHA) -> float:
    """Connor's (1987) first-order power (statsmodels ``normal_power_het``); the limit of the power used."""
    m1 = noise_second_moment + drop
    if drop <= 0.0 or n <= 0:
        return 0.0
    std_alternative = max(m1 - drop * drop, 1e-15) ** 0.5
    return float(
        normal_power_het(
            drop, n, alpha / 2.0, std_null=m1**0.5, std_alternative=std_alternative, alternative="larger"
        )
    )


def normal_drop_power(n: float, drop: float, noise: NoiseModel, repeats: int, alpha: float = ALPHA) -> float:
    """Second-order normal power of the paired score test with repeats (module docstring)."""
    if drop <= 0.0 or n <= 0:
        return 0.0
    z = float(norm.isf(alpha / 2.0))
    m0 = noise.second_moment(repeats)
    m1 = m0 + drop
    if n * m1 < z * z:  # c > 1/2: the linearisation does not hold; counted as no power (conservative)
        return 0.0
    fourth = noise.between + noise.within * (3 * repeats - 1) / (2 * repeats**3) + drop
    var_square = max(0.0, fourth - m1 * m1)
    c = z / (2.0 * (n * m1) ** 0.5)
    var_u = (m1 - drop * drop) - 2.0 * c * drop * (1.0 - m1) + c * c * var_square
    shift = n * drop - z * (n * m1) ** 0.5 + z * n * var_square / (8.0 * (n * m1) ** 1.5)
    return float(norm.cdf(shift / (n * max(var_u, 1e-15)) ** 0.5))


def largest_drop(noise_second_moment: float, base_accuracy: float | None = None) -> float:
    """The largest δ the model admits: ``m0 + δ ≤ 1`` and ``m0/2 + δ ≤ p`` (the drop needs right answers)."""
    ceiling = 1.0 if base_accuracy is None else base_accuracy
    return min(1.0 - noise_second_moment, ceiling - noise_second_moment / 2.0)


def drop_power(n: int, drop: float, noise: NoiseModel, repeats: int = 1, alpha: float = ALPHA) -> float:
    """Power to detect a drop of ``drop`` with n samples and ``repeats`` attempts per arm: exact McNemar
    power at one attempt, the second-order (delta-method) score-test power with repeats (module docstring)."""
    if repeats == 1:
        return exact_drop_power(n, noise.second_moment(1), drop, alpha)
    return normal_drop_power(n, drop, noise, repeats, alpha)


@dataclass(frozen=True)
class MinimumDetectableEffect:
    """The smallest drop detected with the target power; ``mde`` None: no admissible drop is."""

    mde: float | None
    n: int
    repeats: int
    noise: NoiseModel
    noise_second_moment: float
    method: PowerMethod
    alpha: float
    power: float

    @property
    def mde_pts(self) -> float | None:
        return None if self.mde is None else 100.0 * self.mde


def _method(repeats: int) -> PowerMethod:
    return "exact McNemar" if repeats == 1 else "normal approximation (score test)"


def minimum_detectable_effect(
    n: int,
    noise: NoiseModel,
    repeats: int = 1,
    *,
    alpha: float = ALPHA,
    power: float = TARGET_POWER,
    base_accuracy: float | None = None,
) -> MinimumDetectableEffect:
    """The drop δ at which ``drop_power`` equals ``power`` (brentq; power rises with δ)."""
    m0 = noise.second_moment(repeats)
    top = largest_drop(m0, base_accuracy)
    mde: float | None = None
    if n >= 1 and top > 0.0 and drop_power(n, top, noise, repeats, alpha) >= power:

        def shortfall(delta: float) -> float:
            return drop_power(n, delta, noise, repeats, alpha) - power

        mde = float(brentq(shortfall, 1e-9, top, xtol=1e-9))
    return MinimumDetectableEffect(
        mde=mde,
        n=n,
        repeats=repeats,
        noise=noise,
        noise_second_moment=m0,
        method=_method(repeats),
        alpha=alpha,
        power=power,
    )


@dataclass(frozen=True)
class SampleSizeNeeded:
    """The n a target MDE asks for, and whether the benchmark's population can supply it."""

    target: float
    n_needed: int | None
    repeats: int
    noise: NoiseModel
    method: PowerMethod
    population: int | None

    @property
    def reachable(self) -> bool | None:
        if self.n_needed is None:
            return False
        return None if self.population is None else self.n_needed <= self.population


def sample_size_for_mde(
    target: float,
    noise: NoiseModel,
    repeats: int = 1,
    *,
    alpha: float = ALPHA,
    power: float = TARGET_POWER,
    base_accuracy: float | None = None,
    population: int | None = None,
) -> SampleSizeNeeded:
    """Smallest n whose MDE is ≤ ``target`` (None when ``target`` exceeds the largest admissible drop):
    bisection on ``drop_power``, bracketed by Connor's (1987) n (module docstring)."""
    if target <= 0:
        raise ValueError("target MDE must be positive")
    m0 = noise.second_moment(repeats)

    def done(n_needed: int | None) -> SampleSizeNeeded:
        return SampleSizeNeeded(
            target=target,
            n_needed=n_needed,
            repeats=repeats,
            noise=noise,
            method=_method(repeats),
            population=population,
        )

    if target > largest_drop(m0, base_accuracy):
        return done(None)
    lo, hi = 1, max(2, math.ceil(connor_sample_size(target, m0, alpha, power)))
    while drop_power(hi, target, noise, repeats, alpha) < power:
        lo, hi = hi, 2 * hi
        if hi > MAX_SAMPLE_SIZE:
            return done(None)
    if drop_power(lo, target, noise, repeats, alpha) >= power:
        return done(lo)
    while hi - lo > 1:  # invariant: power(lo) < target power <= power(hi)
        mid = (lo + hi) // 2
        if drop_power(mid, target, noise, repeats, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return done(hi)
