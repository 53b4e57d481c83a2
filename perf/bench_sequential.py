"""Anytime-valid non-inferiority (``evalpipe.stats.sequential``) by simulation: validity, stopping times, power.

Why: a rule looked at after every unit must keep each verdict at most α of the time at the margin, however
long it runs, and it should stop well before the fixed-n plan when the answer is clear.  The tests
(``tests/stats/test_stats_sequential.py``) check the bound on 2000 paths each; this script runs 20 000 per setting
and prints the tables the issue asks for, with the Monte-Carlo standard error of every rate.

    .venv/bin/python perf/bench_sequential.py [--paths 20000] [--seed 20261204]

Sections:

1. The issue's setting — ψ = 0.2 discordance, 5-point margin, one-sided α 0.05, fixed n = 495 (80 % power at
   Δ = 0 for the one-sided z-test), cap 742 = 1.5 × 495: verdict rates, mean and 90th-percentile units at
   Δ = +5, 0, −10 points (the issue quotes 169 / 426 / 400 for "a betting e-process"), planned bets (n 495)
   and aGRAPA.
2. Power table, Δ from +5 to −20 points: verdict rates, mean / p90 units and output tokens (units × k × 2 arms
   × tokens per attempt), against the fixed-n z-test at n = 495.
3. Type I error at Δ = −margin (both nulls true) over ψ 0.05–0.4 and horizons 30–1000 units, one attempt per
   arm and k = 4 beta-binomial repeats, a look after every unit, aGRAPA and planned bets (n = horizon/2 and
   horizon); and the CS's uniform coverage.
4. Stop-then-extend: a run capped at 300 units and extended to 1000 continues the same order and the same
   wealth (the bet re-tuned to the new plan from the extension on: what ``planned_n_per_unit([300, 700])``
   gives the in-run stop and compare); restarting the wealth at 1 on the extension (a "new test") spends α
   twice.
5. Negative control: units consumed in completion order, with wrong answers longer than right ones.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from numpy.typing import NDArray

from evalpipe.stats.sequential import betting_eprocesses, eb_confidence_sequence, first_crossings

ALPHA = 0.05
MARGIN_PTS = 5.0
Z_ONE_SIDED = 1.6448536269514722
CHUNK = 4000
PLAN_N = 495
CAP = 742

Array = NDArray[np.float64]


def discordant(rng: np.random.Generator, mean: float, psi: float, paths: int, units: int) -> Array:
    """d = +1 w.p. (ψ + Δ)/2, −1 w.p. (ψ − Δ)/2, else 0 (one attempt per arm)."""
    u = rng.random((paths, units))
    up, down = (psi + mean) / 2.0, (psi - mean) / 2.0
    return np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))


def beta_binomial(rng: np.random.Generator, mean: float, k: int, paths: int, units: int) -> Array:
    """k attempts per arm sharing difficulty: p ~ Beta(2, 1), q = p (1 + 1.5 Δ); E[q − p] = Δ."""
    p = rng.beta(2.0, 1.0, size=(paths, units))
    q = np.clip(p * (1.0 + 1.5 * mean), 0.0, 1.0)
    return np.asarray((rng.binomial(k, q) - rng.binomial(k, p)) / k, dtype=np.float64)


def se(rate: float, n: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / n)


def run_rule(
    d: Array, cap: int | None, planned_n: int | None = PLAN_N
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    units, verdict = [], []
    for start in range(0, d.shape[0], CHUNK):
        processes = betting_eprocesses(d[start : start + CHUNK], MARGIN_PTS, planned_n=planned_n, alpha=ALPHA)
        u, v = first_crossings(processes, ALPHA, cap)
        units.append(u)
        verdict.append(v)
    return np.concatenate(units), np.concatenate(verdict)


def fixed_z_power(rng: np.random.Generator, mean: float, psi: float, paths: int, n: int) -> float:
    d = discordant(rng, mean, psi, paths, n)
    m = d.mean(axis=1)
    s = np.sqrt(np.maximum((d * d).mean(axis=1) - m * m, 1e-12) / n)
    return float(((m + MARGIN_PTS / 100) / s > Z_ONE_SIDED).mean())


def section_issue(rng: np.random.Generator, paths: int) -> None:
    print("\n1. psi 0.2, margin 5 pts, alpha 0.05, fixed n 495, cap 742 (issue: 169 / 426 / 400 mean units)")
    print(
        f"{'bets':>8} {'delta':>6} {'non-inf':>8} {'inferior':>8} {'inconcl':>8} {'mean n':>7} {'SE':>5} {'p90 n':>6}"
    )
    for planned_n in (PLAN_N, None):
        for delta_pts in (5.0, 0.0, -10.0):
            units, verdict = run_rule(discordant(rng, delta_pts / 100, 0.2, paths, CAP), CAP, planned_n)
            label = "planned" if planned_n else "aGRAPA"
            print(
                f"{label:>8} {delta_pts:>+6.0f} {np.mean(verdict == 1):>8.3f} {np.mean(verdict == -1):>8.3f} "
                f"{np.mean(verdict == 0):>8.3f} {units.mean():>7.1f} {units.std() / math.sqrt(paths):>5.1f} "
                f"{np.percentile(units, 90):>6.0f}"
            )


def section_power(rng: np.random.Generator, paths: int, tokens_per_attempt: float) -> None:
    print(
        "\n2. power table, planned bets (n 495), discordance max(0.2, |delta|), cap 742; tokens = units x 2 arms"
        f" x {tokens_per_attempt:.0f} output tokens per attempt; the fixed one-sided z-test at n 495 for comparison"
    )
    print(
        f"{'delta':>6} {'non-inf':>8} {'inferior':>8} {'mean n':>7} {'p90 n':>6} {'mean Mtok':>9} {'p90 Mtok':>8}"
        f" {'fixed495 non-inf':>16} {'fixed Mtok':>10}"
    )
    for delta_pts in (5.0, 2.5, 0.0, -2.5, -5.0, -7.5, -10.0, -15.0, -20.0):
        psi = max(0.2, abs(delta_pts) / 100)
        units, verdict = run_rule(discordant(rng, delta_pts / 100, psi, paths, CAP), CAP)
        fixed = fixed_z_power(rng, delta_pts / 100, psi, min(paths, 20000), 495)
        tok = 2 * tokens_per_attempt / 1e6
        print(
            f"{delta_pts:>+6.1f} {np.mean(verdict == 1):>8.3f} {np.mean(verdict == -1):>8.3f} {units.mean():>7.1f}"
            f" {np.percentile(units, 90):>6.0f} {units.mean() * tok:>9.2f} {np.percentile(units, 90) * tok:>8.2f}"
            f" {fixed:>16.3f} {495 * tok:>10.2f}"
        )


def section_validity(rng: np.random.Generator, paths: int) -> None:
    print(f"\n3. type I error at delta = -margin, a look after every unit ({paths} paths; bound {ALPHA})")
    print(
        f"{'data':>16} {'horizon':>7} {'bets':>11} {'non-inf':>8} {'SE':>6} {'inferior':>8} {'SE':>6} {'CS miss':>8}"
    )
    settings: list[tuple[str, float | int]] = [
        ("psi", 0.05),
        ("psi", 0.1),
        ("psi", 0.2),
        ("psi", 0.4),
        ("k", 4),
    ]
    for kind, value in settings:
        data = (
            discordant(rng, -MARGIN_PTS / 100, float(value), paths, 1000)
            if kind == "psi"
            else beta_binomial(rng, -MARGIN_PTS / 100, int(value), paths, 1000)
        )
        label = f"psi {value}" if kind == "psi" else f"beta-binom k={value}"
        for horizon in (30, 100, 300, 1000):
            miss = 0
            for start in range(0, paths, CHUNK):
                lo, hi = eb_confidence_sequence(data[start : start + CHUNK, :horizon], ALPHA)
                miss += int(((lo > -MARGIN_PTS / 100) | (hi < -MARGIN_PTS / 100)).any(axis=1).sum())
            for planned_n in (None, max(10, horizon // 2), horizon):
                _, verdict = run_rule(data[:, :horizon], None, planned_n)
                r_plus, r_minus = float(np.mean(verdict == 1)), float(np.mean(verdict == -1))
                bets = "aGRAPA" if planned_n is None else f"plan n={planned_n}"
                print(
                    f"{label:>16} {horizon:>7} {bets:>11} {r_plus:>8.4f} {se(r_plus, paths):>6.4f} {r_minus:>8.4f}"
                    f" {se(r_minus, paths):>6.4f} {miss / paths:>8.4f}"
                )


def section_extend(rng: np.random.Generator, paths: int) -> None:
    print("\n4. stop at 300 units, extend to 1000 (psi 0.2, delta = -margin, bets planned for 300 then 1000)")
    d = discordant(rng, -MARGIN_PTS / 100, 0.2, paths, 1000)
    _, first = run_rule(d[:, :300], None, 300)
    # continued: the same order and the same wealth, the bet re-tuned to the new plan from unit 301 on
    # (a bet chosen before unit 301 is seen is still predictable)
    outcome = np.zeros(paths, dtype=np.int64)
    for start in range(0, paths, CHUNK):
        chunk = d[start : start + CHUNK]
        early = betting_eprocesses(chunk[:, :300], MARGIN_PTS, planned_n=300, alpha=ALPHA)
        late = betting_eprocesses(chunk, MARGIN_PTS, planned_n=1000, alpha=ALPHA)
        # wealth after 300 with the first plan's bets, then the later factors of the second plan's bets
        plus = np.concatenate(
            [early.wealth_non_inferior, early.wealth_non_inferior[:, -1:] * late.wealth_non_inferior[:, 300:]
             / late.wealth_non_inferior[:, 299:300]], axis=1)  # fmt: skip
        minus = np.concatenate(
            [early.wealth_inferior, early.wealth_inferior[:, -1:] * late.wealth_inferior[:, 300:]
             / late.wealth_inferior[:, 299:300]], axis=1)  # fmt: skip
        joined = type(late)(late.null_mean, late.bets_non_inferior, late.bets_inferior, plus, minus)
        outcome[start : start + CHUNK] = first_crossings(joined, ALPHA)[1]
    _, restarted = run_rule(d[:, 300:], None, 700)  # wealth reset to 1 at the extension: a "new test"
    for label, verdict in (
        ("continued (same wealth)", outcome),
        ("restarted at 1", np.where(first != 0, first, restarted)),
    ):
        r_plus, r_minus = float(np.mean(verdict == 1)), float(np.mean(verdict == -1))
        print(
            f"   {label:>24}: non-inferior {r_plus:.4f} (SE {se(r_plus, paths):.4f}), "
            f"inferior {r_minus:.4f} (SE {se(r_minus, paths):.4f})"
        )


def section_completion_order(rng: np.random.Generator, paths: int) -> None:
    """Control right with p = 0.7; joint (test, control) so that ψ = 0.2 and Δ = −5 pts; a right answer's
    length ~ lognormal(log 4000, 0.5), a wrong one's ~ lognormal(log 9000, 0.5) tokens; all 742 units sent at
    once, a unit completes when its slower arm does."""
    print(
        "\n5. negative control: completion order (wrong answers longer), psi 0.2, delta = -margin, 742 units"
    )
    units = 742
    p_tr_cw, p_tw_cr = (0.2 - 0.05) / 2, (0.2 + 0.05) / 2
    p_both_right = 0.7 - p_tw_cr
    u = rng.random((paths, units))
    test_right = (u < p_both_right) | ((u >= p_both_right) & (u < p_both_right + p_tr_cw))
    control_right = (u < p_both_right) | (
        (u >= p_both_right + p_tr_cw) & (u < p_both_right + p_tr_cw + p_tw_cr)
    )
    d = test_right.astype(np.float64) - control_right.astype(np.float64)

    def length(right: NDArray[np.bool_]) -> Array:
        return np.exp(
            np.where(right, math.log(4000), math.log(9000)) + 0.5 * rng.standard_normal(right.shape)
        )

    done = np.maximum(length(test_right), length(control_right))
    by_completion = np.take_along_axis(d, np.argsort(done, axis=1), axis=1)
    for label, data in (("manifest order", d), ("completion order", by_completion)):
        _, verdict = run_rule(data, None)
        r_plus, r_minus = float(np.mean(verdict == 1)), float(np.mean(verdict == -1))
        print(
            f"   {label:>16}: non-inferior {r_plus:.4f} (SE {se(r_plus, paths):.4f}), "
            f"inferior {r_minus:.4f} (SE {se(r_minus, paths):.4f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--tokens-per-attempt", type=float, default=16000.0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    section_issue(rng, args.paths)
    section_power(rng, args.paths, args.tokens_per_attempt)
    section_validity(rng, args.paths)
    section_extend(rng, args.paths)
    section_completion_order(rng, args.paths)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
