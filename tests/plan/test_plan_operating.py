"""``evalpipe plan``'s operating characteristic of the shipped sensitive profile (offline: the gated blocks are
planned from their modules' populations)."""

from __future__ import annotations

from pathlib import Path

from evalpipe.config.loader import load_config
from evalpipe.plan.operating import design_rows, discordance_cases, plan_operating_lines

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
    inputs, manifest = plan_inputs(cfg, None, None)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    text = "\n".join(plan_operating_lines(cfg, [*inputs, *pools], manifest, None))
    for block in GATED:
        assert f"  {block}: n {GATED[block]} × 1, margin {MARGIN[block]} pts" in text
    assert (
        "sign-off, sequential design, argued discordance (3 gated blocks): P(pass | no regression) 0.9"
        in text
    )
    assert "2p(1-p)" in text and "in turn" in text and "together" in text


def test_plan_prices_prefill_and_decode_apart_per_block() -> None:
    """The KV probe is counted from its spec without generating it (no tokenizer needed): 4 tasks x 6 placements
    x 2 items x 6 lengths, priced at the mean length it is built to; its cost is prefill, the pool's decode."""
    from evalpipe.plan.mde import plan_inputs, pool_input

    cfg = load_config(CONFIG)
    inputs, manifest = plan_inputs(cfg, None, None)
    probe = next(x for x in inputs if not isinstance(x, str) and x.benchmark == "kv_probe")
    lengths = (4096, 8192, 16384, 32768, 65536, 98304)
    assert (probe.n_now, probe.population) == (288, 288)
    assert probe.input_per_sample == sum(lengths) / len(lengths)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    lines = plan_operating_lines(cfg, [*inputs, *pools], manifest, None)
    fixed = [line for line in lines if line.lstrip().startswith("fixed") and "(argued)" in line]
    probe_row, pool_row = fixed[1], fixed[2]  # config order: gpqa_diamond, kv_probe, then the pool
    prefill = 3 * 288 * sum(lengths) / len(lengths) / 1e6
    assert (
        f"input (prefill) tokens {prefill:.2f} M; output (decode) tokens {3 * 288 * 4096 / 1e6:.2f} M"
        in probe_row
    )
    assert (
        f"input (prefill) tokens unknown before a run; output (decode) tokens {3 * 153 * 65536 / 1e6:.2f} M"
        in (pool_row)
    )
    header = next(line for line in lines if line.startswith("  kv_probe: "))
    assert f"input: {sum(lengths) / len(lengths):.0f} prompt tokens per sample" in header


def test_the_mde_plan_prices_the_probes_prefill_too() -> None:
    from evalpipe.plan.mde import plan_benchmark, plan_inputs
    from evalpipe.report.plan import plan_lines

    cfg = load_config(CONFIG)
    inputs, _ = plan_inputs(cfg, None, None)
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
