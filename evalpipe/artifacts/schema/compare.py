"""``compare.json`` — a paired comparison of two runs on the identical manifest.

Numbers and typed values only: every sentence a reader sees (compare.md, the report, the terminal, the
explorer) is made from these fields where it is shown (``evalpipe.report``), so a wording change never
changes the file and a reader of the file never parses English."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.artifacts.schema.numerics import NumericsComparison


class ScoreWithInterval(Row):
    correct: int
    scored: int
    score: float | None
    ci_low: float | None
    ci_high: float | None


class Flip(Row):
    benchmark: str
    source_id: str
    stratum: str
    score_a: float | None
    score_b: float | None
    failure_a: str
    failure_b: str


class Discordance(Row):
    """How two runs of the same samples disagreed (``evalpipe.stats.paired.paired_difference``)."""

    n_pairs: int
    first_better: int = Field(description="Samples whose per-sample mean is higher in the first run.")
    second_better: int = Field(description="Samples whose per-sample mean is higher in the second run.")
    discordant: int = Field(description="first_better + second_better (k = 1: the flips).")
    second_moment: float = Field(description="Mean squared per-sample difference (k = 1: discordant / n).")
    responses_compared: int | None = Field(
        default=None, description="A/A: samples with a response hash in both runs (attempt 0)."
    )
    responses_differed: int | None = Field(
        default=None, description="A/A: of those, samples whose responses were not byte-identical."
    )


#: Why a unit was never sent, decided before generation: its prompt and output budget exceed the configured
#: context (the context fit, with the benchmark's drop_overlong consent), or the context the server resolved (a
#: benchmark built to lengths, e.g. the KV probe).
DropReason = Literal["context fit", "served context"]


class DroppedUnits(Row):
    """Units dropped before generation in both arms for one reason: left out of the block (no unit of its paired
    statistics or its gate; its n is the units that remain)."""

    reason: DropReason
    units: int
    context_tokens: int | None = Field(
        default=None,
        description="The context they were dropped against (tokens per request: the configured context for "
        "'context fit', the served one for 'served context'); None: not recorded.",
    )


class DesignCheck(Row):
    """The discordance this comparison measured beside the one the design assumed (config ``design:``).

    ``measured`` is the A/A pair's when there is one (the quantity the design assumes: two runs with no
    regression), else the A/B pair's (which also holds any effect); ``exceeds``: its interval's lower end is
    above the design's discordance, so the gate's operating characteristic is worse than planned — the block's
    ``operating`` states it at the measured value."""

    design_discordance: float = Field(description="The discordance the design assumed (config design:).")
    design_accuracy: float = Field(description="The control accuracy the design assumed.")
    chance_discordance: float = Field(
        description="2p(1-p) at the design's accuracy: two runs agreeing no more than chance (a reference; "
        "never at a measured accuracy, which may be 0 or 1)."
    )
    source: Literal["A/A", "A/B"] = Field(description="Which measured pair the check reads.")
    measured: float = Field(description="The measured discordance (mean squared per-sample difference).")
    measured_low: float = Field(description="95 % Wilson interval of the measured discordance, low end.")
    measured_high: float
    ab_discordance: float | None = Field(
        default=None, description="The A/B pair's discordance (beside the A/A one; it also holds any effect)."
    )
    ab_low: float | None = None
    ab_high: float | None = None
    exceeds: bool = Field(
        description="measured_low > design_discordance: the design assumed too little noise."
    )


class AttemptSeedCheck(Row):
    """With generation.repeats > 1: the seeds the attempts' requests carried, as recorded by each arm's proxy
    (``OutcomeRow.attempts[].request_seed``), and how many samples' attempts answered byte for byte alike.

    Attempts of a sample should carry distinct seeds and every arm the same ones (common random numbers,
    ``evalpipe.hashing.attempt_seed``).  At temperature > 0, many samples whose attempts returned identical
    text mean the server ignored the seed or the temperature: the repeats then measure no noise."""

    repeats: int = Field(description="Attempts per sample (the most either arm recorded).")
    temperature: float | None = Field(
        default=None,
        description="generation.temperature of run A (config.yaml); at 0 identical attempts are expected. "
        "None: unknown.",
    )
    samples: int = Field(description="Samples of the block.")
    seeded: int = Field(description="Samples with a recorded seed for every attempt in both arms.")
    distinct: int = Field(
        description="Of seeded: every attempt's seed differs from the others', in both arms."
    )
    common: int = Field(description="Of seeded: arm A's seed of each attempt equals arm B's.")
    compared_a: int = Field(description="Samples with a response hash for every attempt in arm A.")
    identical_a: int = Field(description="Of compared_a: every attempt's response was byte-identical.")
    compared_b: int = Field(description="Samples with a response hash for every attempt in arm B.")
    identical_b: int = Field(description="Of compared_b: every attempt's response was byte-identical.")
    differing_across_arms: list[str] = Field(
        default_factory=list,
        description="Source ids (benchmark/source_id, the first 20) whose seeds differ between the arms.",
    )


class NoiseComparison(Row):
    """Does A/B change more samples' correctness than the A/A control (exact McNemar on the indicators)?"""

    ab_changed: int
    aa_changed: int
    ab_only: int
    aa_only: int
    n_samples: int = Field(description="Samples of the block (the denominator of both counts).")
    p_value: float
    exceeds: bool


class NonInferiorityResult(Row):
    """The gate's decision on the block (``evalpipe.stats.operating.gate_verdict``): its verdict, what decided
    it, and the interval that test gives — non-inferior ⇔ lower bound > −margin, inferior ⇔ upper bound <
    −margin."""

    margin_pts: float
    lower_bound_pts: float
    upper_bound_pts: float
    verdict: Literal["non-inferior", "inferior", "inconclusive"]
    basis: (
        Literal[
            "fixed",
            "fixed: first run",
            "sequential crossing",
            "final look",
            "sequential: no crossing",
            "extended: no crossing",
        ]
        | None
    ) = Field(
        default=None,
        description="What decided the gate (evalpipe.stats.operating): the fixed look (no sequential rule); a "
        "fixed design's look at its first run's units after an extension (the look spent alpha there); the "
        "e-processes' crossing; the fixed look taken when they never crossed; e-processes that never crossed "
        "with all of alpha on them (sequential_share 1); an extended block whose e-processes never crossed (no "
        "second fixed look). The bounds are the deciding test's: the Bonett-Price interval at z* for a look, "
        "else the margins the e-processes have not rejected at alpha_spent. None: a file written before the "
        "gate's rule was recorded (the fixed 95 % interval).",
    )
    alpha: float | None = Field(default=None, description="The gate's one-sided error at the margin.")
    critical_value: float | None = Field(
        default=None,
        description="z* of the fixed look: the Bonett-Price bound at z* clears -margin at most alpha of the time "
        "at the margin, whatever the discordance (exact unconditional calibration). None at a crossing.",
    )
    alpha_spent: float | None = Field(
        default=None,
        description="The level of the test that decided: alpha x sequential_share for the e-processes, the "
        "rest for a final look, alpha for a fixed design. None: a file written before it was recorded.",
    )
    units_used: int | None = Field(
        default=None, description="Units the deciding test read (the crossing's, else the look's)."
    )
    interval: Literal["decision", "descriptive"] = Field(
        default="decision",
        description="decision: the bounds are the deciding test's (the verdict reads off them); descriptive: a "
        "file of version 5 or older whose sequential verdict carried the two-sided empirical-Bernstein "
        "confidence sequence, which tests no margin and may disagree with the verdict.",
    )


class OperatingPoint(Row):
    """``P(pass)`` of the block's design at one true difference."""

    delta_pts: float = Field(description="True test − control, points (0: no regression).")
    p_pass: float
    standard_error: float = Field(description="Monte-Carlo standard error (0 for exact enumeration).")
    method: Literal["exact enumeration", "simulation"]
    mean_units: float = Field(description="Mean units the design judges at this difference (its stop).")


class OperatingCharacteristic(Row):
    """How often this block's design passes, at the discordance this comparison measured."""

    discordance: float = Field(description="Share of units whose correctness differed with no regression.")
    discordance_source: Literal["A/A", "A/B"] = Field(
        description="A/A: the control and its repeat; A/B: the pair itself (it also holds any effect)."
    )
    n: int
    margin_pts: float
    alpha: float
    sequential_share: float | None = Field(description="None: the fixed design.")
    must_catch_drop_pts: float | None
    paths: int | None = Field(description="Simulated paths (sequential design); None: exact.")
    points: list[OperatingPoint]


class SequentialLook(Row):
    """One look of the sequential rule: the evidence after ``unit`` units in the seeded order."""

    unit: int
    e_value_non_inferior: float = Field(description="K+ after this unit.")
    e_value_inferior: float = Field(description="K- after this unit.")
    cs_low: float = Field(description="The margins the e-processes had not rejected after this unit, low end.")
    cs_high: float


class SequentialResult(Row):
    """The block judged unit by unit (``evalpipe.stats.sequential``): where the rule stopped and why."""

    margin_pts: float
    alpha: float = Field(description="Error bound of each verdict (K >= 1/alpha).")
    bets: Literal["planned", "aGRAPA"] = Field(
        description="planned: the predictable plug-in bet tuned to planned_n; aGRAPA: no plan."
    )
    planned_n: int | None = Field(description="The fixed-n plan the bets are tuned to (the block's units).")
    cap: int = Field(description="Units after which the rule ends inconclusive (cap_factor x planned_n).")
    sequence_seed: int = Field(
        description="The manifest's sampling seed that orders the units: ascending "
        'sha256(f"{seed}:sequence:{benchmark}:{source_id}") (evalpipe.hashing.sequence_key), never completion '
        "order; after --extend each generation's units in that order, the older first (generations)."
    )
    units_available: int
    units_used: int = Field(description="Units consumed when the rule stopped.")
    verdict: Literal["non-inferior", "inferior", "inconclusive"]
    stop_reason: Literal["crossing", "cap", "units exhausted"]
    e_value_non_inferior: float = Field(description="K+ at the stop (against 'drop of at least the margin').")
    e_value_inferior: float = Field(description="K- at the stop (against 'drop of at most the margin').")
    cs_low: float = Field(
        description="At the stop, the smallest margin (fraction; test − control) the two e-processes have not "
        "rejected at alpha (evalpipe.stats.sequential.eprocess_interval): non-inferior ⇔ cs_low > -margin."
    )
    cs_high: float = Field(
        description="At the stop, the largest margin the e-processes have not rejected: inferior ⇔ cs_high < "
        "-margin."
    )
    interval: Literal["decision", "descriptive"] = Field(
        default="decision",
        description="decision: cs_low/cs_high (and the looks') invert the e-processes that decide; descriptive: "
        "a file of version 5 or older, whose were the two-sided empirical-Bernstein confidence sequence.",
    )
    units_unsent_share: float = Field(
        description="Share of the block's units after the stop; when the rule stopped inside the run "
        "(stopped_in_run), the share of the planned units that were never sent."
    )
    output_tokens_unsent_share: float | None = Field(
        description="Share of the block's recorded output tokens (both arms; with repeats each sample's "
        "first attempt) in the units after the stop — what the rule would have left unsent; when it stopped "
        "inside the run, 1 - output_tokens_spent / output_tokens_fixed (what it did leave unsent). None when "
        "no tokens were recorded."
    )
    repeats: int = Field(
        default=1,
        description="The design: attempts per arm in each unit (the block's n is planned_n; a pool's "
        "benchmarks are the block's members); the most any unit had when units_by_attempts says they differ.",
    )
    units_by_attempts: dict[int, int] = Field(
        default_factory=dict,
        description="Attempts per arm -> units judged with that many, when they differ between units (an "
        "internal pilot: its units once, the rest as it chose); empty: every unit had `repeats`.",
    )
    output_tokens_spent: int | None = Field(
        default=None,
        description="Recorded output tokens (both arms, as output_tokens_unsent_share counts them) of the units "
        "up to the stop; None when no tokens were recorded.",
    )
    output_tokens_fixed: int | None = Field(
        default=None,
        description="The same over every unit: what the fixed design spent; when the rule stopped inside the "
        "run, the units never sent have no tokens: the spent tokens per unit sent x units_planned (an estimate).",
    )
    stopped_in_run: bool = Field(
        default=False,
        description="The rule stopped sending inside the run (generation.sequential.in_run): units_available "
        "are the units sent in both arms (a prefix of the sequence order), units_planned the manifest's.",
    )
    units_planned: int | None = Field(
        default=None, description="The block's units in the manifest (the fixed design) when stopped_in_run."
    )
    units_sent: int | None = Field(
        default=None,
        description="Units sent by every compared arm (the leading units of the sequence order), when "
        "stopped_in_run; the rest were never sent.",
    )
    stop_unit_in_run: int | None = Field(
        default=None,
        description="When stopped_in_run: the unit at which the rule crossed inside the run, on the worker's "
        "scores (sequential_stop.json; None: it did not cross there). units_used recomputes it from "
        "outcomes.jsonl; the two differ only when a review was re-judged after the run (e.g. a re-checked "
        "program).",
    )
    output_tokens_after_stop: int | None = Field(
        default=None,
        description="When stopped_in_run: recorded output tokens (both arms) of the units sent after the "
        "verdict's unit — in flight or released ahead at the stop, the waste the batch bounds.",
    )
    generations: list[int] = Field(
        default_factory=list,
        description="Units of the block per generation in sequence order when --extend grew it (the old "
        "run's units first, in its order, then each extension's): the e-process continued across them, each "
        "unit's bet tuned to the plan of its generation (cumulative sizes). Empty: one generation (never "
        "extended).",
    )
    max_e_value_non_inferior: float | None = Field(default=None, description="Largest K+ up to the stop.")
    max_e_value_inferior: float | None = Field(default=None, description="Largest K- up to the stop.")
    look_every: int | None = Field(
        default=None,
        description="looks holds every look_every-th unit up to the stop and the stop (about ten looks; the "
        "rule itself looked after every unit).",
    )
    looks: list[SequentialLook] = Field(
        default_factory=list, description="The path of the e-values and the confidence sequence, thinned."
    )
    first_crossing_non_inferior: int | None = Field(
        default=None,
        description="First unit at which K+ reached 1/alpha over every unit available (None: never); after "
        "units_used it is what a longer run would have seen, not the verdict.",
    )
    first_crossing_inferior: int | None = Field(
        default=None, description="The same for K- (the 'inferior' side)."
    )


class PlacementCell(Row):
    """One cell of a generated benchmark's length × placement grid (the KV-cache probe): the paired counts of
    the items of one context length whose evidence sat at one placement (a depth, a KV page edge, beyond the
    sparse indexer's window)."""

    length: int = Field(
        description="Context length asked for (tokens), from the entries' recorded generation."
    )
    placement: str = Field(description="dNN (depth in percent), page_before, page_after or beyond_top_k.")
    n_pairs: int
    a_correct: int
    b_correct: int
    a_only: int = Field(description="Flips A right, B wrong.")
    b_only: int = Field(description="Flips B right, A wrong: where the candidate falls behind.")


class MdeBasis(Row):
    """What ``mde_pts`` assumed (``evalpipe.stats.power``): the pair whose disagreement is the noise, and the
    power calculation of the test the block prints (exact McNemar at one attempt per arm, the paired score
    test with repeats) at the control's accuracy."""

    noise: Literal["A/A", "A/B"] = Field(
        description="A/A: the control against its repeat (the server's own noise); A/B: the pair itself (it "
        "also holds any effect), when no repeat ran."
    )
    second_moment: float = Field(description="Mean squared per-sample difference of that pair.")
    within: float | None = Field(
        default=None,
        description="With repeats in either run of that pair: the within-sample variance per attempt, both "
        "arms together. None: one attempt each (the pair's second moment is then all within for A/A, all "
        "between for A/B).",
    )
    between: float | None = Field(
        default=None,
        description="With repeats: the part of second_moment the within-sample noise does not explain.",
    )
    method: Literal["exact McNemar", "normal approximation (score test)"]
    repeats: int = Field(description="Attempts per arm the MDE is computed for.")
    power: float = Field(description="The power at which mde_pts is detected.")
    alpha: float = Field(description="Two-sided level of the test.")


class PairedBenchmark(Row):
    benchmark: str
    n_pairs: int = Field(
        description="Units judged: the block's samples (those sent, when the rule stopped inside the run) less "
        "those dropped before generation in both arms (dropped)."
    )
    repeats: int = Field(
        default=1,
        description="The most attempts a sample recorded in either arm. Above 1, a, b, difference, "
        "diff_ci_*, mcnemar_p and flips count each sample's first attempt; paired_* and the discordance "
        "fields every attempt.",
    )
    a: ScoreWithInterval = Field(
        description="A's correct samples by the comparison's scoring (CompareResult.scoring; with repeats: the "
        "first attempt; paired_* and the discordance fields use every attempt)."
    )
    b: ScoreWithInterval
    difference: float | None = Field(description="score_a - score_b (fraction; x100 for points).")
    diff_ci_low: float | None
    diff_ci_high: float | None
    both_correct: int
    a_only: int = Field(description="Discordant: correct in A, wrong in B.")
    b_only: int = Field(description="Discordant: wrong in A, correct in B.")
    both_wrong: int
    mcnemar_p: float | None = Field(
        description="Exact McNemar (binomial) two-sided p on the discordant pairs."
    )
    flips: list[Flip]
    prompt_hash_unverified: int = Field(
        default=0, description="Pairs where one side has no recorded prompt hash (e.g. no prediction)."
    )
    paired_ci_low: float | None = Field(
        default=None,
        description="Bonett–Price adjusted Wald interval of test − control over every attempt (does not "
        "collapse to [0, 0] when nothing flipped); the non-inferiority verdict uses it.",
    )
    paired_ci_high: float | None = None
    paired_test: Literal["exact McNemar", "paired score test"] | None = Field(
        default=None, description="exact McNemar (one attempt per arm) or paired score test (repeats)."
    )
    paired_p: float | None = Field(default=None, description="p of paired_test over every attempt.")
    ab_discordant: Discordance | None = None
    aa_discordant: Discordance | None = Field(
        default=None, description="The control against its repeat_of run (the noise); None without one."
    )
    noise_vs_ab: NoiseComparison | None = None
    attempt_seeds: AttemptSeedCheck | None = Field(
        default=None, description="Only with generation.repeats > 1 in either arm."
    )
    mde_pts: float | None = Field(
        default=None,
        description="Smallest drop detected with 80 % power, two-sided alpha 0.05 (None: no drop is).",
    )
    mde_basis: MdeBasis | None = Field(
        default=None, description="The noise model and the power calculation; None: no MDE was computed."
    )
    non_inferiority: NonInferiorityResult | None = Field(
        default=None, description="Only when gates.non_inferiority_margin_pts names this block."
    )
    operating: OperatingCharacteristic | None = Field(
        default=None,
        description="The gate's operating characteristic at the discordance measured here (blocks with a margin).",
    )
    sequential: SequentialResult | None = Field(
        default=None,
        description="Only with generation.sequential and a non-inferiority margin for this block.",
    )
    length: str | None = Field(
        default=None, description="Context-length bucket of this block (a block inside by_length)."
    )
    members: list[str] = Field(
        default_factory=list,
        description="A pool's benchmarks (config pools:), judged together; empty for a benchmark block.",
    )
    by_length: list[PairedBenchmark] = Field(
        default_factory=list,
        description="KV-cache view: the same paired statistics per context-length bucket (benchmarks with a "
        "length stratum), shortest first.",
    )
    dropped: list[DroppedUnits] = Field(
        default_factory=list,
        description="Units dropped before generation in both arms, per reason: not judged (n_pairs excludes "
        "them). Empty: none.",
    )
    dropped_one_arm: int = Field(
        default=0,
        description="Units dropped before generation in one arm and answered in the other: judged, the drop "
        "counted as no answer (against the arm under test).",
    )
    design_check: DesignCheck | None = Field(
        default=None,
        description="The measured discordance beside the design's assumption (blocks the config's design: "
        "names); None: the design assumes nothing for this block, or nothing was measured.",
    )
    by_placement: list[PlacementCell] = Field(
        default_factory=list,
        # written only for generated benchmarks: every other block's bytes stay as before
        exclude_if=lambda v: not v,
        description="A generated benchmark's length × placement grid (shortest length first, then placement "
        "as first met in the manifest): where in the context the candidate loses its evidence.",
    )


class CompareResult(Artifact):
    """Per block: Wilson intervals per run, the paired-bootstrap percentile interval of the difference
    (samples resampled with replacement, seeded numpy), the exact McNemar test on the discordant pairs
    (statsmodels, binomial) and the flips; with a repeat or a margin the power, noise and gate fields."""

    schema_version: int = 10
    run_a: str
    run_b: str
    label_a: str
    label_b: str
    run_aa: str | None = Field(
        default=None, description="The repeat of the control (variant with repeat_of): the A/A noise."
    )
    label_aa: str | None = None
    aa_only: bool = Field(
        default=False,
        description="A/A-only run (no A/B control): A is the variant, B its repeat_of run; every block's "
        "aa_discordant is A vs B, the server's own noise, and the MDE is what an A/B of this size could see.",
    )
    manifest_sha256: str = Field(description="sha256 of the (identical) manifest.json of both runs.")
    benchmark_versions: dict[str, str | None] = Field(
        default_factory=dict,
        description="Benchmark → the version (BenchmarkMeta.version) every compared run ran: runs that ran "
        "different versions are refused (evalpipe.compare.versions). None: some run recorded none (written "
        "before benchmarks declared versions), so a change in that benchmark's scoring between the runs would "
        "not show. Empty in a file before version 8.",
    )
    bootstrap_resamples: int = Field(description="Resamples of the paired bootstrap (diff_ci_low/high).")
    bootstrap_seed: int = Field(description="numpy seed of the paired bootstrap.")
    confidence: float = 0.95
    scoring: Literal["paired rule", "summary rule"] = Field(
        default="paired rule",
        description="How a, b, difference, diff_ci_*, the McNemar counts, mcnemar_p and flips score a sample — "
        "the rule the gate uses too. 'paired rule' (evalpipe.stats.unit_scores): an attempt without an answer "
        "counts wrong in A (under test) and right in B, units dropped before generation in both arms are left "
        "out. 'summary rule' (is_correct, both arms alike): an A/A-only record, which has no arm under test, and "
        "files before version 6.",
    )
    benchmarks: list[PairedBenchmark]
    pools: list[PairedBenchmark] = Field(
        default_factory=list,
        description="One block per config pool: the members' samples together as one paired comparison "
        "(unweighted over samples: the population-weighted mean when members are sampled in proportion to "
        "their populations, e.g. every problem of each AIME year).",
    )
    overall: PairedBenchmark | None = None
    numerics: NumericsComparison | None = Field(
        default=None,
        description="The numerics probe (config numerics:): per prompt the divergence of the next-token "
        "distributions of A and of the A/A arm from B's, per group the signed-rank test of A/B above A/A and "
        "its one-sided Hodges-Lehmann bound (evalpipe.numerics.compare).",
    )
