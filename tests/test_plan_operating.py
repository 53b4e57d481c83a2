"""``evalpipe plan``'s operating characteristic of the shipped sensitive profile (offline: the gated blocks are
planned from their modules' populations)."""

from __future__ import annotations

from pathlib import Path

from evalpipe.config.loader import load_config
from evalpipe.plan.operating import design_rows, discordance_cases, plan_operating_lines

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "glm-fp8-sensitive.yaml"
GATED = {"competition_math": 153, "gpqa_diamond": 198}


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
    from evalpipe.samplers.mde_plan import plan_inputs, pool_input

    cfg = load_config(CONFIG)
    inputs, manifest = plan_inputs(cfg, None, None)
    pools = [pool_input(name, members, inputs) for name, members in cfg.pools.items()]
    text = "\n".join(plan_operating_lines(cfg, [*inputs, *pools], manifest, None))
    for block in GATED:
        assert f"  {block}: n {GATED[block]} × 1, margin 13 pts" in text
    assert "sign-off, sequential design, argued discordance (2 gated blocks): P(pass | no regression) 0.9" in text
    assert "2p(1-p)" in text and "in turn" in text and "together" in text
