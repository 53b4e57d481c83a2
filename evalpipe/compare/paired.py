"""Load two runs of the same samples, pair them, and assemble ``compare.json`` from ``evalpipe.stats``.

Refuses unless both runs used the identical manifest (same fingerprints and entries) and the same
rendered prompt per sample: otherwise a difference could come from the inputs, not the server.
Per benchmark: both scores with Wilson intervals, the difference with a seeded paired-bootstrap
percentile interval, the exact McNemar test on the discordant pairs, and the flips (the statistics are
``evalpipe.stats.intervals`` and ``evalpipe.stats.paired``).  Numbers only: the words are made where they are
shown (``evalpipe.report``; ``evalpipe.run.compare_files`` writes compare.json with its pages).
Scores: correct as the summary counts it (`is_correct`: a budget-exhausted answer is incorrect even when
EvalScope scored the truncated text 1); an entry without a score (API or scoring error, missing row) counts as wrong,
the same denominator rule as the audit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import (
    CompareResult,
    Discordance,
    Flip,
    MdeBasis,
    NoiseComparison,
    NonInferiorityResult,
    OperatingCharacteristic,
    OperatingPoint,
    PairedBenchmark,
    PlacementCell,
    ScoreWithInterval,
    SequentialLook,
    SequentialResult,
)
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow, attempt_scores, attempt_states, is_correct
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.sources import GeneratedItem
from evalpipe.benchmarks import length_buckets
from evalpipe.compare.seeds import attempt_seed_check, run_temperature, with_temperature
from evalpipe.config.models import SequentialConfig
from evalpipe.errors import EvalpipeError
from evalpipe.hashing import block_order, generation_sizes, sha256_hex
from evalpipe.samplers.extend import entry_generations
from evalpipe.stats.intervals import wilson_interval
from evalpipe.stats.unit_scores import arm_scores, arm_value

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from evalpipe.stats.power import MinimumDetectableEffect

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261202


class CompareRefused(EvalpipeError):
    """The two runs are not a valid pair (different manifest or prompts)."""


def _label(rundir: RunDir, fallback: str) -> str:
    try:
        run = read_model(rundir.run_record, RunRecord)
    except EvalpipeError:
        return fallback
    return run.variant_label or run.variant or fallback


def _is_correct(row: OutcomeRow | None) -> int:
    """1 when the summary counts the row correct (one rule: budget-exhausted answers are incorrect)."""
    return int(is_correct(row))


def _score(correct: int, n: int) -> ScoreWithInterval:
    ci = wilson_interval(correct, n)
    return ScoreWithInterval(
        correct=correct,
        scored=n,
        score=correct / n if n else None,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
    )


Outcomes = dict[tuple[str, str], OutcomeRow]


def _discordance(first: list[list[float]], second: list[list[float]]) -> Discordance:
    from evalpipe.stats.paired import paired_difference

    diff = paired_difference(first, second)
    return Discordance(
        n_pairs=diff.n_pairs,
        first_better=diff.test_better,
        second_better=diff.control_better,
        discordant=diff.test_better + diff.control_better,
        second_moment=diff.second_moment,
    )


def _responses_differed(rows: list[tuple[OutcomeRow | None, OutcomeRow | None]]) -> tuple[int, int]:
    """(compared, differed): samples whose attempt-0 responses both have a hash, and those that differ."""
    both = [(x.response_sha256, y.response_sha256) for x, y in rows if x and y]
    pairs = [(hx, hy) for hx, hy in both if hx and hy]
    return len(pairs), sum(1 for hx, hy in pairs if hx != hy)


def power_fields(
    keys: list[tuple[str, str, str]],
    oa: Outcomes,
    ob: Outcomes,
    oc: Outcomes | None,
    margin_pts: float | None,
    confidence: float,
    od: Outcomes | None = None,
) -> dict[str, object]:
    """The paired fields of a block: paired interval and test over every attempt, A/B and A/A
    discordance, whether A/B exceeds the A/A noise, the MDE at 80 % power and the non-inferiority verdict;
    with repeats, the attempts' recorded seeds and the samples whose attempts answered alike
    (``evalpipe.compare.seeds``).

    ``oc`` is the repeat run and ``od`` the run it repeats (default: the control ``ob``).
    The noise model is the A/A pair (control vs its repeat) when there is one, else the A/B pair itself
    (``evalpipe.stats.power``); the MDE is for the test the block prints (exact McNemar at one attempt per
    arm, the paired score test with repeats), at the control's accuracy.

    The A/B pair is scored by the paired rule (``evalpipe.stats.unit_scores``, the one the sequential rule
    uses): every attempt counts, one without an answer 0 in the test arm and 1 in the control arm.  The A/A
    pair (no arm under test) keeps the summary's attempt scores.
    """
    from evalpipe.stats.noninferiority import non_inferiority
    from evalpipe.stats.paired import excess_discordance, paired_difference
    from evalpipe.stats.power import minimum_detectable_effect, noise_from_runs
    from evalpipe.stats.repeats import per_sample_means

    if not keys:
        return {}
    test = [arm_scores(attempt_states(oa.get((b, sid))), "test") for b, sid, _ in keys]
    control = [arm_scores(attempt_states(ob.get((b, sid))), "control") for b, sid, _ in keys]
    diff = paired_difference(test, control, confidence)
    ab = _discordance(test, control)
    out: dict[str, object] = {
        "paired_ci_low": diff.interval[0],
        "paired_ci_high": diff.interval[1],
        "paired_test": diff.test,
        "paired_p": diff.p_value,
        "ab_discordant": ab,
    }
    repeats = max(len(x) for x in control)
    seeds = attempt_seed_check(keys, oa, ob)
    if seeds is not None:
        out["attempt_seeds"] = seeds
    if oc is not None:
        base_rows = od if od is not None else ob
        base = [attempt_scores(base_rows.get((b, sid))) for b, sid, _ in keys]
        again = [attempt_scores(oc.get((b, sid))) for b, sid, _ in keys]
        compared, differed = _responses_differed(
            [(base_rows.get((b, sid)), oc.get((b, sid))) for b, sid, _ in keys]
        )
        aa = _discordance(base, again).model_copy(
            update={"responses_compared": compared, "responses_differed": differed}
        )
        out["aa_discordant"] = aa
        t, c = per_sample_means(test), per_sample_means(control)
        c1, c2 = per_sample_means(base), per_sample_means(again)
        excess = excess_discordance(
            [bool(x != y) for x, y in zip(t, c, strict=True)],
            [bool(x != y) for x, y in zip(c1, c2, strict=True)],
        )
        out["noise_vs_ab"] = NoiseComparison(
            ab_changed=excess.ab_changed,
            aa_changed=excess.aa_changed,
            ab_only=excess.ab_only,
            aa_only=excess.aa_only,
            n_samples=excess.n_samples,
            p_value=excess.p_value,
            exceeds=excess.exceeds,
        )
        noise, pair = noise_from_runs(base, again, "aa"), (aa, base, again)
    else:
        noise, pair = noise_from_runs(test, control, "ab"), (ab, test, control)
    mde = minimum_detectable_effect(len(keys), noise, repeats, base_accuracy=diff.control_mean)
    out["mde_pts"] = mde.mde_pts
    out["mde_basis"] = _mde_basis(mde, *pair)
    if margin_pts is not None:
        verdict = non_inferiority(diff.interval, margin_pts)
        out["non_inferiority"] = NonInferiorityResult(
            margin_pts=verdict.margin_pts,
            lower_bound_pts=verdict.lower_bound_pts,
            upper_bound_pts=verdict.upper_bound_pts,
            verdict=verdict.verdict,
        )
    return out


def _mde_basis(
    mde: MinimumDetectableEffect, noise_pair: Discordance, first: list[list[float]], second: list[list[float]]
) -> MdeBasis:
    """The MDE's noise model and power calculation as numbers: the noise pair's mean squared per-sample
    difference (its ``Discordance.second_moment``, the statistic ``noise_from_runs`` starts from) and, when
    either run of the pair has repeats, the within/between split it made of it."""
    repeated = any(len(attempts) > 1 for attempts in (*first, *second))
    return MdeBasis(
        noise="A/A" if mde.noise.source == "aa" else "A/B",
        second_moment=noise_pair.second_moment,
        within=mde.noise.within if repeated else None,
        between=mde.noise.between if repeated else None,
        method=mde.method,
        repeats=mde.repeats,
        power=mde.power,
        alpha=mde.alpha,
    )


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


def sequential_fields(
    keys: list[tuple[str, str, str]],
    oa: Outcomes,
    ob: Outcomes,
    margin_pts: float,
    config: SequentialConfig,
    seed: int,
    planned: int | None = None,
    stop_unit: int | None = None,
    generations: Mapping[tuple[str, str], int] | None = None,
    plan_sizes: list[int] | None = None,
) -> dict[str, object]:
    """The block judged unit by unit (``evalpipe.stats.sequential``): units in the seeded sequence order
    (``evalpipe.hashing.sequence_key``, never completion order), the planned bet tuned to the block's n, the
    cap at ``cap_factor × n``; the share of units and recorded output tokens after the stop.

    ``planned``: the rule stopped sending inside the run (``evalpipe.run.sequential_stop``) — ``keys`` are the
    units sent in every arm, ``planned`` the manifest's units, to which the bets were tuned there and are
    here; the tokens spent are the recorded ones, the fixed design's the same per unit over ``planned``;
    ``stop_unit`` where it crossed there, on the worker's scores (recorded beside the recomputed stop).

    ``generations`` (``ExtensionRecord.generation_of``): after ``--extend`` the units are in the block order
    of ``evalpipe.hashing.block_order`` — the old run's units in the old order, then the new ones — and each
    unit's bet is tuned to its generation's plan (``planned_n_per_unit`` over ``plan_sizes``, the units per
    generation of the plan; default: of ``keys``), so the e-process continues the old run's.  Unit values by
    the paired rule of ``evalpipe.stats.unit_scores``, the one the in-run stop applies."""

    from evalpipe.stats.sequential import PlannedN, planned_n_per_unit, sequential_decision, sequential_path

    if not keys:
        return {}
    by_unit = {k[:2]: k for k in keys}
    ordered, test, control = ordered_units(keys, oa, ob, seed, generations)
    n = planned if planned is not None else len(ordered)
    sizes = plan_sizes if plan_sizes is not None else generation_sizes(by_unit, generations)
    plan: PlannedN = planned_n_per_unit(sizes) if len(sizes) > 1 else n
    cap = math.ceil(config.cap_factor * n)
    decision = sequential_decision(test - control, margin_pts, config.eprocess_alpha, cap=cap, planned_n=plan)
    path = sequential_path(
        test - control, margin_pts, decision.units_used, config.eprocess_alpha, planned_n=plan
    )
    rows = [o.get((b, sid)) for o in (oa, ob) for b, sid, _ in ordered]
    repeats = max((len(r.attempts) for r in rows if r is not None and r.attempts), default=1)
    tokens = [
        [r.output_tokens for r in (oa.get((b, sid)), ob.get((b, sid))) if r is not None and r.output_tokens]
        for b, sid, _ in ordered
    ]
    total = sum(sum(t) for t in tokens)
    unsent = sum(sum(t) for t in tokens[decision.units_used :])
    token_share = unsent / total if total else None
    spent, fixed = (total - unsent if total else None), (total or None)
    unit_share = decision.units_left / decision.units_available
    if planned is not None:  # what was really not sent (the units after the stop were sent: in flight)
        spent = total or None
        fixed = round(total * planned / len(ordered)) if total else None
        token_share = 1 - total / fixed if total and fixed else None
        unit_share = (planned - len(ordered)) / planned
    looks = [
        SequentialLook(
            unit=x.unit,
            e_value_non_inferior=x.e_value_non_inferior,
            e_value_inferior=x.e_value_inferior,
            cs_low=x.cs_lower,
            cs_high=x.cs_upper,
        )
        for x in path.looks
    ]
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
            output_tokens_unsent_share=token_share,
            repeats=repeats,
            output_tokens_spent=spent,
            output_tokens_fixed=fixed,
            max_e_value_non_inferior=decision.max_e_value_non_inferior,
            max_e_value_inferior=decision.max_e_value_inferior,
            look_every=path.every,
            looks=looks,
            first_crossing_non_inferior=path.first_crossing_non_inferior,
            first_crossing_inferior=path.first_crossing_inferior,
            stopped_in_run=planned is not None,
            units_planned=planned,
            units_sent=len(ordered) if planned is not None else None,
            stop_unit_in_run=stop_unit if planned is not None else None,
            output_tokens_after_stop=unsent if planned is not None and total else None,
        )
    }


#: Paths simulated for a sequential design's operating characteristic in compare.json (Monte-Carlo SE ≤ 0.008).
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


def _paired_block(
    name: str,
    keys: list[tuple[str, str, str]],
    oa: dict[tuple[str, str], OutcomeRow],
    ob: dict[tuple[str, str], OutcomeRow],
    *,
    resamples: int,
    seed: int,
    confidence: float,
    oc: Outcomes | None = None,
    od: Outcomes | None = None,
    margin_pts: float | None = None,
    sequential: tuple[SequentialConfig, int] | None = None,
    planned: int | None = None,
    stop_unit: int | None = None,
    must_catch_pts: float | None = None,
    fixed_alpha: float | None = None,
    generations: Mapping[tuple[str, str], int] | None = None,
    plan_sizes: list[int] | None = None,
) -> PairedBenchmark:
    from evalpipe.stats.paired import exact_mcnemar_p, paired_bootstrap

    a_vals, b_vals, flips = [], [], []
    unverified = 0
    for bench, sid, stratum in keys:
        ra, rb = oa.get((bench, sid)), ob.get((bench, sid))
        ha = (ra.prompt_sha256 or ra.expected_prompt_sha256) if ra else None
        hb = (rb.prompt_sha256 or rb.expected_prompt_sha256) if rb else None
        if ha is None or hb is None:
            unverified += 1
        ca, cb = _is_correct(ra), _is_correct(rb)
        a_vals.append(ca)
        b_vals.append(cb)
        if ca != cb:
            flips.append(
                Flip(
                    benchmark=bench,
                    source_id=sid,
                    stratum=stratum,
                    score_a=ra.score if ra else None,
                    score_b=rb.score if rb else None,
                    failure_a=ra.failure_label if ra else "missing_row",
                    failure_b=rb.failure_label if rb else "missing_row",
                )
            )
    n = len(keys)
    both = sum(1 for x, y in zip(a_vals, b_vals, strict=True) if x and y)
    a_only = sum(1 for x, y in zip(a_vals, b_vals, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a_vals, b_vals, strict=True) if y and not x)
    neither = n - both - a_only - b_only
    sa, sb = _score(sum(a_vals), n), _score(sum(b_vals), n)
    diff: float | None = None
    lo: float | None = None
    hi: float | None = None
    p: float | None = None
    if n:
        diff = sum(a_vals) / n - sum(b_vals) / n  # = sa.score - sb.score
        lo, hi = paired_bootstrap(a_vals, b_vals, resamples=resamples, seed=seed, confidence=confidence)
        p = exact_mcnemar_p(a_only, b_only)
    # a, b and the flips count each sample's first attempt; the paired_* fields every attempt
    attempts = max(
        (len(r.attempts) for key in keys for r in (oa.get(key[:2]), ob.get(key[:2])) if r is not None),
        default=1,
    )
    block = PairedBenchmark(
        benchmark=name,
        n_pairs=n,
        repeats=max(attempts, 1),  # a row with no attempt recorded still asked once
        a=sa,
        b=sb,
        difference=diff,
        diff_ci_low=lo,
        diff_ci_high=hi,
        both_correct=both,
        a_only=a_only,
        b_only=b_only,
        both_wrong=neither,
        mcnemar_p=p,
        flips=flips,
        prompt_hash_unverified=unverified,
    )
    fields = power_fields(keys, oa, ob, oc, margin_pts, confidence, od)
    if sequential is not None and margin_pts is not None:
        fields.update(
            sequential_fields(
                keys,
                oa,
                ob,
                margin_pts,
                *sequential,
                planned=planned,
                stop_unit=stop_unit,
                generations=generations,
                plan_sizes=plan_sizes,
            )
        )
    if margin_pts is not None:
        fields.update(
            gate_fields(
                keys,
                oa,
                ob,
                margin_pts,
                sequential=sequential,
                planned=planned,
                fixed_alpha=fixed_alpha if fixed_alpha is not None else (1.0 - confidence) / 2.0,
                fields=fields,
                must_catch_pts=must_catch_pts,
                generations=generations,
                plan_sizes=plan_sizes,
            )
        )
    return block.model_copy(update=fields)


def _aa_only_block(block: PairedBenchmark) -> PairedBenchmark:
    """An A/A-only block: the A/B fields that would only restate the A/A pair are dropped."""
    return block.model_copy(
        update={
            "ab_discordant": None,
            "noise_vs_ab": None,
            "by_length": [_aa_only_block(x) for x in block.by_length],
        }
    )


def _outcomes(rundir: RunDir) -> dict[tuple[str, str], OutcomeRow]:
    if not rundir.outcomes.is_file():
        raise CompareRefused(f"{rundir.outcomes}: missing (run the evaluation first)")
    rows = read_jsonl(rundir.outcomes, OutcomeRow)
    return {(r.benchmark, r.source_id): r for r in rows}


def placement_grid(
    keys: list[tuple[str, str, str]],
    generated: Mapping[tuple[str, str], GeneratedItem | None],
    block_of: Callable[[str, list[tuple[str, str, str]]], PairedBenchmark],
) -> list[PlacementCell]:
    """A generated benchmark's length × placement grid: each cell the paired block of its items (``block_of``,
    the same statistics as every block), reduced to its counts; lengths ascending, placements in manifest
    order."""
    cells: dict[tuple[int, str], list[tuple[str, str, str]]] = {}
    for key in keys:
        item = generated[key[:2]]
        assert item is not None
        cells.setdefault((item.length, item.placement), []).append(key)
    out = []
    for (length, placement), cell in sorted(cells.items(), key=lambda kv: kv[0][0]):
        block = block_of(f"{keys[0][0]} {length} {placement}", cell)
        a_only = sum(1 for f in block.flips if (f.score_a or 0.0) > (f.score_b or 0.0))
        out.append(
            PlacementCell(
                length=length,
                placement=placement,
                n_pairs=block.n_pairs,
                a_correct=block.a.correct,
                b_correct=block.b.correct,
                a_only=a_only,
                b_only=len(block.flips) - a_only,
            )
        )
    return out


def compare_runs(
    run_a: Path,
    run_b: Path,
    *,
    label_a: str | None = None,
    label_b: str | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = 0.95,
    run_aa: Path | None = None,
    label_aa: str | None = None,
    aa_control: Path | None = None,
    margins: Callable[[str], float | None] | None = None,
    must_catch: Callable[[str], float | None] | None = None,
    gate_alpha: float | None = None,
    aa_only: bool = False,
    sequential: SequentialConfig | None = None,
    pools: Mapping[str, list[str]] | None = None,
) -> CompareResult:
    """Paired comparison of A (under test) with B (control); ``run_aa`` is a repeat (``repeat_of``) of
    ``aa_control`` (default B), the A/A noise; ``margins(block)`` the non-inferiority margin of a block
    (``all`` for the overall one).

    ``aa_only``: B is A's repeat and there is no A/B control — the record of the server's own noise (A/A
    discordance, responses that differed, the MDE an A/B of this size would have); no A/B fields.

    ``sequential``: every block with a margin (not the length buckets, not an A/A-only record) is also
    judged unit by unit (``sequential_fields``).  ``pools``: name → member benchmarks, each judged as one
    block over the members' samples (``pools`` of compare.json)."""
    if aa_only and run_aa is not None:
        raise ValueError("aa_only compares A with its repeat B: no separate run_aa")
    ra, rb = RunDir(run_a), RunDir(run_b)
    ma, mb = read_model(ra.manifest, Manifest), read_model(rb.manifest, Manifest)
    _check_paired(ra, rb, ma, mb)
    oa, ob = _outcomes(ra), _outcomes(rb)
    oc: Outcomes | None = None
    od: Outcomes | None = None
    if aa_only:
        oc, od = ob, oa
    elif run_aa is not None:
        rc, rd = RunDir(run_aa), RunDir(aa_control) if aa_control is not None else rb
        _check_paired(rd, rc, read_model(rd.manifest, Manifest), read_model(rc.manifest, Manifest))
        oc, od = _outcomes(rc), _outcomes(rd)
    margin_of = margins or (lambda _name: None)
    catch_of = must_catch or (lambda _name: None)

    la = label_a or _label(ra, "A")
    lb = label_b or _label(rb, "B")

    # the rule stopped sending inside the run: every block pairs only the units every compared arm sent
    sent, crossed = _units_sent([ra, rb, *([RunDir(run_aa)] if run_aa is not None else [])])
    # --extend: earlier generations first, in their own order (the in-run stop's order too)
    generations = entry_generations(ra.root)

    def in_order(keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        by_unit = {k[:2]: k for k in keys}
        return [by_unit[u] for u in block_order(ma.seed, by_unit, generations)]

    def only_sent(keys: list[tuple[str, str, str]], *, prefix: bool = False) -> list[tuple[str, str, str]]:
        """Each benchmark's units sent: the first ``units_sent_prefix`` of its manifest entries in the block
        order — the stop counts them in that order, an entry dropped before sending (context fit) holding
        its place (``SequentialStopper``), so the cut keeps exactly the units the stop counted; ``prefix`` (a
        pool the rule gated): the longest prefix of the block's own order whose units were all sent, the
        units the rule judged inside the run."""
        if not sent:
            return keys
        kept: set[tuple[str, str]] = set()
        for bench in dict.fromkeys(k[0] for k in keys):
            mine = in_order([k for k in keys if k[0] == bench])
            kept.update(k[:2] for k in mine[: sent.get(bench, len(mine))])
        if prefix:
            ordered = in_order(keys)
            cut = next((i for i, k in enumerate(ordered) if k[:2] not in kept), len(ordered))
            kept = {k[:2] for k in ordered[:cut]}
        return [k for k in keys if k[:2] in kept]

    def paired_block(name: str, keys: list[tuple[str, str, str]], margin: float | None) -> PairedBenchmark:
        planned = len(keys) if any(k[0] in sent for k in keys) else None
        plan_sizes = generation_sizes((k[:2] for k in keys), generations)
        keys = only_sent(keys, prefix=name in crossed and len({k[0] for k in keys}) > 1)
        return _paired_block(
            name,
            keys,
            oa,
            ob,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
            oc=oc,
            od=od,
            margin_pts=margin,
            sequential=(sequential, ma.seed) if sequential is not None and not aa_only else None,
            planned=planned,
            stop_unit=crossed.get(name),
            must_catch_pts=catch_of(name) if margin is not None else None,
            fixed_alpha=gate_alpha,
            generations=generations,
            plan_sizes=plan_sizes,
        )

    blocks = []
    for block in ma.benchmarks:
        keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries if e.benchmark == block.benchmark]
        paired = paired_block(block.benchmark, keys, margin_of(block.benchmark))
        buckets = length_buckets(block.benchmark, block.plan.stratify_by, [k[2] for k in keys])
        if buckets:
            paired.by_length = [
                paired_block(
                    f"{block.benchmark} {length}",
                    only_sent([k for k in keys if bucket_of[k[2]] == length]),
                    None,
                ).model_copy(update={"length": length})
                for length, bucket_of in buckets
            ]
        generated = {
            (e.benchmark, e.source_id): e.generated for e in ma.entries if e.benchmark == block.benchmark
        }
        if keys and all(g is not None for g in generated.values()):
            paired.by_placement = placement_grid(
                keys, generated, lambda name, cell: paired_block(name, only_sent(cell), None)
            )
        blocks.append(paired)
    pooled = []
    for pool, members in (pools or {}).items():
        keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries if e.benchmark in members]
        pooled.append(paired_block(pool, keys, margin_of(pool)).model_copy(update={"members": list(members)}))
    all_keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries]
    overall = paired_block("all", all_keys, margin_of("all")) if len(blocks) > 1 else None
    if any(b.attempt_seeds is not None for b in blocks):  # repeats: the seeds' check names the temperature
        temperature = run_temperature(ra)
        blocks = [with_temperature(b, temperature) for b in blocks]
        pooled = [with_temperature(b, temperature) for b in pooled]
        overall = with_temperature(overall, temperature) if overall is not None else None
    if aa_only:  # the pair IS the noise: no A/B discordance, nothing to hold against it
        blocks = [_aa_only_block(b) for b in blocks]
        pooled = [_aa_only_block(b) for b in pooled]
        overall = _aa_only_block(overall) if overall is not None else None
    return CompareResult(
        run_a=str(ra.root),
        run_b=str(rb.root),
        label_a=la,
        label_b=lb,
        run_aa=str(RunDir(run_aa).root) if run_aa is not None else (str(rb.root) if aa_only else None),
        label_aa=(label_aa or _label(RunDir(run_aa), "B'"))
        if run_aa is not None
        else (lb if aa_only else None),
        aa_only=aa_only,
        manifest_sha256=sha256_hex(ra.manifest.read_bytes()),
        bootstrap_resamples=resamples,
        bootstrap_seed=seed,
        confidence=confidence,
        benchmarks=blocks,
        pools=pooled,
        overall=overall,
    )


def _units_sent(arms: list[RunDir]) -> tuple[dict[str, int], dict[str, int | None]]:
    """Benchmark → units sent by every arm (``sequential_stop.json``'s leading units of the sequence order),
    for the benchmarks whose sending the sequential rule stopped inside the run (empty when none did), and
    block (a benchmark, or the pool that gated it) → the unit at which it crossed there (the first arm's
    record that names one)."""
    from evalpipe.artifacts.schema.sequential import SequentialStops

    sent: dict[str, int] = {}
    crossed: dict[str, int | None] = {}
    for arm in arms:
        if not arm.sequential_stop.is_file():
            continue
        for stop in read_model(arm.sequential_stop, SequentialStops).benchmarks:
            sent[stop.benchmark] = min(
                sent.get(stop.benchmark, stop.units_sent_prefix), stop.units_sent_prefix
            )
            block = stop.block or stop.benchmark
            if crossed.get(block) is None:
                crossed[block] = stop.stop_unit
    return sent, crossed


def _check_paired(ra: RunDir, rb: RunDir, ma: Manifest, mb: Manifest) -> None:
    """Refuse unless both runs used the identical manifest and rendered the same prompts."""
    problems: list[str] = []
    fa = {b.benchmark: b.dataset.fingerprint for b in ma.benchmarks}
    fb = {b.benchmark: b.dataset.fingerprint for b in mb.benchmarks}
    if fa != fb:
        problems.append(f"dataset fingerprints differ: {fa} vs {fb}")
    if ma.seed != mb.seed:
        problems.append(f"sampling seeds differ: {ma.seed} vs {mb.seed}")
    ea = [(e.benchmark, e.source_id, e.record_sha256) for e in ma.entries]
    eb = [(e.benchmark, e.source_id, e.record_sha256) for e in mb.entries]
    if ea != eb:
        only_a = sorted(set(ea) - set(eb))[:5]
        only_b = sorted(set(eb) - set(ea))[:5]
        problems.append(f"manifest entries differ (only in A: {only_a}; only in B: {only_b})")
    if problems:
        raise CompareRefused("runs are not paired: refusing to compare", details=problems)

    oa, ob = _outcomes(ra), _outcomes(rb)
    mismatched = []
    for e in ma.entries:
        x, y = oa.get((e.benchmark, e.source_id)), ob.get((e.benchmark, e.source_id))
        hx = (x.prompt_sha256 or x.expected_prompt_sha256) if x else None
        hy = (y.prompt_sha256 or y.expected_prompt_sha256) if y else None
        if hx and hy and hx != hy:
            mismatched.append(f"{e.benchmark} {e.source_id}: prompt {hx[:12]} vs {hy[:12]}")
    if mismatched:
        raise CompareRefused(
            f"runs rendered different prompts for {len(mismatched)} sample(s): refusing to compare",
            details=mismatched[:20],
        )


def comparison_beside(run_dir: Path) -> CompareResult | None:
    """The paired comparison ``evalpipe run`` wrote beside a variant directory (``RUN/compare.json`` for
    ``RUN/<variant>``), or None when there is none or it cannot be read."""
    path = Path(run_dir).parent / "compare.json"
    if not path.is_file():
        return None
    try:
        return read_model(path, CompareResult)
    except EvalpipeError:
        return None
