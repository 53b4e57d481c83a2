"""The design ``evalpipe plan`` proposes, simulated: does it reach the power it states?

Why: ``evalpipe plan CONFIG --mde X`` proposes per benchmark and per pool an n (and k) with a stated power at a
drop of X points (``evalpipe.stats.power``: exact McNemar at one attempt).  This script takes each design the
plan prints (the current one and every proposal), draws paired outcomes from the same noise model the plan
used, with the drop of X points, and applies the tests compare.json applies:

* the fixed-n test: exact two-sided McNemar (``evalpipe.stats.paired.exact_mcnemar_p``, an implementation
  independent of the power module's critical counts) at α = 0.05, counted as detecting the drop when it
  rejects and the control-only count is the larger ("detects a drop", ``evalpipe.stats.power``);
* the sequential rule at a non-inferiority margin (``evalpipe.stats.sequential``: the planned bet tuned to the
  design's n, a look after every unit, units run out at n): the share of runs that reach "inferior", the mean
  and 90th-percentile units, and the output tokens that implies (units × k × arms × tokens per attempt) — at
  the drop, and with no drop (the share of runs that stop "non-inferior", and where).

The model is the one ``evalpipe.stats.power`` states (one attempt per arm): a unit is control-only (d = −1)
with probability m0/2 + δ and test-only (d = +1) with m0/2, where m0 is the noise's discordance.  Designs with
repeats (k > 1, ``simulate_repeats_design``) draw each sample's k attempts per arm: a share ``between`` of the
samples differs by a fixed ±1 (between-sample noise, symmetric), a share of them is answered right with a
probability q ~ Beta(2, 2) shared by both arms, each arm's right answers Binomial(k, q) — beta-binomial
attempts, within-sample noise 2 E[q(1 − q)] = 0.4 per noisy sample, the share chosen so that the noise's
``within`` is met — the rest are right in both, and a share δ of all samples (drawn from those) is always
wrong in the test (the concentrated regression ``evalpipe.stats.power`` assumes); judged by the paired score
test compare.json applies with repeats (reject when ``−Σd > z_{α/2} sqrt(Σd²)`` and the test is the worse)
and by the sequential rule on the per-sample differences of means.  At the power module's MDE (stated power
0.80), 20 000 paths: n 150 × k 4 (between 0.02, within 0.12) 0.800 ± 0.003 (one attempt: 0.473); 60 × 8
(within 0.2) 0.796; 400 × 2 (0.05 / 0.05) 0.798.

    .venv/bin/python perf/bench_plan_power.py configs/glm-fp8-sensitive.yaml --mde 15 [--paths 20000]
        [--accuracy aime24=0.953 ...] [--margin 10]

Without ``--accuracy`` the plan's own noise (the assumed 2p(1 − p) at p = 0.5 without a run) is used, so the
stated power is exactly the one ``evalpipe plan`` prints; ``--accuracy NAME=P`` plans that block at base
accuracy P instead (the README's table uses #22671's BF16 scores).  Blocks whose data would need the hub are
skipped, as ``evalpipe plan`` skips them.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from evalpipe.benchmarks import benchmark
from evalpipe.stats.paired import exact_mcnemar_p
from evalpipe.stats.power import NoiseModel
from evalpipe.stats.sequential import betting_eprocesses, first_crossings

ALPHA = 0.05
CHUNK = 4000


@dataclass(frozen=True)
class Simulated:
    """One design at one drop: the fixed test's power and the sequential rule's verdicts and units."""

    paths: int
    power: float
    inferior: float
    non_inferior: float
    mean_units: float
    p90_units: float

    def se(self, rate: float) -> float:
        """Monte-Carlo standard error of a rate over the paths."""
        return math.sqrt(max(rate * (1.0 - rate), 1e-12) / self.paths)


@cache
def _smallest_rejecting_control_only(discordant: int, alpha: float) -> int:
    """The smallest control-only count b (of ``discordant``) at which exact McNemar rejects with b the
    larger side; ``discordant + 1`` when none does."""
    for b in range(math.ceil(discordant / 2), discordant + 1):
        if b > discordant - b and exact_mcnemar_p(discordant - b, b) < alpha:
            return b
    return discordant + 1


def paired_units(
    rng: np.random.Generator, paths: int, n: int, discordance: float, drop: float
) -> NDArray[np.float64]:
    """``d`` per unit: −1 with probability m0/2 + δ, +1 with m0/2, else 0 (``evalpipe.stats.power``'s model)."""
    down, up = discordance / 2.0 + drop, discordance / 2.0
    if down + up > 1.0:
        raise ValueError(f"drop {drop} too large for discordance {discordance}")
    u = rng.random((paths, n))
    return np.where(u < down, -1.0, np.where(u < down + up, 1.0, 0.0))


def _tally(
    chunks: Iterable[NDArray[np.float64]],
    fixed_test: Callable[[NDArray[np.float64]], NDArray[np.bool_]],
    *,
    paths: int,
    n: int,
    margin_pts: float | None,
    alpha: float,
) -> Simulated:
    """Over simulated runs (chunks of paths × n units of paired differences): how often ``fixed_test``
    detects the drop and, at ``margin_pts``, the sequential rule's verdict rates and units used."""
    detected = inferior = non_inferior = 0
    units: list[NDArray[np.int64]] = []
    for d in chunks:
        detected += int(fixed_test(d).sum())
        if margin_pts is not None:
            processes = betting_eprocesses(d, margin_pts, planned_n=n, alpha=alpha)
            used, verdict = first_crossings(processes, alpha, n)
            inferior += int((verdict == -1).sum())
            non_inferior += int((verdict == 1).sum())
            units.append(used)
    all_units = np.concatenate(units) if units else np.full(paths, n)
    return Simulated(
        paths=paths,
        power=detected / paths,
        inferior=inferior / paths,
        non_inferior=non_inferior / paths,
        mean_units=float(all_units.mean()),
        p90_units=float(np.quantile(all_units, 0.9)),
    )


def simulate_design(
    n: int,
    discordance: float,
    drop: float,
    *,
    paths: int,
    seed: int,
    margin_pts: float | None = None,
    alpha: float = ALPHA,
) -> Simulated:
    """The fixed-n exact McNemar power and, at ``margin_pts``, the sequential rule's verdict rates and units
    (the planned bet tuned to n; the units run out at n) over ``paths`` simulated runs of n units."""
    rng = np.random.default_rng(seed)

    def fixed_test(d: NDArray[np.float64]) -> NDArray[np.bool_]:
        control_only = (d < 0).sum(axis=1)
        total = control_only + (d > 0).sum(axis=1)
        needed = np.array([_smallest_rejecting_control_only(int(s), alpha) for s in total])
        detected: NDArray[np.bool_] = control_only >= needed
        return detected

    chunks = (
        paired_units(rng, min(CHUNK, paths - start), n, discordance, drop) for start in range(0, paths, CHUNK)
    )
    return _tally(chunks, fixed_test, paths=paths, n=n, margin_pts=margin_pts, alpha=alpha)


#: Beta(2, 2): E[q(1 − q)] = 1/5, so a noisy sample carries a within-sample variance 2/5 between the arms.
BETA = 2.0
_WITHIN_PER_NOISY = 2.0 * BETA / (2.0 * (2.0 * BETA + 1.0))


def repeat_units(
    rng: np.random.Generator, paths: int, n: int, k: int, between: float, within: float, drop: float
) -> NDArray[np.float64]:
    """``d`` per sample: the difference of per-sample means over k beta-binomial attempts per arm (module
    docstring); ``E[d²] = between + within / k + δ`` (``evalpipe.stats.power``'s ``m1``)."""
    noisy = within / _WITHIN_PER_NOISY
    if noisy + between + drop > 1.0:
        raise ValueError(f"noise {between} + {within} and drop {drop} do not fit in one sample")
    kind = rng.choice(4, p=[noisy, between / 2.0, between / 2.0, 1.0 - noisy - between], size=(paths, n))
    steady = 1.0 - noisy - between
    regressed = (kind == 3) & (rng.random((paths, n)) < (drop / steady if steady > 0 else 0.0))
    q = rng.beta(BETA, BETA, size=(paths, n))
    q_control = np.select([kind == 0, kind == 1, kind == 2], [q, 0.0, 1.0], 1.0)
    q_test = np.select([kind == 0, kind == 1, kind == 2, regressed], [q, 1.0, 0.0, 0.0], 1.0)
    d: NDArray[np.float64] = (rng.binomial(k, q_test) - rng.binomial(k, q_control)) / k
    return d


def simulate_repeats_design(
    n: int,
    k: int,
    between: float,
    within: float,
    drop: float,
    *,
    paths: int,
    seed: int,
    margin_pts: float | None = None,
    alpha: float = ALPHA,
) -> Simulated:
    """A design with ``k`` attempts per arm: the paired score test's power (compare.json's test with repeats)
    and, at ``margin_pts``, the sequential rule's verdicts and units, over ``paths`` simulated runs."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    rng = np.random.default_rng(seed)

    def score_test(d: NDArray[np.float64]) -> NDArray[np.bool_]:
        total, squares = d.sum(axis=1), np.square(d).sum(axis=1)
        detected: NDArray[np.bool_] = (squares > 0) & (-total > z * np.sqrt(squares))
        return detected

    chunks = (
        repeat_units(rng, min(CHUNK, paths - start), n, k, between, within, drop)
        for start in range(0, paths, CHUNK)
    )
    return _tally(chunks, score_test, paths=paths, n=n, margin_pts=margin_pts, alpha=alpha)


def simulate_any(
    n: int, k: int, noise: NoiseModel, drop: float, paths: int, seed: int, margin_pts: float | None
) -> Simulated:
    """One attempt: ``simulate_design`` (exact McNemar); repeats: ``simulate_repeats_design`` (score test)."""
    if k == 1:
        return simulate_design(n, noise.second_moment(1), drop, paths=paths, seed=seed, margin_pts=margin_pts)
    return simulate_repeats_design(
        n, k, noise.between, noise.within, drop, paths=paths, seed=seed, margin_pts=margin_pts
    )


def _tokens(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def main() -> None:
    from evalpipe.plan.mde import (
        BenchmarkPlan,
        PlanInput,
        plan_benchmark,
        pool_input,
        population_only,
    )
    from evalpipe.resolve import load_run
    from evalpipe.stats.power import assumed_noise

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", type=Path)
    parser.add_argument("--mde", type=float, required=True)
    parser.add_argument("--paths", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=20261204)
    parser.add_argument("--margin", type=float, default=None, help="non-inferiority margin, points")
    parser.add_argument("--accuracy", action="append", default=[], help="NAME=P: plan NAME at accuracy P")
    args = parser.parse_args()
    accuracy = {k: float(v) for k, v in (a.split("=", 1) for a in args.accuracy)}
    cfg = load_run(args.config).config
    inputs: list[PlanInput | str] = []
    for bench in cfg.benchmarks:
        known = population_only(cfg, benchmark(bench.name), None)
        inputs.append(known if known is not None else f"{bench.name}: skipped (its plan needs the data)")
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    arms = max(1, len(cfg.variants))
    margins = cfg.gates.non_inferiority_margin_pts
    started = time.perf_counter()
    print(f"{args.config} --mde {args.mde:g}: {args.paths} paths per design, seed {args.seed}, {arms} arms")
    for block in [*inputs, *pools]:
        if isinstance(block, str):
            print(block)
            continue
        plan: BenchmarkPlan = plan_benchmark(cfg, block, None, args.mde, None, False)
        p = accuracy.get(block.benchmark, plan.base_accuracy)
        noise = plan.noise if block.benchmark not in accuracy else assumed_noise(p)
        margin: float | None = args.margin
        if margin is None and isinstance(margins, dict):
            margin = margins.get(block.benchmark)
        elif margin is None and isinstance(margins, (int, float)):
            margin = float(margins)
        print(f"{block.benchmark}: accuracy {p:.3f}, {noise.basis}; drop {args.mde:g} pts")
        for design in plan.designs:
            k = design.repeats
            if block.benchmark in accuracy:
                from evalpipe.stats.power import drop_power

                stated = drop_power(design.n, args.mde / 100.0, noise, k)
            else:
                stated = design.power

            sim = simulate_any(design.n, k, noise, args.mde / 100.0, args.paths, args.seed, margin)
            line = (
                f"  {design.label}: {design.n} × {k}, stated power {stated:.3f}, simulated {sim.power:.3f} "
                f"± {sim.se(sim.power):.3f}"
            )
            if margin is not None:
                per_unit = design.worst_tokens / design.n
                line += (
                    f"; sequential at -{margin:g} pts: inferior {sim.inferior:.3f} ± {sim.se(sim.inferior):.3f}, "
                    f"units mean {sim.mean_units:.1f} / p90 {sim.p90_units:.0f} of {design.n}, "
                    f"≤ {_tokens(sim.mean_units * per_unit)} output tokens expected over the arms "
                    f"(≤ {_tokens(design.worst_tokens)} fixed)"
                )
            print(line)
            if margin is not None:
                null = simulate_any(design.n, k, noise, 0.0, args.paths, args.seed, margin)
                print(
                    f"    no drop: sequential non-inferior {null.non_inferior:.3f} ± {null.se(null.non_inferior):.3f}, "
                    f"inferior {null.inferior:.3f}, units mean {null.mean_units:.1f} / p90 {null.p90_units:.0f} "
                    f"of {design.n}, ≤ {_tokens(null.mean_units * design.worst_tokens / design.n)} output tokens "
                    "expected over the arms"
                )
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
