"""One paired block: both scores, the difference with its bootstrap interval, McNemar, the flips — then the
power, sequential and gate fields (``power``, ``sequential``, ``gate``) merged in and validated.

One scoring rule for every number of the block (``Scoring``): the gate's paired rule
(``evalpipe.stats.unit_scores``: an attempt without an answer counts wrong in A, the arm under test, and right
in B) for an A/B comparison, the summary's rule (``is_correct`` in both arms) for an A/A-only record, which has
no arm under test.  Either way a unit dropped before generation in both arms (``left_out``) is no unit of the
block: it is counted, with its reason, in ``dropped``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evalpipe.artifacts.schema.compare import (
    DroppedUnits,
    DropReason,
    Flip,
    PairedBenchmark,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow, attempt_states
from evalpipe.compare.gate import gate_fields
from evalpipe.compare.paired_design import Bootstrap
from evalpipe.compare.power import power_fields
from evalpipe.compare.sequential import sequential_fields
from evalpipe.compare.units import (
    BlockGate,
    Drops,
    Outcomes,
    PairedOutcomes,
    Scoring,
    is_correct_int,
    score_with_interval,
)
from evalpipe.stats.unit_scores import attempt_value, dropped_in_both


def left_out(keys: Iterable[tuple[str, str, str]], oa: Outcomes, ob: Outcomes) -> set[tuple[str, str]]:
    """The units of ``keys`` dropped before generation in both arms (``dropped_in_both``): no unit of the block."""
    return {
        k[:2] for k in keys if dropped_in_both(attempt_states(oa.get(k[:2])), attempt_states(ob.get(k[:2])))
    }


def dropped_one_arm(keys: Iterable[tuple[str, str, str]], oa: Outcomes, ob: Outcomes) -> int:
    """Units dropped before generation in one arm and answered in the other: judged, the drop a missing answer."""
    out = 0
    for k in keys:
        a, b = attempt_states(oa.get(k[:2])), attempt_states(ob.get(k[:2]))
        if ("dropped" in a) != ("dropped" in b):
            out += 1
    return out


def dropped_units(units: Iterable[tuple[str, str]], drops: Drops) -> list[DroppedUnits]:
    """The left-out units per reason (``drops``: the run's record of why; a unit it does not name was dropped by
    the context fit, the only other drop before generation)."""
    counts: dict[tuple[DropReason, int | None], int] = {}
    for unit in units:
        why = drops.get(unit, ("context fit", None))
        counts[why] = counts.get(why, 0) + 1
    return [
        DroppedUnits(reason=reason, units=n, context_tokens=context)
        for (reason, context), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0))
    ]


def _unit_scores(ra: OutcomeRow | None, rb: OutcomeRow | None, scoring: Scoring) -> tuple[int, int]:
    """A sample's first attempt in A and B by the block's scoring rule (module docstring)."""
    if scoring == "summary rule":
        return is_correct_int(ra), is_correct_int(rb)
    return (
        int(attempt_value(attempt_states(ra)[0], "test")),
        int(attempt_value(attempt_states(rb)[0], "control")),
    )


def with_fields(block: PairedBenchmark, fields: Mapping[str, object]) -> PairedBenchmark:
    """``block`` with ``fields`` set, validated as a whole (``model_copy(update=…)`` would not validate: a
    misspelt field or a value of the wrong type would reach compare.json)."""
    return PairedBenchmark.model_validate({**dict(block), **fields})


def block_of_pairs(
    name: str, keys: list[tuple[str, str, str]], pair: PairedOutcomes, bootstrap: Bootstrap, gate: BlockGate
) -> PairedBenchmark:
    """The paired block ``name`` of ``keys``: counts and intervals (``_counted``), then the power, sequential
    and gate fields.  ``keys`` may hold units dropped before generation in both arms: they are left out
    (``dropped``, their reasons from ``pair.drops``); ``gate.planned`` and ``gate.plan_sizes`` count the units
    that remain."""
    oa, ob = pair.test, pair.control
    gone = left_out(keys, oa, ob)
    dropped = dropped_units([k[:2] for k in keys if k[:2] in gone], pair.drops)
    one_arm = dropped_one_arm(keys, oa, ob)
    keys = [k for k in keys if k[:2] not in gone]
    fields: dict[str, object] = {"dropped": dropped, "dropped_one_arm": one_arm}
    fields.update(power_fields(keys, pair, gate.margin_pts, bootstrap.confidence))
    fields.update(sequential_fields(keys, pair, gate))
    fields.update(gate_fields(keys, pair, gate, fields))
    return with_fields(_counted(name, keys, pair, bootstrap), fields)


def _counted(
    name: str, keys: list[tuple[str, str, str]], pair: PairedOutcomes, bootstrap: Bootstrap
) -> PairedBenchmark:
    """The block's counts by its scoring rule — both scores with Wilson intervals, the difference with its
    paired-bootstrap interval, McNemar on the discordant pairs, the flips — over each sample's first attempt."""
    # import cost: scipy, pandas (~1039 modules), only on this path
    from evalpipe.stats.paired import exact_mcnemar_p, paired_bootstrap

    oa, ob = pair.test, pair.control
    a_vals, b_vals, flips = [], [], []
    unverified = 0
    for bench, sid, stratum in keys:
        ra, rb = oa.get((bench, sid)), ob.get((bench, sid))
        ha = (ra.prompt_sha256 or ra.expected_prompt_sha256) if ra else None
        hb = (rb.prompt_sha256 or rb.expected_prompt_sha256) if rb else None
        if ha is None or hb is None:
            unverified += 1
        ca, cb = _unit_scores(ra, rb, pair.scoring)
        a_vals.append(ca)
        b_vals.append(cb)
        if ca != cb:
            flips.append(_flip(bench, sid, stratum, ra, rb))
    n = len(keys)
    both = sum(1 for x, y in zip(a_vals, b_vals, strict=True) if x and y)
    a_only = sum(1 for x, y in zip(a_vals, b_vals, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a_vals, b_vals, strict=True) if y and not x)
    diff: float | None = None
    lo: float | None = None
    hi: float | None = None
    p: float | None = None
    if n:
        diff = sum(a_vals) / n - sum(b_vals) / n  # = sa.score - sb.score
        lo, hi = paired_bootstrap(
            a_vals, b_vals, resamples=bootstrap.resamples, seed=bootstrap.seed, confidence=bootstrap.confidence
        )
        p = exact_mcnemar_p(a_only, b_only)
    # a, b and the flips count each sample's first attempt; the paired_* fields every attempt
    attempts = max(
        (len(r.attempts) for key in keys for r in (oa.get(key[:2]), ob.get(key[:2])) if r is not None),
        default=1,
    )
    return PairedBenchmark(
        benchmark=name,
        n_pairs=n,
        repeats=max(attempts, 1),  # a row with no attempt recorded still asked once
        a=score_with_interval(sum(a_vals), n),
        b=score_with_interval(sum(b_vals), n),
        difference=diff,
        diff_ci_low=lo,
        diff_ci_high=hi,
        both_correct=both,
        a_only=a_only,
        b_only=b_only,
        both_wrong=n - both - a_only - b_only,
        mcnemar_p=p,
        flips=flips,
        prompt_hash_unverified=unverified,
    )


def _flip(bench: str, sid: str, stratum: str, ra: OutcomeRow | None, rb: OutcomeRow | None) -> Flip:
    """A sample scored differently in A and B (a missing row named as such)."""
    return Flip(
        benchmark=bench,
        source_id=sid,
        stratum=stratum,
        score_a=ra.score if ra else None,
        score_b=rb.score if rb else None,
        failure_a=ra.failure_label if ra else "missing_row",
        failure_b=rb.failure_label if rb else "missing_row",
    )


def aa_only_block(block: PairedBenchmark) -> PairedBenchmark:
    """An A/A-only block: the A/B fields that would only restate the A/A pair are dropped."""
    return with_fields(
        block,
        {
            "ab_discordant": None,
            "noise_vs_ab": None,
            "by_length": [aa_only_block(x) for x in block.by_length],
        },
    )
