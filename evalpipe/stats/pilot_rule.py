"""The internal pilot's rule (``generation.sequential.pilot``): what share of a block is the pilot, and the
attempts its pooled discordance gives the remaining units.  Plain Python: the run decides with it without
importing numpy; ``evalpipe.stats.pilot`` argues the rule and simulates the path it makes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PilotRule:
    """The rule declared before the first unit is sent (``generation.sequential.pilot``)."""

    share: float
    threshold: float
    attempts: int

    def __post_init__(self) -> None:
        if not 0.0 < self.share < 1.0:
            raise ValueError(f"pilot share must lie in (0, 1), got {self.share}")
        if self.threshold <= 0.0:
            raise ValueError(f"pilot threshold must be > 0, got {self.threshold}")
        if self.attempts < 2:
            raise ValueError(f"pilot attempts must be >= 2, got {self.attempts}")

    def pilot_units(self, n: int) -> int:
        """``K``: the block's first units (of the ``n`` that remain after the drops) that form its pilot."""
        return min(n, max(1, round(self.share * n)))

    def attempts_after(self, discordant: int, expected: float) -> int:
        """Attempts per remaining unit: ``attempts`` when the pooled pilot's discordant units exceed
        ``threshold × expected`` (``expected``: ``Σ K_b 2p_b(1 − p_b)`` over the judged pilot units), else 1.
        With no judged pilot unit (every block crossed at once, or nothing left) there is nothing to size: 1."""
        if expected <= 0.0:
            return 1
        return self.attempts if discordant / expected > self.threshold else 1


def chance_discordance(accuracy: float) -> float:
    """``2p(1 − p)``: how often two independent answers at accuracy p disagree."""
    return 2.0 * accuracy * (1.0 - accuracy)

