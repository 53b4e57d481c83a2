"""A paired block's power fields: the paired interval and test over every attempt, the A/B and A/A discordance,
whether A/B exceeds the A/A noise, the MDE and its basis, the non-inferiority verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalpipe.artifacts.schema.compare import (
    Discordance,
    MdeBasis,
    NoiseComparison,
    NonInferiorityResult,
)
from evalpipe.artifacts.schema.outcomes import attempt_scores, attempt_states
from evalpipe.compare.seeds import attempt_seed_check
from evalpipe.compare.units import Outcomes, PairedOutcomes, discordance, responses_differed
from evalpipe.stats.unit_scores import arm_scores

if TYPE_CHECKING:
    from evalpipe.stats.power import MinimumDetectableEffect


def power_fields(
    keys: list[tuple[str, str, str]], pair: PairedOutcomes, margin_pts: float | None, confidence: float
) -> dict[str, object]:
    """The paired fields of a block: paired interval and test over every attempt, A/B and A/A
    discordance, whether A/B exceeds the A/A noise, the MDE at 80 % power and the non-inferiority verdict;
    with repeats, the attempts' recorded seeds and the samples whose attempts answered alike
    (``evalpipe.compare.seeds``).

    The noise model is the A/A pair (``pair.repeat`` of ``pair.repeated``, default the control) when there is
    one, else the A/B pair itself (``evalpipe.stats.power``); the MDE is for the test the block prints (exact
    McNemar at one attempt per arm, the paired score test with repeats), at the control's accuracy.

    The A/B pair is scored by the paired rule (``evalpipe.stats.unit_scores``, the one the sequential rule
    uses): every attempt counts, one without an answer 0 in the test arm and 1 in the control arm.  The A/A
    pair (no arm under test) keeps the summary's attempt scores.
    """
    # import cost: scipy, pandas (~1045 modules), only on this path
    from evalpipe.stats.noninferiority import non_inferiority
    from evalpipe.stats.paired import paired_difference
    from evalpipe.stats.power import minimum_detectable_effect, noise_from_runs

    if not keys:
        return {}
    oa, ob = pair.test, pair.control
    test = [arm_scores(attempt_states(oa.get((b, sid))), "test") for b, sid, _ in keys]
    control = [arm_scores(attempt_states(ob.get((b, sid))), "control") for b, sid, _ in keys]
    diff = paired_difference(test, control, confidence)
    ab = discordance(test, control)
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
    if pair.repeat is not None:
        base_rows = pair.repeated if pair.repeated is not None else ob
        aa, base, again = _aa_fields(keys, base_rows, pair.repeat, (test, control), out)
        noise, noise_pair = noise_from_runs(base, again, "aa"), (aa, base, again)
    else:
        noise, noise_pair = noise_from_runs(test, control, "ab"), (ab, test, control)
    mde = minimum_detectable_effect(len(keys), noise, repeats, base_accuracy=diff.control_mean)
    out["mde_pts"] = mde.mde_pts
    out["mde_basis"] = _mde_basis(mde, *noise_pair)
    if margin_pts is not None:
        verdict = non_inferiority(diff.interval, margin_pts)
        out["non_inferiority"] = NonInferiorityResult(
            margin_pts=verdict.margin_pts,
            lower_bound_pts=verdict.lower_bound_pts,
            upper_bound_pts=verdict.upper_bound_pts,
            verdict=verdict.verdict,
        )
    return out


def _aa_fields(
    keys: list[tuple[str, str, str]],
    base_rows: Outcomes,
    again_rows: Outcomes,
    ab: tuple[list[list[float]], list[list[float]]],
    out: dict[str, object],
) -> tuple[Discordance, list[list[float]], list[list[float]]]:
    """The A/A pair's fields into ``out`` — its discordance with the responses that differed, and whether the
    A/B pair (``ab``: test and control scores) changed more samples than the noise did; returns the A/A
    discordance and both runs' attempt scores (the MDE's noise model)."""
    # import cost: scipy, pandas (~1039 modules), only on this path
    from evalpipe.stats.paired import excess_discordance
    from evalpipe.stats.repeats import per_sample_means

    base = [attempt_scores(base_rows.get((b, sid))) for b, sid, _ in keys]
    again = [attempt_scores(again_rows.get((b, sid))) for b, sid, _ in keys]
    compared, differed = responses_differed([(base_rows.get((b, sid)), again_rows.get((b, sid))) for b, sid, _ in keys])
    aa = discordance(base, again).model_copy(update={"responses_compared": compared, "responses_differed": differed})
    out["aa_discordant"] = aa
    t, c = per_sample_means(ab[0]), per_sample_means(ab[1])
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
    return aa, base, again


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
