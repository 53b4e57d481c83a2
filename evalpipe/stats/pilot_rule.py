"""The internal pilot's rule (``generation.sequential.pilot``): what share of a block is the pilot, which of its
units are asked twice to measure how far attempts of one unit agree, and the attempts the pooled pilot gives the
remaining units.  Plain Python: the run decides with it without importing numpy; ``evalpipe.stats.pilot`` argues
the rule and simulates the path it makes.

**Within and between.**  A unit's paired difference with k attempts per arm has variance ``ω² + τ²/k``
(``evalpipe.stats.power``'s ``between`` and ``within``, Miller 2024 §3.1): attempts average the within-unit part
τ² only.  Two attempts ``d₁, d₂`` of one unit estimate it: ``E[(d₁ − d₂)²/2] = τ²`` (the within-group mean square
of the one-way random-effects ANOVA with two observations per group, Searle, Casella & McCulloch, *Variance
Components*, Wiley 1992, §3.5), and the first attempts of every judged pilot unit estimate the whole,
``E[d₁²] = ω² + τ² + Δ²`` (``d ∈ {−1, 0, 1}``: ``d₁²`` is 1 on a discordant unit).  Their ratio is the **within
share** ``w = τ²/(ω² + τ²)`` (= 1 − ρ, ρ the correlation of two attempts of one unit; a regression's ``Δ²`` only
lowers it).  The one-attempt discordance ``R = discordant / Σ K_b 2p_b(1 − p_b)`` (the chance level at each
block's design accuracy) scales to ``R (1 − w + w/k)`` at k attempts; the e-processes read every unit of the
block, the pilot's at one attempt and the rest's at k, so the noise the verdict carries is the average
``R (s + (1 − s)(1 − w + w/k))`` over its units (s: the pilot's share).

**The rule.**  ``threshold`` is the noise at which one attempt per unit reaches the sign-off's target.  At or below
it: one attempt.  Above it: the fewest k whose average noise at the measured w is at most the threshold; when
none is, the most attempts if they reach it at ``w + one standard error`` (``√(var((d₁ − d₂)²/2) / m) / (d̄₁²)``
over the m twice-asked units: the measurement cannot rule out that they reach the target, and a missed target
costs more than the tokens); else one — the disagreement is between units, which attempts cannot average, and
the run says what would reach the target instead.  With ρ = 1 every pair agrees, the standard error is 0 and
nothing is bought.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PilotCounts:
    """What the judged pilot units of one or several blocks measured: ``judged`` units, ``discordant`` of them
    (first attempts differ), ``expected`` = Σ judged × 2p(1 − p), and over the judged twice-asked units
    (``paired``) the sums of ``x = (d₁ − d₂)²/2`` (``within``) and of ``x²`` (``within_squares``)."""

    judged: int
    discordant: int
    expected: float
    paired: int
    within: float
    within_squares: float

    def __add__(self, other: PilotCounts) -> PilotCounts:
        return PilotCounts(
            self.judged + other.judged,
            self.discordant + other.discordant,
            self.expected + other.expected,
            self.paired + other.paired,
            self.within + other.within,
            self.within_squares + other.within_squares,
        )

    @property
    def ratio(self) -> float | None:
        """``R``: the one-attempt discordance as a multiple of the chance level (None: nothing judged)."""
        return self.discordant / self.expected if self.expected > 0.0 else None

    def within_share(self, standard_errors: float = 0.0) -> float | None:
        """``w = mean(x) / mean(d₁²)`` (module docstring) plus ``standard_errors`` of its standard error, clipped
        to [0, 1]; None: no twice-asked unit judged, or no judged unit discordant (nothing to split)."""
        if self.paired == 0 or self.discordant == 0:
            return None
        total = self.discordant / self.judged
        mean = self.within / self.paired
        spread = max(0.0, self.within_squares / self.paired - mean * mean)
        w = (mean + standard_errors * math.sqrt(spread / self.paired)) / total
        return min(1.0, max(0.0, w))


@dataclass(frozen=True)
class PilotRule:
    """The rule declared before the first unit is sent (``generation.sequential.pilot``)."""

    share: float
    threshold: float
    attempts: int
    agreement: float

    def __post_init__(self) -> None:
        if not 0.0 < self.share < 1.0:
            raise ValueError(f"pilot share must lie in (0, 1), got {self.share}")
        if self.threshold <= 0.0:
            raise ValueError(f"pilot threshold must be > 0, got {self.threshold}")
        if self.attempts < 2:
            raise ValueError(f"pilot attempts must be >= 2, got {self.attempts}")
        if not 0.0 < self.agreement <= 1.0:
            raise ValueError(f"pilot agreement must lie in (0, 1], got {self.agreement}")

    def pilot_units(self, n: int) -> int:
        """``K``: the block's first units (of the ``n`` that remain after the drops) that form its pilot."""
        return min(n, max(1, round(self.share * n)))

    def agreement_units(self, pilot_units: int) -> int:
        """The pilot's first units asked twice in every arm (``agreement`` × K, at least one of a pilot)."""
        return min(pilot_units, max(1, round(self.agreement * pilot_units))) if pilot_units > 0 else 0

    def effective_ratio(
        self, counts: PilotCounts, attempts: int, standard_errors: float = 0.0
    ) -> float | None:
        """``R (s + (1 − s)(1 − w + w/k))``: the noise of the block's units, the pilot's at one attempt and the
        rest's at ``attempts`` per arm, as a multiple of the chance level (module docstring), at the within share
        plus ``standard_errors`` of its error; None when R or w is unmeasured."""
        ratio, w = counts.ratio, counts.within_share(standard_errors)
        if ratio is None or w is None:
            return None
        return ratio * (self.share + (1.0 - self.share) * (1.0 - w + w / attempts))

    def attempts_after(self, counts: PilotCounts) -> int:
        """Attempts per remaining unit (module docstring, "The rule"): 1 at or below the threshold; else the
        fewest k in ``[2, attempts]`` whose ``effective_ratio`` reaches it, else ``attempts`` if they reach it one
        standard error of w up, else 1 (the disagreement is between units, or nothing measured the split)."""
        ratio = counts.ratio
        if ratio is None or ratio <= self.threshold:
            return 1
        for k in range(2, self.attempts + 1):
            effective = self.effective_ratio(counts, k)
            if effective is None:
                return 1
            if effective <= self.threshold:
                return k
        optimistic = self.effective_ratio(counts, self.attempts, standard_errors=1.0)
        return self.attempts if optimistic is not None and optimistic <= self.threshold else 1


def decide(rule: PilotRule, blocks: Sequence[PilotCounts]) -> tuple[PilotCounts, int]:
    """The one decision of a run: every block's pilot pooled (the blocks share one choice of attempts), and the
    rule on the pool — the run's (``evalpipe.run.pilot``) and every simulated path's (``evalpipe.stats.pilot``)."""
    pooled = PilotCounts(0, 0, 0.0, 0, 0.0, 0.0)
    for counts in blocks:
        pooled = pooled + counts
    return pooled, rule.attempts_after(pooled)


def chance_discordance(accuracy: float) -> float:
    """``2p(1 − p)``: how often two independent answers at accuracy p disagree."""
    return 2.0 * accuracy * (1.0 - accuracy)
