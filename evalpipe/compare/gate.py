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
    SequentialResult,
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
    """The gate's verdict (``evalpipe.stats.operating``: the fixed look, or the e-processes and, when they never
    crossed, one fixed look at the rest of α) as ``non_inferiority``, and the design's operating characteristic
    at the discordance measured here (the A/A pair's when there is one, else the A/B pair's) as ``operating``."""
    from evalpipe.stats.operating import GateDesign, gate_verdict, pass_probability
    from evalpipe.stats.sequential import planned_n_per_unit

    if not keys:
        return {}

    by_unit = {k[:2]: k for k in keys}
    seed = sequential[1] if sequential is not None else 0
    ordered, test, control = ordered_units(
        keys, oa, ob, seed, generations, block_ordered=sequential is not None
    )
    repeats = max(
        (len(attempt_states(o.get((b, sid)))) for o in (oa, ob) for b, sid, _ in ordered), default=1
    )
    sizes = plan_sizes if plan_sizes is not None else generation_sizes(by_unit, generations)
    extended = sequential is not None and len(sizes) > 1
    planned_n: int | list[int] | None = None
    if sequential is None:
        design = GateDesign(len(ordered), margin_pts, fixed_alpha, None, repeats)
    else:
        config = sequential[0]
        design = GateDesign(len(ordered), margin_pts, config.alpha, config.sequential_share, repeats)
        planned_n = (
            planned_n_per_unit(sizes) if extended else (planned if planned is not None else len(ordered))
        )
    seq = fields.get("sequential")
    bounds = (seq.cs_low, seq.cs_high) if isinstance(seq, SequentialResult) else None
    verdict = gate_verdict(
        test - control, design, planned_n=planned_n, extended=extended, sequence_bounds=bounds
    )
    result = NonInferiorityResult(
        margin_pts=margin_pts,
        lower_bound_pts=verdict.lower_bound_pts,
        upper_bound_pts=verdict.upper_bound_pts,
        verdict=verdict.verdict,
        basis=verdict.basis,
        alpha=design.alpha,
        critical_value=verdict.critical_value,
    )
    aa, ab = fields.get("aa_discordant"), fields.get("ab_discordant")
    source: Literal["A/A", "A/B"] = "A/A" if isinstance(aa, Discordance) else "A/B"
    measured = aa if isinstance(aa, Discordance) else ab
    if not isinstance(measured, Discordance):
        return {"non_inferiority": result}
    planned_design = GateDesign(
        planned if planned is not None else len(ordered),
        margin_pts,
        design.alpha,
        design.sequential_share,
        repeats,
    )
    drops = [0.0, margin_pts / 100.0]
    if must_catch_pts is not None:
        drops.append(must_catch_pts / 100.0)
    psi = min(max(measured.second_moment, 1e-6), 1.0 - max(drops))
    points = []
    for drop in drops:
        p = pass_probability(planned_design, psi, drop, paths=OC_PATHS, seed=OC_SEED)
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
        n=planned_design.n,
        margin_pts=margin_pts,
        alpha=design.alpha,
        sequential_share=design.sequential_share,
        must_catch_drop_pts=must_catch_pts,
        paths=OC_PATHS if design.sequential else None,
        points=points,
    )
    return {"non_inferiority": result, "operating": operating}
