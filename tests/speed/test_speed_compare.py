"""The paired speed comparison: verdicts, the gate and the resampling design of ``compare_speed``
(the round-bootstrap interval itself is ``evalpipe.stats.ratio``, its coverage ``tests/stats/test_stats_ratio.py``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalpipe.artifacts.schema.speed import (
    ClientInfo,
    LatencyStats,
    RoundRecord,
    SpeedArtifact,
    WorkloadRounds,
)
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.speed.compare import compare_speed, compare_workload


def _round(
    i: int, tput: float, *, ttft: float = 100.0, completed: int = 4, prompts: str | None = "p"
) -> RoundRecord:
    now = datetime.now(UTC)
    return RoundRecord(
        workload="w",
        round_index=i,
        seed=42 + i,
        started_at=now,
        finished_at=now,
        client_exit_code=0,
        requested=4,
        completed=completed,
        output_throughput=tput,
        ttft_ms=LatencyStats(median=ttft, p99=2 * ttft),
        itl_ms=LatencyStats(median=10.0, p99=20.0),
        e2e_ms=LatencyStats(median=1000.0),
        percentile_method="nearest-rank",
        prompt_set_sha256=None if prompts is None else f"{prompts}{i}",
    )


def test_clear_speedup_is_faster_and_latency_ratios_point_the_right_way() -> None:
    control = [_round(i, v, ttft=100.0 + i) for i, v in enumerate([100, 101, 99, 100, 102])]
    test = [_round(i, v, ttft=80.0 + i) for i, v in enumerate([130, 129, 131, 130, 128])]
    result = compare_workload("w", control, test, paired=True)
    assert result.verdict == "faster" and result.complete and result.same_prompts is True
    by = {m.metric: m for m in result.metrics}
    assert by["output_throughput"].ratio == pytest.approx(130 / 100)
    assert by["output_throughput"].direction == "better"
    assert by["ttft_p50"].ratio == pytest.approx(82 / 102) and by["ttft_p50"].direction == "better"
    assert "faster" in result.line and "x1.30" in result.line
    slower = compare_workload("w", test, control, paired=True)
    assert (
        slower.verdict == "slower" and {m.metric: m for m in slower.metrics}["ttft_p50"].direction == "worse"
    )


def test_overlapping_rounds_are_inconclusive() -> None:
    control = [_round(i, v) for i, v in enumerate([100, 110, 95, 105, 98])]
    test = [_round(i, v) for i, v in enumerate([104, 96, 108, 99, 101])]
    result = compare_workload("w", control, test, paired=True)
    assert result.verdict == "inconclusive" and result.reason == "output-throughput interval contains 1"


def test_an_incomplete_round_is_never_averaged_away() -> None:
    control = [_round(i, v) for i, v in enumerate([100, 101, 99])]
    test = [_round(0, 150), _round(1, 151, completed=2), _round(2, 149)]
    result = compare_workload("w", control, test, paired=True, min_output_throughput_ratio=0.9)
    assert result.verdict == "inconclusive" and not result.complete
    assert "test round 1: 2/4 completed" in result.reason
    assert result.gate is not None and not result.gate.passed and "incomplete" in result.gate.message
    assert all(m.direction == "inconclusive" for m in result.metrics)
    assert result.metrics[0].test_rounds == [150, 151, 149]  # the round is kept as it was


def test_a_round_of_other_lengths_is_inconclusive() -> None:
    control = [_round(i, v) for i, v in enumerate([100, 101, 99])]
    test = [_round(i, v) for i, v in enumerate([150, 151, 149])]
    test[2] = test[2].model_copy(update={"lengths_as_requested": False})  # e.g. EOS honoured: shorter outputs
    result = compare_workload("w", control, test, paired=True)
    assert (
        result.verdict == "inconclusive"
        and "test round 2: 4/4 completed (lengths other than requested)" in result.reason
    )


def test_different_prompts_are_inconclusive() -> None:
    control = [_round(i, 100.0 + i, prompts="a") for i in range(3)]
    test = [_round(i, 200.0 + i, prompts="b") for i in range(3)]
    result = compare_workload("w", control, test, paired=True)
    assert result.same_prompts is False and result.verdict == "inconclusive"


def test_gate_compares_the_point_estimate() -> None:
    control = [_round(i, v) for i, v in enumerate([100, 100, 100])]
    test = [_round(i, v) for i, v in enumerate([96, 97, 95])]
    ok = compare_workload("w", control, test, paired=True, min_output_throughput_ratio=0.95)
    bad = compare_workload("w", control, test, paired=True, min_output_throughput_ratio=0.97)
    assert ok.gate is not None and ok.gate.passed and ok.gate.actual == pytest.approx(0.96)
    assert bad.gate is not None and not bad.gate.passed


def _artifact(variant: str, rounds: list[RoundRecord], schedule: str) -> SpeedArtifact:
    workload = SpeedWorkload(input_len=32, output_len=16, concurrency=1)
    return SpeedArtifact(
        variant=variant,
        server_url="http://127.0.0.1:1",
        served_model="m",
        client=ClientInfo(name="evalscope", program="evalscope perf", version="1.14.1", argv=[]),
        tokenizer=None,
        config=SpeedConfig(workloads=[workload], rounds=3),
        schedule=schedule,  # type: ignore[arg-type]  # a Literal value passed as str in a test
        workloads=[WorkloadRounds(workload=workload, name="w", rounds=rounds)],
    )


def test_sequential_variants_are_resampled_independently() -> None:
    control = _artifact("a", [_round(i, v) for i, v in enumerate([100, 101, 99])], "single")
    test = _artifact("b", [_round(i, v) for i, v in enumerate([120, 121, 119])], "single")
    result = compare_speed(control, test, min_output_throughput_ratio=1.1)
    assert result.schedule == "sequential" and result.gate_passed is True
    paired = compare_speed(
        control.model_copy(update={"schedule": "alternating"}),
        test.model_copy(update={"schedule": "alternating"}),
    )
    assert paired.schedule == "alternating" and paired.gate_passed is None
    assert "percentile bootstrap over whole rounds" in result.method
