"""The paired speed comparison: per workload, test / control of the median across rounds, with an interval.

For each workload and each headline metric (output throughput; TTFT p50, p99; ITL p50, p99; E2E p50) the
point estimate is ``median(test rounds) / median(control rounds)`` of the per-round figures the clients
reported, with the round-bootstrap interval of ``evalpipe.stats.ratio`` (whole rounds resampled; round
pairs together when the variants' rounds alternated).  That interval covers about 76 % at 3 rounds and 93 %
at 5 (nominal from about 8: ``evalpipe.stats.ratio``) — hence ``rounds: 5`` by default.

Verdict (from output throughput): ``faster`` when the interval lies above 1, ``slower`` below 1,
``inconclusive`` when it contains 1 or when any round of either variant is incomplete (``completed`` <
requested, a timeout, a client error, requests of another length than asked) or the two variants did not
get the same prompts.  Latency ratios get
``better``/``worse`` (below/above 1) the same way.  The optional gate ``min_output_throughput_ratio`` compares
the point estimate, as the accuracy gates compare the score, and fails on an inconclusive-by-incomplete
workload.
"""

from __future__ import annotations

from collections.abc import Callable

from evalpipe.artifacts.schema.speed import RoundRecord, Schedule, SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import (
    Direction,
    GateOutcome,
    MetricName,
    MetricRatio,
    SpeedComparison,
    Verdict,
    WorkloadComparison,
)
from evalpipe.stats.ratio import median, ratio_interval

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261203
CONFIDENCE = 0.95
METHOD = (
    "ratio test/control of the median across rounds; {confidence:.0%} percentile bootstrap over whole rounds "
    "({resamples} resamples, numpy seed {seed}; round pairs resampled together when the rounds alternated)"
)

#: metric → (how to read it from a round, higher is better)
METRICS: dict[MetricName, tuple[Callable[[RoundRecord], float | None], bool]] = {
    "output_throughput": (lambda r: r.output_throughput, True),
    "ttft_p50": (lambda r: r.ttft_ms.median, False),
    "ttft_p99": (lambda r: r.ttft_ms.p99, False),
    "itl_p50": (lambda r: r.itl_ms.median, False),
    "itl_p99": (lambda r: r.itl_ms.p99, False),
    "e2e_p50": (lambda r: r.e2e_ms.median, False),
}


def _direction(lo: float | None, hi: float | None, higher_is_better: bool, usable: bool) -> Direction:
    if not usable or lo is None or hi is None:
        return "inconclusive"
    if lo > 1.0:
        return "better" if higher_is_better else "worse"
    if hi < 1.0:
        return "worse" if higher_is_better else "better"
    return "inconclusive"


def _metric(
    name: MetricName,
    control: list[RoundRecord],
    test: list[RoundRecord],
    *,
    paired: bool,
    usable: bool,
    resamples: int,
    seed: int,
    confidence: float,
) -> MetricRatio:
    read, higher = METRICS[name]
    c_vals, t_vals = [read(r) for r in control], [read(r) for r in test]
    c_ok = [v for v in c_vals if v is not None]
    t_ok = [v for v in t_vals if v is not None]
    have_all = len(c_ok) == len(c_vals) > 0 and len(t_ok) == len(t_vals) > 0 and all(v > 0 for v in c_ok)
    c_med = median(c_ok) if c_ok else None
    t_med = median(t_ok) if t_ok else None
    ratio = t_med / c_med if (t_med is not None and c_med) else None
    lo = hi = None
    if have_all and not (paired and len(c_ok) != len(t_ok)):
        lo, hi = ratio_interval(
            t_ok, c_ok, paired=paired, resamples=resamples, seed=seed, confidence=confidence
        )
    return MetricRatio(
        metric=name,
        higher_is_better=higher,
        control_rounds=c_vals,
        test_rounds=t_vals,
        control_median=c_med,
        test_median=t_med,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        direction=_direction(lo, hi, higher, usable and have_all),
    )


def _same_prompts(control: list[RoundRecord], test: list[RoundRecord]) -> bool | None:
    by_round = {r.round_index: r.prompt_set_sha256 for r in control}
    pairs = [(by_round.get(r.round_index), r.prompt_set_sha256) for r in test]
    if not pairs or any(a is None or b is None for a, b in pairs):
        return None
    return all(a == b for a, b in pairs)


def compare_workload(
    name: str,
    control: list[RoundRecord],
    test: list[RoundRecord],
    *,
    paired: bool,
    min_output_throughput_ratio: float | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> WorkloadComparison:
    complete = bool(control) and bool(test) and all(r.usable for r in (*control, *test))
    same = _same_prompts(control, test)
    usable = complete and same is not False
    metrics = [
        _metric(
            m,
            control,
            test,
            paired=paired,
            usable=usable,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
        )
        for m in METRICS
    ]
    throughput = metrics[0]
    verdict, reason = _verdict(control, test, complete, same, throughput)
    gate = None
    if min_output_throughput_ratio is not None:
        gate = _gate(name, throughput.ratio, min_output_throughput_ratio, complete)
    interval = (
        f" [{throughput.ci_low:.2f}, {throughput.ci_high:.2f}]"
        if throughput.ci_low is not None and throughput.ci_high is not None
        else ""
    )
    ratio_text = "n/a" if throughput.ratio is None else f"x{throughput.ratio:.2f}"
    return WorkloadComparison(
        workload=name,
        rounds_control=len(control),
        rounds_test=len(test),
        complete=complete,
        same_prompts=same,
        metrics=metrics,
        verdict=verdict,
        reason=reason,
        gate=gate,
        line=f"{name}: output throughput {ratio_text}{interval} — {verdict} ({reason})",
    )


def _verdict(
    control: list[RoundRecord], test: list[RoundRecord], complete: bool, same: bool | None, throughput: MetricRatio
) -> tuple[Verdict, str]:
    """A workload's verdict and its reason: inconclusive without rounds, with an unusable round or different
    prompts; else where the output-throughput interval lies against 1."""
    verdict: Verdict
    if not control or not test:
        verdict = "inconclusive"
        reason = "no rounds for one of the variants"
    elif not complete:
        verdict = "inconclusive"
        short = [
            f"{side} round {r.round_index}: {r.completed}/{r.requested} completed"
            + (" (timed out)" if r.timed_out else "")
            + (f" (client exit {r.client_exit_code})" if r.client_exit_code not in (0, None) else "")
            + (" (lengths other than requested)" if r.lengths_as_requested is False else "")
            for side, rounds in (("control", control), ("test", test))
            for r in rounds
            if not r.usable
        ]
        reason = "incomplete round(s): " + "; ".join(short)
    elif same is False:
        verdict = "inconclusive"
        reason = "the variants did not get the same prompts in every round"
    elif throughput.direction == "better":
        verdict, reason = "faster", "output-throughput interval above 1"
    elif throughput.direction == "worse":
        verdict, reason = "slower", "output-throughput interval below 1"
    else:
        verdict, reason = "inconclusive", "output-throughput interval contains 1"
    return verdict, reason


def _gate(name: str, actual: float | None, threshold: float, complete: bool) -> GateOutcome:
    """The ``min_output_throughput_ratio`` gate of one workload: passed only with complete rounds."""
    passed = complete and actual is not None and actual >= threshold
    return GateOutcome(
        threshold=threshold,
        actual=actual,
        passed=passed,
        message=(
            f"{name}: output-throughput ratio "
            + ("n/a" if actual is None else f"{actual:.3f}")
            + (" >= " if passed else " < " if actual is not None else " vs ")
            + f"min {threshold:.3f}"
            + ("" if complete else " (incomplete rounds)")
        ),
    )


def compare_speed(
    control: SpeedArtifact,
    test: SpeedArtifact,
    *,
    min_output_throughput_ratio: float | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> SpeedComparison:
    """Compare two variants' ``speed.json`` workload by workload (workloads of the control, in its order)."""
    schedule: Schedule = "alternating" if control.schedule == test.schedule == "alternating" else "sequential"
    paired = schedule == "alternating"
    workloads = [
        compare_workload(
            w.name,
            w.rounds,
            test.rounds_for(w.name),
            paired=paired,
            min_output_throughput_ratio=min_output_throughput_ratio,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
        )
        for w in control.workloads
    ]
    gates = [w.gate for w in workloads if w.gate is not None]
    return SpeedComparison(
        control=control.variant,
        test=test.variant,
        client=control.client.name,
        schedule=schedule,
        method=METHOD.format(confidence=confidence, resamples=resamples, seed=seed),
        confidence=confidence,
        bootstrap_resamples=resamples,
        bootstrap_seed=seed,
        workloads=workloads,
        gate_passed=all(g.passed for g in gates) if gates else None,
    )
