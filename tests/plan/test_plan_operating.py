"""``evalpipe plan``'s operating characteristic of the shipped sensitive profile (offline: the gated blocks are
planned from their modules' populations)."""

from __future__ import annotations

from pathlib import Path

from evalpipe.config.loader import load_config
from evalpipe.plan.operating import design_rows, discordance_cases, plan_operating_lines
from evalpipe.resolve import resolve

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "glm-fp8-sensitive.yaml"
GATED = {"competition_math": 153, "gpqa_diamond": 198, "kv_probe": 288}
MARGIN = {"competition_math": 13, "gpqa_diamond": 13, "kv_probe": 9}


def test_the_sensitive_profile_passes_good_releases_and_fails_22671() -> None:
    """Under its argued discordance the whole sign-off passes a release with no regression >= 0.95 of the time
    and each block a release with #22671's drop <= 0.01, in the sequential design it runs."""
    cfg = load_config(CONFIG)
    passing = 1.0
    for block, n in GATED.items():
        cases = [c for c in discordance_cases(cfg, block, None, None, None) if c.label == "argued"]
        rows = [r for r in design_rows(cfg, block, n, 1, cases, 1.0, 1) if r.design.startswith("sequential")]
        assert len(rows) == 1
        row = rows[0]
        assert row.at_drop is not None and row.at_drop.p_pass <= 0.01
        assert row.at_margin.p_pass <= 0.025 + 3 * row.at_margin.standard_error
        passing *= row.at_zero.p_pass
    assert passing >= 0.95


def test_plan_prints_every_block_and_the_whole_sign_off() -> None:
    from evalpipe.plan.mde import plan_inputs, pool_input

    cfg = load_config(CONFIG)
    inputs, manifest = plan_inputs(resolve(cfg), None, None)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    text = "\n".join(plan_operating_lines(cfg, [*inputs, *pools], manifest, None))
    for block in GATED:
        assert f"  {block}: n {GATED[block]} × 1, margin {MARGIN[block]} pts" in text
    assert "sign-off (3 gated blocks; it passes only when every block passes)" in text
    assert "    sequential, argued: P(pass | no regression) 0.9" in text
    assert "2p(1-p)" in text and "in turn" in text and "together" in text
    # what the populations reach at 2p(1-p) in the design it runs, and what would (reach_lines)
    assert "    sequential, 2p(1-p): the sign-off reaches 0.7" in text
    assert (
        "      gpqa_diamond reaches 0.8" in text
        and "(population 198) or 2 attempts per unit at n 198" in text
    )
    # the design it runs: the internal pilot, simulated jointly — the sign-off >= 0.95 at the argued discordance
    # and at 2p(1-p), at no more output tokens at the argued one than one attempt throughout (34.43 M) and the
    # pilot's second attempts (16, 21 and 30 units asked twice, three arms, at the budgets: 5.58 M); the figures'
    # assumption (attempts of one unit disagree independently) and the sign-off when they repeat themselves
    lines = text.splitlines()
    for label in ("argued", "2p(1-p)"):
        line = next(
            x for x in lines if x.startswith(f"    pilot, {label}: sign-off P(pass | no regression) ")
        )
        assert float(line.split("no regression) ")[1].split(" ")[0]) >= 0.95, line
        assert "single-block miss 0.00" in line
    spend = next(x for x in lines[lines.index(next(x for x in lines if x.startswith("    pilot, argued:"))) :]
                 if x.startswith("      tokens: out "))  # fmt: skip
    assert (
        float(spend.split("out ")[1].split(" M")[0])
        <= 34.43 + 3 * (16 * 65536 + 21 * 32768 + 30 * 4096) / 1e6
    )
    assert "assumed: attempts of one unit disagree independently (ρ = 0" in text
    repeats = [
        x for x in lines if x.startswith("      if attempts of one unit repeat themselves (ρ = 1): sign-off")
    ]
    assert (
        len(repeats) == len([x for x in lines if x.startswith("    pilot, ")])
        and "bought on 0% of runs" in repeats[0]
    )
    assert max(len(x) for x in lines if "pilot" in x) <= 180


def test_plan_prints_the_single_block_miss_and_the_worst_block_at_its_margin() -> None:
    """Per design and discordance: every block at no regression, the worst block at −margin and the worst block
    at its must-catch drop with the others unchanged (what #22671's GPQA drop alone would do) — each the product
    of that block's P(pass) and the others' at no regression; short lines; a header that says share 1 has no
    fixed look."""
    from evalpipe.plan.mde import plan_inputs, pool_input
    from evalpipe.plan.operating import design_rows, sign_off

    cfg = load_config(CONFIG)
    inputs, manifest = plan_inputs(resolve(cfg), None, None)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    lines = plan_operating_lines(cfg, [*inputs, *pools], manifest, None)
    assert (
        "all of α on the e-processes, no fixed look" in lines[0] and "the rest one fixed look" not in lines[0]
    )
    assert max(len(line) for line in lines if line.lstrip().startswith(("fixed ", "sequential "))) <= 180
    assert max(len(line) for line in lines if "single-block miss" in line and "P(pass |" in line) <= 160
    miss = next(line for line in lines if line.startswith("    sequential, argued:"))
    assert "single-block miss 0.00" in miss and "(gpqa_diamond at −15 pts)" in miss
    # the figures are the products the module states, from the same rows
    rows = []
    for block, n in GATED.items():
        cases = [c for c in discordance_cases(cfg, block, None, None, None) if c.label == "argued"]
        rows += [r for r in design_rows(cfg, block, n, 1, cases, 1.0, 1) if r.design.startswith("sequential")]
    drops = {b: cfg.gates.must_catch_drop_pts.get(b) for b in GATED}
    (signed,) = sign_off(rows, drops)
    by = {r.block: r for r in rows}
    gpqa = by["gpqa_diamond"]
    assert gpqa.at_drop is not None
    expected = gpqa.at_drop.p_pass * by["kv_probe"].at_zero.p_pass * by["competition_math"].at_zero.p_pass
    assert signed.single_miss is not None and signed.single_miss[1] == "gpqa_diamond"
    assert signed.single_miss[0] == expected and expected > 0.001  # not the every-block product, ~0
    assert signed.worst_margin[0] <= 0.025 + 3 * max(r.at_margin.standard_error for r in rows)
    assert f"single-block miss {expected:.4f}" in miss


def test_the_plan_models_the_drops_it_can_foresee(tmp_path: Path) -> None:
    """With a configured context shorter than the 96k items need (98304 + the spec's reserve of 4608), the plan
    judges the probe on the 240 that remain, as a run will (they are dropped before generation), and prices
    only what is sent."""
    import yaml

    from evalpipe.plan.mde import plan_inputs, pool_input

    raw = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    raw["model"]["context_length"] = 98304
    for bench in raw["benchmarks"]:
        if "sampling" in bench:
            bench["sampling"] = str((CONFIG.parent / bench["sampling"]).resolve())
        if "local" in bench.get("source", {}):
            bench["source"]["local"] = str((CONFIG.parent / bench["source"]["local"]).resolve())
    raw["output_root"] = str(tmp_path / "results")
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    cfg = load_config(path)
    inputs, manifest = plan_inputs(resolve(cfg), None, None)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    text = "\n".join(plan_operating_lines(cfg, [*inputs, *pools], manifest, None))
    assert (
        "  kv_probe: n 288 × 1 (240 judged: 48 need more than the configured context of 98,304 tokens" in text
    )
    assert f"out {3 * 240 * 4096 / 1e6:.2f} M" in text
    assert "  gpqa_diamond: n 198 × 1, margin" in text  # a read benchmark: nothing foreseen


def test_plan_prices_prefill_and_decode_apart_per_block() -> None:
    """The KV probe is counted from its spec without generating it (no tokenizer needed): 4 tasks x 6 placements
    x 2 items x 6 lengths, priced at the mean length it is built to; its cost is prefill, the pool's decode."""
    from evalpipe.plan.mde import plan_inputs, pool_input

    cfg = load_config(CONFIG)
    inputs, manifest = plan_inputs(resolve(cfg), None, None)
    probe = next(x for x in inputs if not isinstance(x, str) and x.benchmark == "kv_probe")
    lengths = (4096, 8192, 16384, 32768, 65536, 98304)
    assert (probe.n_now, probe.population) == (288, 288)
    assert probe.input_per_sample == sum(lengths) / len(lengths)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    lines = plan_operating_lines(cfg, [*inputs, *pools], manifest, None)
    fixed = [line for line in lines if line.lstrip().startswith("fixed") and " argued " in line]
    probe_row, pool_row = fixed[1], fixed[2]  # config order: gpqa_diamond, kv_probe, then the pool
    prefill = 3 * 288 * sum(lengths) / len(lengths) / 1e6
    assert probe_row.endswith(f"out {3 * 288 * 4096 / 1e6:.2f} M, in {prefill:.2f} M")
    assert pool_row.endswith(f"out {3 * 153 * 65536 / 1e6:.2f} M")  # prefill unknown before a run: not priced
    at = lines.index(next(line for line in lines if line.startswith("  kv_probe: ")))
    assert f"input: {sum(lengths) / len(lengths):.0f} prompt tokens per sample" in lines[at + 2]


def test_the_mde_plan_prices_the_probes_prefill_too() -> None:
    from evalpipe.plan.mde import plan_benchmark, plan_inputs
    from evalpipe.report.plan import plan_lines

    cfg = load_config(CONFIG)
    inputs, _ = plan_inputs(resolve(cfg), None, None)
    probe = next(x for x in inputs if not isinstance(x, str) and x.benchmark == "kv_probe")
    aime = next(x for x in inputs if not isinstance(x, str) and x.benchmark == "aime26")
    probe_lines = plan_lines(plan_benchmark(cfg, probe, None, 15.0, None, False))
    assert (
        "  cost: input (prefill) 37547 prompt tokens per sample; output (decode) no run measured: 4096"
        in "\n".join(probe_lines)
    )
    aime_lines = plan_lines(plan_benchmark(cfg, aime, None, 15.0, None, False))
    assert (
        "  cost: input (prefill) prompt tokens unknown before a run; output (decode) no run measured"
        in "\n".join(aime_lines)
    )


def test_the_chance_reference_uses_the_designs_accuracy_never_a_measured_one() -> None:
    """2p(1-p) beside the argued discordance is at the design's accuracy even when RUN measured another (a
    doctored run's 1.0 made it 0.000); without a design a measured 0 or 1 gives way to 0.5."""
    cfg = load_config(CONFIG)
    chance = {c.label: c for c in discordance_cases(cfg, "gpqa_diamond", 0.15, "A/A", 1.0)}["2p(1-p)"]
    assert chance.discordance == 2 * 0.862 * (1 - 0.862) and "the design's accuracy" in chance.basis
    bare = cfg.model_copy(update={"design": {}})
    (only,) = discordance_cases(bare, "gpqa_diamond", None, None, 1.0)
    assert only.discordance == 0.5 and "would make it 0" in only.basis
    (measured,) = discordance_cases(bare, "gpqa_diamond", None, None, 0.8)
    assert round(measured.discordance, 6) == 0.32 and "RUN's control accuracy" in measured.basis


def test_units_to_reach_is_the_fewest_units_that_reach_the_target() -> None:
    """Exact for the fixed look: the n found reaches the target at 2p(1-p) and n − 1 does not; a design that
    already reaches it needs nothing more; one that cannot within the search says so (None)."""
    from evalpipe.plan.operating import units_to_reach
    from evalpipe.stats.operating import GateDesign, fixed_pass_probability

    psi = 2 * 0.862 * (1 - 0.862)
    design = GateDesign(120, 13.0, 0.025)
    n = units_to_reach(design, psi, 0.983)
    assert n is not None and 120 < n <= 480
    assert fixed_pass_probability(n, psi, 0.0, 13.0, 0.025) >= 0.983
    assert fixed_pass_probability(n - 1, psi, 0.0, 13.0, 0.025) < 0.983
    assert units_to_reach(GateDesign(n, 13.0, 0.025), psi, 0.983) == n
    assert (
        units_to_reach(GateDesign(60, 5.0, 0.025), psi, 0.983) is None
    )  # 240 units cannot see 5 pts at ψ 0.24


def test_attempts_to_reach_divides_a_within_sample_discordance_by_the_attempts() -> None:
    """k attempts per arm at the same n: the discordance ψ/k (within-sample noise); the k found reaches the
    target and k − 1 does not."""
    from evalpipe.plan.operating import attempts_to_reach
    from evalpipe.stats.operating import GateDesign, fixed_pass_probability

    psi = 2 * 0.862 * (1 - 0.862)
    found = attempts_to_reach(GateDesign(100, 13.0, 0.025), psi, 0.983)
    assert found is not None
    k, reached = found
    assert k >= 2 and reached == fixed_pass_probability(100, psi / k, 0.0, 13.0, 0.025) >= 0.983
    assert fixed_pass_probability(100, psi / (k - 1), 0.0, 13.0, 0.025) < 0.983


def test_the_plan_says_what_the_populations_reach_at_2p1p_and_what_would() -> None:
    """The sensitive profile's sign-off falls short of 0.95 at 2p(1-p) with its populations (each block must
    pass 0.95^(1/3)): the plan names each block below that, what it reaches, and the units (against its
    population) or attempts that would — never for a case that reaches the target."""
    from evalpipe.plan.operating import BlockPlan, block_designs, reach_lines

    cfg = load_config(CONFIG)
    rows = []
    plans = {}
    for block, n in GATED.items():
        cases = discordance_cases(cfg, block, None, None, None)
        rows += [r for r in design_rows(cfg, block, n, 1, cases, 1.0, 1) if r.design.startswith("fixed")]
        plans[block] = BlockPlan(block, block_designs(cfg, block, n, 1), n)
    lines = reach_lines(rows, plans)
    assert "≥ 0.95 at every discordance up to 2p(1-p), ≥ 0.983 per block (3)" in lines[0]
    assert "    fixed, 2p(1-p): the sign-off reaches 0.875" in lines
    assert not any("argued" in line for line in lines)  # 0.998 there: nothing to add
    gpqa = next(line for line in lines if line.startswith("      gpqa_diamond reaches 0.944"))
    assert "(population 198)" in gpqa and "2 attempts per unit at n 198" in gpqa
    assert max(len(line) for line in lines) <= 160
