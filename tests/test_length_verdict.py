"""The one-line verdict of per-length blocks names the first length whose interval of A − B lies wholly
below zero, not the first with a negative point estimate, and says so when no length is behind."""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import PairedBenchmark
from evalpipe.compare.length_verdict import length_verdict


def _block(length: str, diff: float, low: float, high: float, *, paired: bool = True) -> PairedBenchmark:
    ci = (
        {"paired_ci_low": low, "paired_ci_high": high}
        if paired
        else {"diff_ci_low": low, "diff_ci_high": high}
    )
    return PairedBenchmark.model_construct(length=length, difference=diff, flips=[], n_pairs=12, **ci)


def test_first_length_whose_interval_is_below_zero() -> None:
    blocks = [
        _block("256", -0.05, -0.20, 0.10),  # lower, but within the noise
        _block("512", -0.30, -0.55, -0.05),  # behind
        _block("1024", -0.60, -0.85, -0.35),
    ]
    line = length_verdict("kv_probe", blocks)
    assert line == (
        "kv_probe: the candidate first falls behind at length 512 (-30.0 pts, 95 % CI [-55.0, -5.0], "
        "0 flips, n = 12); it holds at 256"
    )


def test_the_bootstrap_interval_decides_when_there_is_no_paired_one() -> None:
    line = length_verdict("kv_probe", [_block("256", -0.4, -0.6, -0.2, paired=False)])
    assert line is not None and "first falls behind at length 256" in line
    assert line.endswith("it is behind from the shortest length")


def test_a_lower_score_within_the_noise_is_not_behind() -> None:
    line = length_verdict("kv_probe", [_block("256", 0.0, -0.1, 0.1), _block("512", -0.1, -0.3, 0.1)])
    assert line is not None and line.startswith(
        "kv_probe: no length where the candidate is significantly behind"
    )
    assert "the first with a lower score is 512" in line


def test_no_length_behind_and_no_buckets() -> None:
    assert length_verdict("kv_probe", [_block("256", 0.1, -0.05, 0.2)]) == (
        "kv_probe: the candidate is behind at no length (256)"
    )
    assert length_verdict("gsm8k", []) is None
