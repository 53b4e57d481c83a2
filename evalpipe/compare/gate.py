"""A paired block's gate: the one rule's verdict (``evalpipe.stats.operating``) and its operating
characteristic at no regression, the margin and the must-catch drop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from evalpipe.artifacts.schema.compare import (
    Discordance,
    NonInferiorityResult,
    OperatingCharacteristic,
    OperatingPoint,
)
from evalpipe.artifacts.schema.outcomes import attempt_states
from evalpipe.compare.sequential import ordered_units
from evalpipe.compare.units import BlockGate, PairedOutcomes
from evalpipe.hashing import generation_sizes

if TYPE_CHECKING:
    from evalpipe.stats.operating import GateDesign

OC_PATHS = 4000
OC_SEED = 20261205


def gate_fields(
    keys: list[tuple[str, str, str]], pair: PairedOutcomes, gate: BlockGate, fields: Mapping[str, object]
) -> dict[str, object]:
    """The gate's decision (``evalpipe.stats.operating.gate_verdict``: the fixed look at ``gate.fixed_alpha``,
    or the e-processes of ``gate.sequential`` and, when they never crossed, one fixed look at the rest of α) as
    ``non_inferiority`` — its verdict and the interval beside it come from that one object — and the design's
    operating characteristic at the discordance measured here (``fields``' A/A pair when there is one, else
    its A/B pair) as ``operating``.  Empty without keys or a margin.

    After ``--extend`` (``gate.plan_sizes``: units per generation) a sequential block's e-processes continue
    over the generations with no second look; a fixed design's look stays at its first run's units (the look
    spent α there, and ``evalpipe run --extend`` refuses to grow a fixed-design gate)."""
    # import cost: numpy, scipy (~255 modules), only on this path
    from evalpipe.stats.operating import gate_verdict

    if not keys or gate.margin_pts is None:
        return {}
    by_unit = {k[:2]: k for k in keys}
    sizes = gate.plan_sizes if gate.plan_sizes is not None else generation_sizes(by_unit, pair.generations)
    extended = len(sizes) > 1
    seed = gate.sequential[1] if gate.sequential is not None else 0
    ordered, test, control = ordered_units(
        keys, pair.test, pair.control, seed, pair.generations, block_ordered=gate.sequential is not None or extended
    )
    design = _design(gate, gate.margin_pts, ordered, pair, sizes)
    verdict = gate_verdict(test - control, design, generations=sizes if extended else None)
    result = NonInferiorityResult(
        margin_pts=gate.margin_pts,
        lower_bound_pts=verdict.lower_bound_pts,
        upper_bound_pts=verdict.upper_bound_pts,
        verdict=verdict.verdict,
        basis=verdict.basis,
        alpha=design.alpha,
        critical_value=verdict.critical_value,
        alpha_spent=verdict.alpha_spent,
        units_used=verdict.units_used,
    )
    aa, ab = fields.get("aa_discordant"), fields.get("ab_discordant")
    source: Literal["A/A", "A/B"] = "A/A" if isinstance(aa, Discordance) else "A/B"
    measured = aa if isinstance(aa, Discordance) else ab
    if not isinstance(measured, Discordance):
        return {"non_inferiority": result}
    return {"non_inferiority": result, "operating": _operating(design, measured, source, gate.must_catch_pts)}


def _design(
    gate: BlockGate, margin_pts: float, ordered: list[tuple[str, str, str]], pair: PairedOutcomes, sizes: list[int]
) -> GateDesign:
    """The block's gate design: a fixed look at ``gate.fixed_alpha`` over the planned units (after ``--extend``
    the first run's), or the sequential rule's α and share over the planned units."""
    # import cost: numpy, scipy (~255 modules), only on this path
    from evalpipe.stats.operating import GateDesign

    repeats = max(
        (len(attempt_states(o.get((b, sid)))) for o in (pair.test, pair.control) for b, sid, _ in ordered),
        default=1,
    )
    n = gate.planned if gate.planned is not None else len(ordered)
    if gate.sequential is None:
        return GateDesign(sizes[0] if len(sizes) > 1 else n, margin_pts, gate.fixed_alpha, None, repeats)
    config = gate.sequential[0]
    return GateDesign(n, margin_pts, config.alpha, config.sequential_share, repeats)


def _operating(
    design: GateDesign, measured: Discordance, source: Literal["A/A", "A/B"], must_catch_pts: float | None
) -> OperatingCharacteristic:
    """The design's chance to pass at no regression, at the margin and at the must-catch drop, for the
    discordance measured (clamped so every drop stays a probability)."""
    # import cost: numpy, scipy (~255 modules), only on this path
    from evalpipe.stats.operating import pass_probability

    drops = [0.0, design.margin_pts / 100.0]
    if must_catch_pts is not None:
        drops.append(must_catch_pts / 100.0)
    psi = min(max(measured.second_moment, 1e-6), 1.0 - max(drops))
    points = []
    for drop in drops:
        p = pass_probability(design, psi, drop, paths=OC_PATHS, seed=OC_SEED)
        points.append(
            OperatingPoint(
                delta_pts=p.delta_pts,
                p_pass=p.p_pass,
                standard_error=p.standard_error,
                method=p.method,
                mean_units=p.mean_units,
            )
        )
    return OperatingCharacteristic(
        discordance=psi,
        discordance_source=source,
        n=design.n,
        margin_pts=design.margin_pts,
        alpha=design.alpha,
        sequential_share=design.sequential_share,
        must_catch_drop_pts=must_catch_pts,
        paths=OC_PATHS if design.sequential else None,
        points=points,
    )
