"""The report's sentences for power, non-inferiority, sample-size plans and the A/A noise.

One place decides the wording so that compare.md, the report, the terminal, the explorer and ``evalpipe plan``
say the same thing; compare.json holds only the numbers they are made from.
Numbers are in points with one decimal (signed bounds with an ASCII minus, as ``compare.md`` prints
differences); a bound that would print equal to the margin gets more decimals, so a sentence never
reads "lower bound -2.0 pts" next to "non-inferior within 2 pts".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from evalpipe.artifacts.schema.compare import (
    Discordance,
    NonInferiorityResult,
    OperatingCharacteristic,
    SequentialResult,
)
from evalpipe.artifacts.schema.fleet import FleetEventSummary
from evalpipe.words.numbers import fmt_pts

if TYPE_CHECKING:  # the statistics' result types only: reading a sentence never loads scipy
    from evalpipe.stats.power import MinimumDetectableEffect, SampleSizeNeeded


class IntervalVerdict(Protocol):
    """An interval of test − control judged against a margin: compare.json's ``non_inferiority`` or the
    statistic it was made from (``evalpipe.stats.noninferiority.NonInferiority``)."""

    @property
    def margin_pts(self) -> float: ...
    @property
    def lower_bound_pts(self) -> float: ...
    @property
    def upper_bound_pts(self) -> float: ...
    @property
    def verdict(self) -> Literal["non-inferior", "inferior", "inconclusive"]: ...


class ExcessNoise(Protocol):
    """A/B's changed answers against the A/A control's: compare.json's ``noise_vs_ab`` or the statistic it
    was made from (``evalpipe.stats.paired.ExcessDiscordance``)."""

    @property
    def n_samples(self) -> int: ...
    @property
    def ab_changed(self) -> int: ...
    @property
    def aa_changed(self) -> int: ...
    @property
    def p_value(self) -> float: ...
    @property
    def exceeds(self) -> bool: ...


def margin_text(value: float) -> str:
    """A margin as the user wrote it: ``2`` not ``2.0``, ``2.5`` stays."""
    return f"{value:g}"


def _bound(value: float, margin: float) -> str:
    """A signed bound with one decimal, more when one decimal would print the margin itself."""
    decimals = 1
    while decimals < 12 and value != -margin and round(value, decimals) == -margin:
        decimals += 1
    return f"{value:+.{decimals}f}"


def mde_words(mde_pts: float | None, n: int, power: float) -> str:
    """E.g. "this sample detects a drop of ≥ 7.4 pts with 80 % power; smaller regressions cannot be ruled out";
    ``mde_pts`` None: no drop is detected with that power at ``n`` samples."""
    said = f"{power * 100:g} %"
    if mde_pts is None:
        return (
            f"this sample ({n} samples) cannot detect a drop of any size with {said} power; "
            "no regression can be ruled out"
        )
    return (
        f"this sample detects a drop of ≥ {fmt_pts(mde_pts)} pts with {said} power; "
        "smaller regressions cannot be ruled out"
    )


def mde_sentence(mde: MinimumDetectableEffect) -> str:
    """``mde_words`` of a computed MDE (``evalpipe plan``)."""
    return mde_words(mde.mde_pts, mde.n, mde.power)


def non_inferiority_sentence(result: IntervalVerdict) -> str:
    """The fixed 95 % interval's verdict: "non-inferior within 2 pts", "inferior", or "inconclusive: the
    sample cannot exclude a 9.1-pt drop" (the drop: ``−lower bound``, at least 0)."""
    margin = margin_text(result.margin_pts)
    low = _bound(result.lower_bound_pts, result.margin_pts)
    high = _bound(result.upper_bound_pts, result.margin_pts)
    if result.verdict == "non-inferior":
        return f"non-inferior within {margin} pts (95 % lower bound of test − control: {low} pts)"
    if result.verdict == "inferior":
        return f"inferior: the whole 95 % interval lies below -{margin} pts (upper bound {high} pts)"
    drop = fmt_pts(max(0.0, -result.lower_bound_pts))
    return f"inconclusive: the sample cannot exclude a {drop}-pt drop (margin {margin} pts, lower bound {low} pts)"


def gate_sentence(result: NonInferiorityResult) -> str:
    """The gate's verdict, what decided it and that test's interval (``evalpipe.stats.operating``), e.g.
    "non-inferior within 10 pts (fixed look: test − control in [−4.2, +3.1] pts at z* = 2.42, one-sided α
    0.025)"; at a crossing the interval is the margins the e-processes have not rejected, so the verdict reads
    off it.  A version-5 file's sequential interval (descriptive) is said apart, after the verdict."""
    margin = margin_text(result.margin_pts)
    descriptive = result.interval == "descriptive"
    low = _bound(result.lower_bound_pts, result.margin_pts)
    high = _bound(result.upper_bound_pts, result.margin_pts)
    alpha = f"one-sided α {result.alpha:g}" if result.alpha is not None else "95 % interval"
    spent = f" at α {result.alpha_spent:g}" if result.alpha_spent is not None else ""
    after = f" after {result.units_used} units" if result.units_used is not None else ""
    not_rejected = "" if descriptive else f": margins not rejected [{low}, {high}] pts{spent}"
    if result.basis == "sequential crossing":
        how = f"the e-processes crossed{after}{not_rejected}; {alpha} in all"
    elif result.basis in ("extended: no crossing", "sequential: no crossing"):
        alone = (
            "an extended block is judged by its e-processes alone"
            if result.basis == "extended: no crossing"
            else "all of α is on the e-processes"
        )
        return (
            f"inconclusive: {alone} and they never crossed (margin {margin} pts{not_rejected}; {alpha})"
            + _descriptive(result)
        )
    else:
        look = {
            "final look": "final look, the e-processes never crossed",
            "fixed: first run": f"fixed look at the first run's {result.units_used} units (a fixed design's "
            "look spent α there: units an extension added do not enter it)",
        }.get(result.basis or "", "fixed look")
        z = f" at z* = {result.critical_value:.2f}" if result.critical_value is not None else ""
        how = f"{look}: test − control in [{low}, {high}] pts{z}, {alpha}"
    if result.verdict == "non-inferior":
        return f"non-inferior within {margin} pts ({how})" + _descriptive(result)
    if result.verdict == "inferior":
        return f"inferior: worse than −{margin} pts ({how})" + _descriptive(result)
    if descriptive:
        return f"inconclusive (margin {margin} pts; {how})" + _descriptive(result)
    drop = fmt_pts(max(0.0, -result.lower_bound_pts))
    return f"inconclusive: cannot exclude a {drop}-pt drop (margin {margin} pts; {how})"


def deciding_interval_name(result: NonInferiorityResult) -> str:
    """What the gate's bounds are, named after the test that decided (``NonInferiorityResult.basis``)."""
    if result.basis in ("sequential crossing", "sequential: no crossing", "extended: no crossing"):
        spent = f" at α {result.alpha_spent:g}" if result.alpha_spent is not None else ""
        return f"margins not rejected{spent}"
    if result.basis is None:
        return "fixed 95 % interval"
    z = f" at z* = {result.critical_value:.2f}" if result.critical_value is not None else ""
    return {"final look": "final look", "fixed: first run": "first run's look"}.get(
        result.basis, "fixed look"
    ) + z


def verdict_cell(result: NonInferiorityResult) -> str:
    """The verdict with the interval that decided it, named, e.g. "non-inferior [−2.6, +5.9] (fixed look at
    z* = 2.29)": what a table prints in the verdict's column.  A version-5 file's sequential bounds tested no
    margin: the cell names the verdict alone and says where its (descriptive) interval is."""
    if result.interval == "descriptive":
        return f"{result.verdict} (no deciding interval recorded; a descriptive one in the notes)"
    low = _bound(result.lower_bound_pts, result.margin_pts)
    high = _bound(result.upper_bound_pts, result.margin_pts)
    return f"{result.verdict} [{low}, {high}] ({deciding_interval_name(result)})"


def _descriptive(result: NonInferiorityResult) -> str:
    """A version-5 file's sequential bounds, said apart from the verdict (they test no margin); else ""."""
    if result.interval != "descriptive":
        return ""
    return (
        f". Descriptive, not the test that decided: a two-sided empirical-Bernstein confidence sequence "
        f"[{result.lower_bound_pts:+.1f}, {result.upper_bound_pts:+.1f}] pts"
    )


def operating_sentence(oc: OperatingCharacteristic) -> str:
    """E.g. "with the discordance seen here (A/A ψ = 0.080), this design passes a release with no regression
    98.1 % of the time, one at the margin (−10 pts) 1.2 %, and one with an 18.6-pt drop 0.0 %"."""

    def pct(p: float, se: float) -> str:
        return f"{100 * p:.1f} %" + (f" ± {100 * se:.1f}" if se > 0 else "")

    parts = []
    for point in oc.points:
        if point.delta_pts == 0:
            parts.append(
                f"passes a release with no regression {pct(point.p_pass, point.standard_error)} of the time"
            )
        elif oc.must_catch_drop_pts is not None and abs(point.delta_pts + oc.must_catch_drop_pts) < 1e-9:
            parts.append(
                f"one with a {margin_text(oc.must_catch_drop_pts)}-pt drop {pct(point.p_pass, point.standard_error)}"
            )
        else:
            parts.append(
                f"one at the margin ({point.delta_pts:+g} pts) {pct(point.p_pass, point.standard_error)}"
            )
    design = (
        "fixed design"
        if oc.sequential_share is None
        else f"sequential design ({oc.sequential_share:g} of α on the e-processes)"
    )
    how = "exact" if oc.paths is None else f"{oc.paths} simulated paths"
    return (
        f"with the discordance seen here ({oc.discordance_source} ψ = {oc.discordance:.3f}), this {design} of "
        f"{oc.n} units {', '.join(parts)} ({how})"
    )


def sample_size_sentence(plan: SampleSizeNeeded) -> str:
    """E.g. "an MDE of 2 pts needs 1778 samples (population 1319: not reachable)"."""
    target = margin_text(round(plan.target * 100, 6))
    if plan.n_needed is None:
        return f"an MDE of {target} pts is beyond the largest drop this accuracy allows"
    text = f"an MDE of {target} pts needs {plan.n_needed} samples"
    if plan.repeats > 1:
        text += f" × {plan.repeats} attempts"
    if plan.population is not None:
        text += f" (population {plan.population}: {'reachable' if plan.reachable else 'not reachable'})"
    return text


def noise_sentence(result: ExcessNoise) -> str:
    """E.g. "A/B changed 12 of 160 answers, the A/A control 3: more than the server's own noise (p = 0.035)"."""
    head = (
        f"A/B changed {result.ab_changed} of {result.n_samples} answers, the A/A control {result.aa_changed}"
    )
    if result.exceeds:
        return f"{head}: more than the server's own noise (exact McNemar p = {result.p_value:.3g})"
    return f"{head}: not distinguishable from the server's own noise (exact McNemar p = {result.p_value:.3g})"


def aa_sentence(aa: Discordance) -> str:
    """The server's own noise in words: responses that differed and samples whose score changed."""
    said = []
    if aa.responses_compared:
        said.append(f"{aa.responses_differed} of {aa.responses_compared} responses differed byte for byte")
    said.append(
        f"the score changed on {aa.discordant} of {aa.n_pairs} samples "
        f"({aa.first_better} better the first time, {aa.second_better} the second)"
    )
    return "A/A: " + "; ".join(said)


def sequential_sentence(seq: SequentialResult) -> str:
    """E.g. "sequential: non-inferior within 5 pts after 166 of 495 units (K+ = 20.4 ≥ 1/0.05; margins not
    rejected [-3.1, +4.0] pts); stopping there leaves 66 % of the units and 64 % of the output tokens unsent";
    when the rule stopped inside the run, what was never sent.  The interval is the inversion of the two
    e-processes (``evalpipe.stats.sequential.eprocess_interval``), so the verdict reads off it."""
    margin = margin_text(seq.margin_pts)
    threshold = f"1/{seq.alpha:g}"
    descriptive = seq.interval == "descriptive"
    low, high = _bound(100.0 * seq.cs_low, seq.margin_pts), _bound(100.0 * seq.cs_high, seq.margin_pts)
    cs = "" if descriptive else f"; margins not rejected [{low}, {high}] pts"
    used = f"{seq.units_used} of {seq.units_available} units"
    if seq.verdict == "non-inferior":
        head = f"non-inferior within {margin} pts after {used} (K+ = {seq.e_value_non_inferior:.3g} ≥ {threshold}{cs})"
    elif seq.verdict == "inferior":
        head = (
            f"inferior beyond -{margin} pts after {used} (K- = {seq.e_value_inferior:.3g} ≥ {threshold}{cs})"
        )
    else:
        where = "at the cap" if seq.stop_reason == "cap" else "when the units ran out"
        head = (
            f"inconclusive {where} after {used}, margin {margin} pts (K+ = {seq.e_value_non_inferior:.3g}, "
            f"K- = {seq.e_value_inferior:.3g}, neither reached {threshold}{cs})"
        )
    if descriptive:
        head += (
            f". Descriptive, not the test that decided: a two-sided empirical-Bernstein confidence sequence "
            f"[{100.0 * seq.cs_low:+.1f}, {100.0 * seq.cs_high:+.1f}] pts"
        )
    tokens_unsent_share = seq.output_tokens_unsent_share
    if seq.stopped_in_run and seq.units_sent is not None and seq.units_planned is not None:
        saved = f"{seq.units_planned - seq.units_sent} of {seq.units_planned} planned units"
        if tokens_unsent_share is not None:
            saved += f" and about {100 * tokens_unsent_share:.0f} % of the fixed design's output tokens"
        return f"sequential: {head}; stopped inside the run, {saved} never sent"
    units_left = seq.units_available - seq.units_used
    if units_left == 0:
        return f"sequential: {head}"
    saved = f"{100 * units_left / seq.units_available:.0f} % of the units"
    if tokens_unsent_share is not None:
        saved += f" and {100 * tokens_unsent_share:.0f} % of the output tokens"
    return f"sequential: {head}; stopping there leaves {saved} unsent"


def _e(value: float) -> str:
    return f"{value:.3g}"


def sequential_design_line(seq: SequentialResult, members: list[str]) -> str:
    """The design, the rule and its path, rendered from compare.json's sequential block, e.g. "sequential
    design: 120 units × 1 attempt per arm (pool of aime24, aime25), planned bet tuned to n = 120, cap 180,
    α = 0.05, units in the seeded sequence order; looks (unit: K+ / K−, margins not rejected, pts): 12: 1.21 /
    0.83 [-9.0, +6.1],
    …, 83 (stop): 20.4 / 0.05 [-3.1, +4.0]; first crossing K+ at 83, K− never; output tokens 3.2 M spent of
    4.1 M (the fixed design)"."""
    unit_word = "unit" if seq.units_available == 1 else "units"
    if seq.units_by_attempts:  # an internal pilot: its units once, the rest as it chose
        mix = ", ".join(
            f"{units} × {k} attempt{'s' if k != 1 else ''}" for k, units in seq.units_by_attempts.items()
        )
        design = f"{seq.units_available} {unit_word} ({mix}) per arm"
    else:
        design = f"{seq.units_available} {unit_word} × {seq.repeats} attempt{'s' if seq.repeats != 1 else ''} per arm"
    design += f" (pool of {', '.join(members)})" if members else ""
    if seq.stopped_in_run and seq.units_planned is not None:
        design += f" sent of {seq.units_planned} planned (the rule stopped sending inside the run)"
    bet = f"planned bet tuned to n = {seq.planned_n}" if seq.planned_n is not None else "aGRAPA bet"
    rule = f"{bet}, cap {seq.cap}, α = {seq.alpha:g}, units in the seeded sequence order"
    parts = [f"sequential design: {design}, {rule}"]
    if seq.looks:
        looks = ", ".join(
            f"{x.unit}{' (stop)' if x.unit == seq.units_used else ''}: {_e(x.e_value_non_inferior)} / "
            f"{_e(x.e_value_inferior)} [{100 * x.cs_low:+.1f}, {100 * x.cs_high:+.1f}]"
            for x in seq.looks
        )
        label = "CS pts, descriptive" if seq.interval == "descriptive" else "margins not rejected, pts"
        parts.append(f"looks (unit: K+ / K−, {label}): {looks}")
    if seq.look_every is not None:

        def crossed(unit: int | None) -> str:
            if unit is None:
                return "never"
            return f"at {unit}" + (" (after the stop)" if unit > seq.units_used else "")

        parts.append(
            f"first crossing K+ {crossed(seq.first_crossing_non_inferior)}, "
            f"K− {crossed(seq.first_crossing_inferior)}"
        )
    if seq.output_tokens_fixed is not None and seq.output_tokens_spent is not None:
        if seq.stopped_in_run:  # the units never sent have no tokens: the fixed design's is an estimate
            waste = seq.output_tokens_after_stop
            parts.append(
                f"output tokens {tokens_text(seq.output_tokens_spent)} spent against about "
                f"{tokens_text(seq.output_tokens_fixed)} for the fixed design (the same per unit over the plan)"
                + (f", {tokens_text(waste)} of them after the verdict's unit (in flight)" if waste else "")
            )
        else:
            parts.append(
                f"output tokens {tokens_text(seq.output_tokens_spent)} spent of {tokens_text(seq.output_tokens_fixed)} "
                "(the fixed design)"
            )
    return "; ".join(parts)


def tokens_text(count: float) -> str:
    """Tokens in millions with one decimal (``4.3 M``), below a million in thousands (``850 k``), below ten
    thousand as they are (``7,031``)."""
    if count >= 1e6:
        return f"{count / 1e6:.1f} M"
    return f"{count / 1e3:.0f} k" if count >= 1e4 else f"{count:,.0f}"


def event_sentence(ev: FleetEventSummary) -> str:
    """One line for the report and the findings: what, when, what was in flight, what became of it."""
    line = f"{ev.at}: {ev.message}; {ev.in_flight} request(s) in flight"
    if ev.failed_attempts is not None:
        line += f"; {ev.failed_attempts} attempt(s) failed there, {ev.resent} re-sent, " + (
            "every request answered" if not ev.unanswered else f"{ev.unanswered} left unanswered"
        )
    if ev.answers_after_change is not None:
        line += f"; {ev.answers_after_change} answer(s) since its last verified poll may come from it"
    return line
