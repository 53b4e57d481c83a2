"""A paired block judged unit by unit: its units in the order the rule judges them (``ordered_units``, shared
with the gate) and the sequential fields (``evalpipe.stats.sequential``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalpipe.artifacts.schema.compare import (
    SequentialLook,
    SequentialResult,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow, attempt_states
from evalpipe.compare.units import BlockGate, Outcomes, PairedOutcomes
from evalpipe.hashing import block_order, generation_sizes
from evalpipe.stats.unit_scores import arm_value

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


def ordered_units(
    keys: list[tuple[str, str, str]],
    oa: Outcomes,
    ob: Outcomes,
    seed: int,
    generations: Mapping[tuple[str, str], int] | None,
    *,
    block_ordered: bool = True,
) -> tuple[list[tuple[str, str, str]], NDArray[np.float64], NDArray[np.float64]]:
    """The block's units in the order the rule judges them (``evalpipe.hashing.block_order``; ``keys``' own
    order when ``block_ordered`` is off: the fixed look, which no order changes) and each unit's test and control
    value by the paired rule of ``evalpipe.stats.unit_scores`` (the in-run stop's): no answer never counts for
    the test arm.  One place for the sequential fields and the gate."""
    # import cost: numpy, only on this path
    import numpy as np

    by_unit = {k[:2]: k for k in keys}
    ordered = [by_unit[u] for u in block_order(seed, by_unit, generations)] if block_ordered else list(keys)
    test = np.array(
        [arm_value(attempt_states(oa.get((b, sid))), "test") for b, sid, _ in ordered], dtype=float
    )
    control = np.array(
        [arm_value(attempt_states(ob.get((b, sid))), "control") for b, sid, _ in ordered], dtype=float
    )
    return ordered, test, control


def _attempts_mix(rows: list[OutcomeRow | None]) -> dict[int, int]:
    """Attempts → units (the test arm's rows), when units had different numbers of attempts; else empty."""
    by_attempts = Counter(max(1, len(r.attempts)) if r is not None else 1 for r in rows)
    return dict(sorted(by_attempts.items())) if len(by_attempts) > 1 else {}


def sequential_fields(keys: list[tuple[str, str, str]], pair: PairedOutcomes, gate: BlockGate) -> dict[str, object]:
    """The block judged unit by unit (``evalpipe.stats.sequential``) against ``gate.margin_pts`` with
    ``gate.sequential`` (the rule and its sequence seed); empty without either: units in the seeded sequence
    order (``evalpipe.hashing.sequence_key``, never completion order), the planned bet tuned to the block's n,
    the cap at ``cap_factor × n``; the share of units and recorded output tokens after the stop.

    ``gate.planned``: the rule stopped sending inside the run (``evalpipe.run.sequential_stop``) — ``keys`` are
    the units sent in every arm, ``planned`` the manifest's units, to which the bets were tuned there and are
    here; the tokens spent are the recorded ones, the fixed design's the same per unit over ``planned``;
    ``gate.stop_unit`` where it crossed there, on the worker's scores (recorded beside the recomputed stop).

    ``pair.generations`` (``ExtensionRecord.generation_of``): after ``--extend`` the units are in the block
    order of ``evalpipe.hashing.block_order`` — the old run's units in the old order, then the new ones — and
    each unit's bet is tuned to its generation's plan (``planned_n_per_unit`` over ``gate.plan_sizes``, the
    units per generation of the plan; default: of ``keys``), so the e-process continues the old run's.  Unit
    values by the paired rule of ``evalpipe.stats.unit_scores``, the one the in-run stop applies."""

    # import cost: numpy (stats.sequential), only for a sequential design
    from evalpipe.stats.sequential import PlannedN, planned_n_per_unit, sequential_decision, sequential_path

    if not keys or gate.margin_pts is None or gate.sequential is None:
        return {}
    config, seed = gate.sequential
    margin_pts, planned = gate.margin_pts, gate.planned
    by_unit = {k[:2]: k for k in keys}
    ordered, test, control = ordered_units(keys, pair.test, pair.control, seed, pair.generations)
    n = planned if planned is not None else len(ordered)
    sizes = gate.plan_sizes if gate.plan_sizes is not None else generation_sizes(by_unit, pair.generations)
    plan: PlannedN = planned_n_per_unit(sizes) if len(sizes) > 1 else n
    cap = math.ceil(config.cap_factor * n)
    decision = sequential_decision(test - control, margin_pts, config.eprocess_alpha, cap=cap, planned_n=plan)
    path = sequential_path(test - control, margin_pts, decision.units_used, config.eprocess_alpha, planned_n=plan)
    rows = [o.get((b, sid)) for o in (pair.test, pair.control) for b, sid, _ in ordered]
    repeats = max((len(r.attempts) for r in rows if r is not None and r.attempts), default=1)
    spend = _spend(ordered, pair, decision.units_used, planned)
    unit_share = decision.units_left / decision.units_available
    if planned is not None:  # what was really not sent (the units after the stop were sent: in flight)
        unit_share = (planned - len(ordered)) / planned
    looks = [
        SequentialLook(unit=x.unit, e_value_non_inferior=x.e_value_non_inferior,
                       e_value_inferior=x.e_value_inferior, cs_low=x.cs_lower, cs_high=x.cs_upper)
        for x in path.looks
    ]  # fmt: skip
    return {
        "sequential": SequentialResult(
            margin_pts=margin_pts,
            alpha=decision.alpha,
            bets=decision.bets,
            planned_n=decision.planned_n,
            cap=decision.cap,
            sequence_seed=seed,
            units_available=decision.units_available,
            units_used=decision.units_used,
            verdict=decision.verdict,
            stop_reason=decision.stop_reason,
            e_value_non_inferior=decision.e_value_non_inferior,
            e_value_inferior=decision.e_value_inferior,
            cs_low=decision.cs_lower,
            cs_high=decision.cs_upper,
            generations=sizes if len(sizes) > 1 else [],
            units_unsent_share=unit_share,
            output_tokens_unsent_share=spend.unsent_share,
            repeats=repeats,
            units_by_attempts=_attempts_mix(rows[: len(ordered)]),
            output_tokens_spent=spend.spent,
            output_tokens_fixed=spend.fixed,
            max_e_value_non_inferior=decision.max_e_value_non_inferior,
            max_e_value_inferior=decision.max_e_value_inferior,
            look_every=path.every,
            looks=looks,
            first_crossing_non_inferior=path.first_crossing_non_inferior,
            first_crossing_inferior=path.first_crossing_inferior,
            stopped_in_run=planned is not None,
            units_planned=planned,
            units_sent=len(ordered) if planned is not None else None,
            stop_unit_in_run=gate.stop_unit if planned is not None else None,
            output_tokens_after_stop=spend.after_stop if planned is not None else None,
        )
    }


@dataclass(frozen=True)
class _Spend:
    """The recorded output tokens of a sequential block: spent, what the fixed design would spend, the share
    the stop left unsent, and (stopped inside the run) those after the stop, sent while in flight."""

    spent: int | None
    fixed: int | None
    unsent_share: float | None
    after_stop: int | None


def _spend(ordered: list[tuple[str, str, str]], pair: PairedOutcomes, units_used: int, planned: int | None) -> _Spend:
    """The block's token accounting (``_Spend``): after the stop in compare's recomputation, or — when the rule
    stopped sending inside the run (``planned``) — every recorded token spent, the fixed design's the same per
    unit over the planned units."""
    tokens = [
        [
            r.output_tokens
            for r in (pair.test.get((b, sid)), pair.control.get((b, sid)))
            if r is not None and r.output_tokens
        ]
        for b, sid, _ in ordered
    ]
    total = sum(sum(t) for t in tokens)
    unsent = sum(sum(t) for t in tokens[units_used:])
    if planned is None:
        return _Spend(
            spent=total - unsent if total else None,
            fixed=total or None,
            unsent_share=unsent / total if total else None,
            after_stop=unsent if total else None,
        )
    fixed = round(total * planned / len(ordered)) if total else None
    return _Spend(
        spent=total or None,
        fixed=fixed,
        unsent_share=1 - total / fixed if total and fixed else None,
        after_stop=unsent if total else None,
    )


#: Paths simulated for a sequential design's operating characteristic in compare.json (Monte-Carlo SE ≤ 0.008).
