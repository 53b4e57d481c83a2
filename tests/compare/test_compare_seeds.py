"""``evalpipe.compare.seeds``: the attempts' recorded seeds of a paired block, and attempts that answered alike."""

from __future__ import annotations

from pathlib import Path

from helpers.config import entry, write_config

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.compare import AttemptSeedCheck
from evalpipe.artifacts.schema.outcomes import AttemptOutcome, OutcomeRow
from evalpipe.compare.seeds import attempt_seed_check, run_temperature
from evalpipe.report.compare_markdown import attempt_seeds_line


def _row(sid: str, seeds: list[int | None], texts: list[str | None]) -> OutcomeRow:
    attempts = [
        AttemptOutcome(
            attempt=k, index=k, request_seed=s, response_sha256=t, failure_class="ok", correct=True
        )
        for k, (s, t) in enumerate(zip(seeds, texts, strict=True))
    ]
    return OutcomeRow(
        benchmark="gsm8k",
        subset="main",
        index=0,
        source_id=sid,
        stratum="all",
        prediction_present=True,
        review_present=True,
        n_predictions=1,
        n_reviews=1,
        request_seed=seeds[0],
        failure_class="ok",
        attempts=attempts,
    )


def _outcomes(*rows: OutcomeRow) -> dict[tuple[str, str], OutcomeRow]:
    return {(r.benchmark, r.source_id): r for r in rows}


KEYS = [("gsm8k", s, "all") for s in ("p", "q", "r", "s")]


def test_counts() -> None:
    a = _outcomes(
        _row("p", [1, 2], ["x", "y"]),
        _row("q", [3, 4], ["x", "x"]),  # identical text
        _row("r", [5, 5], ["x", "y"]),  # one seed for both attempts
        _row("s", [7, None], ["x", None]),  # attempt 1 unrecorded: not seeded, not compared
    )
    b = _outcomes(
        _row("p", [1, 2], ["x", "x"]),
        _row("q", [3, 9], ["x", "x"]),  # the arms differ on attempt 1
        _row("r", [5, 5], ["x", "x"]),
        _row("s", [7, 8], ["x", "x"]),
    )
    check = attempt_seed_check(KEYS, a, b)
    assert check == AttemptSeedCheck(
        repeats=2,
        samples=4,
        seeded=3,
        distinct=2,
        common=2,
        compared_a=3,
        identical_a=1,
        compared_b=4,
        identical_b=4,
        differing_across_arms=["gsm8k/q"],
    )
    line = attempt_seeds_line(check, "A", "B")
    assert line == (
        "attempt seeds: distinct per attempt in 2 of 3 samples, identical across arms in 2 of 3 "
        "(checked: 3/4 samples); A: 1 of 3, B: 4 of 4 samples' 2 attempts returned identical text"
    )


def test_one_seed_for_every_attempt_is_seen() -> None:
    """A derivation that returned a constant would send every attempt the same seed: distinct is 0."""
    rows = _outcomes(*(_row(k[1], [42, 42], ["x", "y"]) for k in KEYS))
    check = attempt_seed_check(KEYS, rows, rows)
    assert check is not None and (check.seeded, check.distinct, check.common) == (4, 0, 4)
    assert "distinct per attempt in 0 of 4 samples" in attempt_seeds_line(check, "A", "B")


def test_all_good_line_and_no_check_without_repeats() -> None:
    rows = _outcomes(*(_row(k[1], [2 * i, 2 * i + 1], ["x", "y"]) for i, k in enumerate(KEYS)))
    check = attempt_seed_check(KEYS, rows, rows)
    assert check is not None
    assert attempt_seeds_line(check, "A", "B").startswith(
        "attempt seeds: distinct per attempt, identical across arms (checked: 4/4 samples); A: 0 of 4"
    )
    single = _outcomes(*(r.model_copy(update={"attempts": []}) for r in rows.values()))
    assert attempt_seed_check(KEYS, single, single) is None


def test_line_names_the_temperature() -> None:
    rows = _outcomes(*(_row(k[1], [2 * i, 2 * i + 1], ["x", "x"]) for i, k in enumerate(KEYS)))
    check = attempt_seed_check(KEYS, rows, rows)
    assert check is not None
    hot = attempt_seeds_line(check.model_copy(update={"temperature": 0.8}), "A", "B")
    assert hot.endswith("A: 4 of 4, B: 4 of 4 samples' 2 attempts returned identical text at temperature 0.8")
    greedy = attempt_seeds_line(check.model_copy(update={"temperature": 0.0}), "A", "B")
    assert greedy.endswith(
        "at temperature 0 (greedy): a sample whose attempts are identical gained nothing from them — its "
        "disagreement is between samples, which attempts do not average"
    )


def test_run_temperature_from_the_runs_config_copy(tmp_path: Path) -> None:
    rundir = RunDir(tmp_path)
    assert run_temperature(rundir) is None  # no config.yaml
    write_config(rundir.config_copy, benchmarks=[entry("gsm8k")], generation={"temperature": 0.7})
    assert run_temperature(rundir) == 0.7
    rundir.config_copy.write_text("generation: {temperature: -1}\n", encoding="utf-8")
    assert run_temperature(rundir) is None  # unreadable: unknown, never a guess
