"""A paired block's gate: the one rule's verdict (``evalpipe.stats.operating``) and its operating
characteristic at no regression, the margin and the must-catch drop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from evalpipe.artifacts.schema.compare import (
    Discordance,
    NonInferiorityResult,
    OperatingCharacteristic,
    OperatingPoint,
)
from evalpipe.artifacts.schema.outcomes import attempt_states
from evalpipe.compare.sequential import ordered_units
from evalpipe.compare.units import Outcomes
from evalpipe.config.models import SequentialConfig
from evalpipe.hashing import generation_sizes

OC_PATHS = 4000
OC_SEED = 20261205


def gate_fields(
    keys: list[tuple[str, str, str]],
    oa: Outcomes,
    ob: Outcomes,
    margin_pts: float,
    *,
    sequential: tuple[SequentialConfig, int] | None,
    planned: int | None,
    fixed_alpha: float,
    fields: Mapping[str, object],
    must_catch_pts: float | None,
    generations: Mapping[tuple[str, str], int] | None = None,
    plan_sizes: list[int] | None = None,
) -> dict[str, object]:
    """The gate's decision (``evalpipe.stats.operating.gate_verdict``: the fixed look, or the e-processes and,
    when they never crossed, one fixed look at the rest of α) as ``non_inferiority`` — its verdict and the
    interval beside it come from that one object — and the design's operating characteristic at the
    discordance measured here (the A/A pair's when there is one, else the A/B pair's) as ``operating``.

    After ``--extend`` (``plan_sizes``: units per generation) a sequential block's e-processes continue over
    the generations with no second look; a fixed design's look stays at its first run's units (the look spent
    α there, and ``evalpipe run --extend`` refuses to grow a fixed-design gate)."""
    from evalpipe.stats.operating import GateDesign, gate_verdict, pass_probability

    if not keys:
        return {}

    by_unit = {k[:2]: k for k in keys}
    sizes = plan_sizes if plan_sizes is not None else generation_sizes(by_unit, generations)
    extended = len(sizes) > 1
    seed = sequential[1] if sequential is not None else 0
    ordered, test, control = ordered_units(
        keys, oa, ob, seed, generations, block_ordered=sequential is not None or extended
    )
    repeats = max(
        (len(attempt_states(o.get((b, sid)))) for o in (oa, ob) for b, sid, _ in ordered), default=1
    )
    n = planned if planned is not None else len(ordered)
    if sequential is None:
        design = GateDesign(sizes[0] if extended else n, margin_pts, fixed_alpha, None, repeats)
    else:
        config = sequential[0]
        design = GateDesign(n, margin_pts, config.alpha, config.sequential_share, repeats)
    verdict = gate_verdict(test - control, design, generations=sizes if extended else None)
    result = NonInferiorityResult(
        margin_pts=margin_pts,
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
    drops = [0.0, margin_pts / 100.0]
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
    operating = OperatingCharacteristic(
        discordance=psi,
        discordance_source=source,
        n=design.n,
        margin_pts=margin_pts,
        alpha=design.alpha,
        sequential_share=design.sequential_share,
        must_catch_drop_pts=must_catch_pts,
        paths=OC_PATHS if design.sequential else None,
        points=points,
    )
    return {"non_inferiority": result, "operating": operating}
