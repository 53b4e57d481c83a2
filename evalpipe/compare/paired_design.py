"""What a paired comparison is asked: the two arms, the A/A pair beside them (if one ran), the gate policy every
block is judged by, and the bootstrap — one typed object (``PairedDesign``) instead of a long signature.

A comparison with no arm under test — B is A's repeat, the record of the server's own noise — is a different
question, asked by its own function (``compare_noise``): it takes the arms, a gate policy and a bootstrap but
no A/A pair, since the arms are that pair.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalpipe.config.gates import DesignAssumption
from evalpipe.config.models import RunConfig, SequentialConfig

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261202

#: A block's name (a benchmark, a pool, ``all`` for the overall block) → a number in points, or None.
PointsOf = Callable[[str], float | None]


def _no_points(_block: str) -> float | None:
    return None


@dataclass(frozen=True)
class Arms:
    """The two run directories compared: ``test`` (A, under test) and ``control`` (B), with the labels their
    reports use (None: the run's own variant label, else "A" / "B")."""

    test: Path
    control: Path
    test_label: str | None = None
    control_label: str | None = None


@dataclass(frozen=True)
class AAPair:
    """The A/A noise beside an A/B comparison: ``repeat``, a repeat run (``repeat_of``) of ``of`` (None: the
    control), labelled ``label`` (None: the run's own label, else "B'")."""

    repeat: Path
    of: Path | None = None
    label: str | None = None


@dataclass(frozen=True)
class GatePolicy:
    """How every block is judged: ``margins(block)`` its non-inferiority margin in points (None: no gate),
    ``must_catch(block)`` the drop its operating characteristic reports, ``alpha`` the fixed look's one-sided
    error (None: half the bootstrap's two-sided complement), ``sequential`` the unit-by-unit rule (every block
    with a margin but the length buckets; not used when the arms are an A/A pair), ``pools`` (name → member
    benchmarks, each judged as one block) and ``assumed`` (what each block's design assumes, config
    ``design:``; None: run A's own config copy's), checked against the discordance measured."""

    margins: PointsOf = _no_points
    must_catch: PointsOf = _no_points
    alpha: float | None = None
    sequential: SequentialConfig | None = None
    pools: Mapping[str, list[str]] = field(default_factory=dict)
    assumed: Mapping[str, DesignAssumption] | None = None

    @classmethod
    def of(cls, cfg: RunConfig) -> GatePolicy:
        """A run's gate policy from its config: ``gates:`` margins and must-catch drops (the overall block is
        ``overall`` there), ``generation.sequential``, ``pools:`` and ``design:``."""
        return cls(
            margins=lambda block: cfg.gates.points_for("non_inferiority_margin_pts", block),
            must_catch=lambda block: cfg.gates.must_catch_drop_pts.get("overall" if block == "all" else block),
            sequential=cfg.generation.sequential,
            pools=cfg.pools,
            assumed=cfg.design,
        )


@dataclass(frozen=True)
class Bootstrap:
    """The paired bootstrap of every block's difference: resamples, seed and the intervals' confidence."""

    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = BOOTSTRAP_SEED
    confidence: float = 0.95


@dataclass(frozen=True)
class PairedDesign:
    """One A/B comparison: the arms, the A/A pair when one ran, the gate policy and the bootstrap."""

    arms: Arms
    aa: AAPair | None = None
    gate: GatePolicy = field(default_factory=GatePolicy)
    bootstrap: Bootstrap = field(default_factory=Bootstrap)
