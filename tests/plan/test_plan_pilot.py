"""``evalpipe plan``'s internal-pilot lines (``evalpipe.plan.pilot``): the spend is priced over every arm the run
launches — the A/A repeat sends the pilot and the units up to the verdict like the test arm — and the lines say
what the figures assume about attempts of one unit."""

from __future__ import annotations

from helpers.config import config_data, entry

from evalpipe.config.models import RunConfig
from evalpipe.plan.pilot import PILOT_SEED, PilotCase, PilotInput, _simulated, pilot_lines
from evalpipe.stats.operating import GateDesign
from evalpipe.stats.pilot import PilotBlockDesign, PilotRule

BENCH = "gsm8k"


def _config(variants: list[dict[str, object]]) -> RunConfig:
    return RunConfig.model_validate(
        config_data(
            benchmarks=[entry(BENCH, subset="main")],
            generation={
                "sequential": {
                    "alpha": 0.025,
                    "sequential_share": 1.0,
                    "pilot": {"share": 0.3, "threshold": 0.65, "attempts": 4, "agreement": 0.35},
                }
            },
            variants=variants,
            gates={"non_inferiority_margin_pts": {BENCH: 10.0}},
            design={BENCH: {"accuracy": 0.8, "discordance": 0.16, "basis": "test"}},
        )
    )


def test_the_pilot_is_priced_over_every_arm_the_a_a_repeat_included() -> None:
    cfg = _config([{"name": "test"}, {"name": "control"}, {"name": "again", "repeat_of": "control"}])
    block = PilotInput(BENCH, 120, 10.0, None, 0.8, 1000.0)
    lines = pilot_lines(cfg, [block], [PilotCase("argued", [0.32])])
    assert any(x.startswith("    assumed: attempts of one unit disagree independently (ρ = 0") for x in lines)
    spend = next(x for x in lines if x.startswith("      tokens: out "))
    rule = PilotRule(0.3, 0.65, 4, 0.35)
    design = (PilotBlockDesign(BENCH, GateDesign(120, 10.0, 0.025, 1.0), 0.8, 1000.0),)
    three = _simulated(design, rule, (0.32,), (0.0,), PILOT_SEED, 3).tokens(design)
    two = _simulated(design, rule, (0.32,), (0.0,), PILOT_SEED, 2).tokens(design)
    assert (
        spend.startswith(f"      tokens: out {three / 1e6:.2f} M in turn")
        and f"{two / 1e6:.2f}" != f"{three / 1e6:.2f}"
    )
