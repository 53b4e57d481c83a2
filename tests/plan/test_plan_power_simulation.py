"""perf/bench_plan_power.py: the design ``evalpipe plan`` proposes reaches the power it states when its
outcomes are simulated and judged by compare.json's test (exact McNemar; the sequential rule at the margin).
A seeded small version of the script's 20 000-path run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from evalpipe.benchmarks import benchmark
from evalpipe.config.loader import load_config
from evalpipe.plan.mde import plan_benchmark, population_only
from evalpipe.stats.power import assumed_noise, drop_power

REPO = Path(__file__).resolve().parents[2]
_PATH = REPO / "perf" / "bench_plan_power.py"
_spec = importlib.util.spec_from_file_location("bench_plan_power", _PATH)
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_plan_power"] = bench
_spec.loader.exec_module(bench)

PATHS = 3000


def test_the_proposed_design_reaches_its_stated_power_in_simulation() -> None:
    cfg = load_config(REPO / "configs" / "glm-fp8-sensitive.yaml")
    block = population_only(cfg, benchmark("gsm8k"), None)
    assert block is not None
    plan = plan_benchmark(cfg, block, None, 15.0, None, False)
    current, proposed = plan.designs
    assert proposed.label == "proposed" and proposed.repeats == 1 and proposed.power >= 0.8
    sim = bench.simulate_design(proposed.n, plan.noise.second_moment(1), 0.15, paths=PATHS, seed=20261204)
    assert abs(sim.power - proposed.power) < 4 * sim.se(proposed.power)
    # the simulation tells designs apart: the current 50 samples are far from 80 %
    small = bench.simulate_design(current.n, plan.noise.second_moment(1), 0.15, paths=PATHS, seed=7)
    assert abs(small.power - current.power) < 4 * small.se(current.power) and small.power < 0.3


def test_the_pool_at_22671s_drop_and_the_sequential_rule_at_its_margin() -> None:
    """The sensitive profile's competition-maths pool (153 problems, planned from its members' populations) at
    #22671's AIME scores (95.3 -> 76.7): the fixed test's stated power (0.996) is met; with no drop the
    sequential rule at the 10-point margin stops "non-inferior" most of the time and early, and "inferior" at
    most alpha of the time."""
    from evalpipe.plan.mde import pool_input

    cfg = load_config(REPO / "configs" / "glm-fp8-sensitive.yaml")
    members = cfg.pools["competition_math"]
    pool = pool_input("competition_math", members, [population_only(cfg, benchmark(m), None) or m for m in members])
    assert not isinstance(pool, str)
    n = pool.population
    assert n == pool.n_now == 153
    noise = assumed_noise(0.953)
    stated = drop_power(n, 0.186, noise, 1)
    assert stated > 0.99
    sim = bench.simulate_design(n, noise.second_moment(1), 0.186, paths=PATHS, seed=1, margin_pts=10.0)
    assert abs(sim.power - stated) < 4 * sim.se(stated) + 1e-3
    assert sim.non_inferior <= 0.01 and sim.inferior > 0.4  # "non-inferior" beyond the margin: <= alpha
    null = bench.simulate_design(n, noise.second_moment(1), 0.0, paths=PATHS, seed=2, margin_pts=10.0)
    assert null.non_inferior > 0.85 and null.inferior <= 0.05 and null.mean_units < 0.7 * n


def test_a_design_with_repeats_reaches_its_stated_power_with_beta_binomial_attempts() -> None:
    """k = 4 attempts per arm with within-sample noise (beta-binomial attempts) on top of a between-sample part:
    the score test compare.json applies with repeats detects the plan's MDE about as often as the power module
    states (its second-order normal power, itself within 0.03 of simulation); with no drop the sequential rule
    on the per-sample means says "inferior" at most alpha of the time."""
    from evalpipe.stats.power import NoiseModel, minimum_detectable_effect

    noise = NoiseModel(between=0.02, within=0.12, source="aa", basis="simulated")
    mde = minimum_detectable_effect(150, noise, repeats=4)
    assert mde.mde is not None
    stated = drop_power(150, mde.mde, noise, 4)
    sim = bench.simulate_any(150, 4, noise, mde.mde, PATHS, 11, None)
    assert abs(sim.power - stated) < 4 * sim.se(stated) + 0.03
    # repeats shrink only the within part: one attempt at the same drop sees it far less often
    single = bench.simulate_any(150, 1, noise, mde.mde, PATHS, 12, None)
    assert single.power < sim.power - 0.1
    null = bench.simulate_any(150, 4, noise, 0.0, PATHS, 13, 10.0)
    assert null.inferior <= 0.05 and null.non_inferior > 0.5
