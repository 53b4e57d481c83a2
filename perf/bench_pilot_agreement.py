"""The sensitive profile's internal pilot when the attempts of one unit agree beyond chance, and when the pilot
is easier than the rest: the run's path through the product's own simulation (``evalpipe.stats.pilot.
simulate_pilot``, the function ``evalpipe plan`` prints from) over ρ × ratio × drift.

ρ (``correlation``): each unit answers every attempt as its first with probability ρ, else independently (the
correlation of two attempts' paired differences).  Ratio: the discordance as a multiple of 2p(1 − p) at each
block's design accuracy.  Drift: the pilot units' discordance is ``(1 − drift)`` × the rest's.

Per point: the sign-off's P(pass | no regression) (three blocks jointly) with its Monte-Carlo s.e.; type I — the
largest P(pass) of a block at its own −margin (the others unchanged) over the three blocks; the expected output
tokens in turn (three arms, each block's ``max_tokens`` budget per attempt: an upper bound, as the plan prices
before a run); how often the rule bought more than one attempt, and the mean attempts it bought.  Beside it the
one-attempt design (no pilot: the same e-processes on one attempt per unit, ``gate_codes``): its P(pass | no
regression) and tokens.

    .venv/bin/python perf/bench_pilot_agreement.py [--paths 4000]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from evalpipe.config.loader import load_config
from evalpipe.stats.operating import GateDesign, gate_codes, unit_probabilities
from evalpipe.stats.pilot import AttemptModel, PilotBlockDesign, PilotRule, chance_discordance, simulate_pilot

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "glm-fp8-sensitive.yaml"
UNITS = {"competition_math": 153, "gpqa_diamond": 198, "kv_probe": 288}
BUDGET = {"competition_math": 65536, "gpqa_diamond": 32768, "kv_probe": 4096}
RHOS = (0.0, 0.5, 0.9, 1.0)
RATIOS = (0.467, 0.8, 1.0, 1.15)
DRIFTS = (0.0, 0.3)
SEED = 20261207
ARMS = 3


def one_attempt(
    blocks: list[PilotBlockDesign], psi: list[float], drift: float, pilot: PilotRule, paths: int, seed: int
) -> tuple[float, float]:
    """The one-attempt sequential design's sign-off P(pass | no regression) and expected output tokens in turn
    (the control whole, the other arms to the stop), on the gate's own rule; the same population as the pilot's
    (its first units, the pilot's, ``(1 − drift)`` × as discordant)."""
    joint = np.ones(paths, dtype=bool)
    tokens = 0.0
    for b, block in enumerate(blocks):
        k = pilot.pilot_units(block.design.n)
        gain, loss = np.empty(block.design.n), np.empty(block.design.n)
        gain[:k], loss[:k] = unit_probabilities((1.0 - drift) * psi[b], 0.0)
        gain[k:], loss[k:] = unit_probabilities(psi[b], 0.0)
        draw = np.random.default_rng([seed, b]).random((paths, block.design.n))
        d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
        codes, units, _ = gate_codes(d, block.design)
        joint &= codes == 1
        tokens += float(np.mean(block.design.n + (ARMS - 1) * units)) * block.tokens_per_attempt
    return float(joint.mean()), tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--paths", type=int, default=4000)
    args = parser.parse_args()
    cfg = load_config(CONFIG)
    seq = cfg.generation.sequential
    assert seq is not None and seq.pilot is not None
    rule = PilotRule(**seq.pilot.model_dump())
    blocks = []
    for name, n in UNITS.items():
        margin = cfg.gates.points_for("non_inferiority_margin_pts", name)
        assert margin is not None
        design = GateDesign(n, margin, seq.alpha, 1.0)
        blocks.append(PilotBlockDesign(name, design, cfg.design[name].accuracy, BUDGET[name]))
    start = time.perf_counter()
    print(f"rule {rule}; {args.paths} paths per point; alpha {seq.alpha:g}; tokens: output, 3 arms in turn")
    print(
        "  rho  ratio drift | pilot: P(pass|0)  +- se   type I (block)          tokens  bought  mean k "
        "| one attempt: P(pass|0) tokens"
    )
    point = 0
    for drift in DRIFTS:
        for ratio in RATIOS:
            psi = [min(ratio * chance_discordance(b.accuracy), 0.85) for b in blocks]
            base_p, base_tokens = one_attempt(blocks, psi, drift, rule, args.paths, SEED + 7919 * point)
            for rho in RHOS:
                point += 1
                seed = SEED + 100 * point
                kw = {"paths": args.paths, "arms": ARMS, "model": AttemptModel(rho, drift)}
                zero = simulate_pilot(blocks, rule, psi, [0.0] * len(blocks), seed=seed, **kw)  # type: ignore[arg-type]
                worst = (0.0, "")
                for b, block in enumerate(blocks):
                    at = [0.0] * len(blocks)
                    at[b] = block.design.margin_pts / 100.0
                    out = simulate_pilot(blocks, rule, psi, at, seed=seed + 1 + b, **kw)  # type: ignore[arg-type]
                    worst = max(worst, (out.p_pass(b), block.name))
                bought = zero.chosen > 1
                mean_k = float(zero.chosen[bought].mean()) if bought.any() else math.nan
                print(
                    f"  {rho:3.1f}  {ratio:5.3f} {drift:4.1f}  | {zero.p_pass():.3f} +- {zero.standard_error():.3f}  "
                    f"{worst[0]:.4f} ({worst[1]:<16}) {zero.tokens(blocks) / 1e6:6.1f} M  {bought.mean():5.2f}  "
                    f"{mean_k:5.2f}  | {base_p:.3f}  {base_tokens / 1e6:5.1f} M"
                )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
