"""The shipped sensitive profile's operating characteristic with its internal pilot, through the product's own
simulation of the run's path (``evalpipe.stats.pilot.simulate_pilot``, the function ``evalpipe plan`` prints
from), at several discordances as ratios of 2p(1 − p) at the design accuracies.

Per ratio: the sign-off's P(pass | no regression) (the three blocks jointly: the pooled rule couples them) and
each block's, the worst block's P(pass | −margin) with the others unchanged (and the sign-off's there), the
worst single-block miss (one block at its must-catch drop), the expected output tokens in turn at each block's
``max_tokens`` budget per attempt (an upper bound, as ``evalpipe plan`` prices before a run) and how often the
rule chose more attempts.  ``--type-one``: each block at its margin, ``--paths`` paths per point, with the
Monte-Carlo standard error.

    .venv/bin/python perf/bench_pilot_oc.py [--paths 4000] [--type-one --paths 10000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from evalpipe.config.loader import load_config
from evalpipe.stats.operating import GateDesign
from evalpipe.stats.pilot import PilotBlockDesign, PilotRule, chance_discordance, simulate_pilot

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "glm-fp8-sensitive.yaml"
#: the gated blocks' units (their populations: the profile takes all of them)
UNITS = {"competition_math": 153, "gpqa_diamond": 198, "kv_probe": 288}
RATIOS = (0.467, 0.6, 0.8, 1.0, 1.15)
SEED = 20261207


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--paths", type=int, default=4000)
    parser.add_argument("--type-one", action="store_true")
    args = parser.parse_args()
    cfg = load_config(CONFIG)
    seq = cfg.generation.sequential
    assert seq is not None and seq.pilot is not None
    rule = PilotRule(**seq.pilot.model_dump())
    names = list(UNITS)
    budget = {"competition_math": 65536, "gpqa_diamond": 32768, "kv_probe": 4096}
    blocks = []
    for name in names:
        margin = cfg.gates.points_for("non_inferiority_margin_pts", name)
        assert margin is not None
        design = GateDesign(UNITS[name], margin, seq.alpha, 1.0)
        blocks.append(PilotBlockDesign(name, design, cfg.design[name].accuracy, budget[name]))
    drops = [cfg.gates.must_catch_drop_pts[n] / 100.0 for n in names]
    start = time.perf_counter()
    print(
        f"pilot share {rule.share:g}, threshold {rule.threshold:g} x 2p(1-p), up to {rule.attempts} attempts, {rule.agreement:g} of the pilot asked twice; "
        f"{args.paths} paths per point; alpha {seq.alpha:g}"
    )
    for r, ratio in enumerate(RATIOS if not args.type_one else (0.1, 0.467, 1.0)):
        psi = [min(ratio * chance_discordance(b.accuracy), 1.0 - max(d, b.design.margin_pts / 100)) for b, d in zip(blocks, drops, strict=True)]
        seed = SEED + 100 * r
        if args.type_one:
            for b, block in enumerate(blocks):
                at = [0.0] * len(blocks)
                at[b] = block.design.margin_pts / 100.0
                out = simulate_pilot(blocks, rule, psi, at, paths=args.paths, seed=seed + b)
                print(
                    f"  ratio {ratio:.3f} {block.name} (psi {psi[b]:.4f}) at -{block.design.margin_pts:g}: "
                    f"P(pass) {out.p_pass(b):.4f} +- {out.standard_error(b):.4f}"
                )
            continue
        zero = simulate_pilot(blocks, rule, psi, [0.0] * len(blocks), paths=args.paths, seed=seed)
        margin_block, margin_signoff, miss = [], [], []
        for b, block in enumerate(blocks):
            at = [0.0] * len(blocks)
            at[b] = block.design.margin_pts / 100.0
            out = simulate_pilot(blocks, rule, psi, at, paths=args.paths, seed=seed + 1 + b)
            margin_block.append((out.p_pass(b), block.name))
            margin_signoff.append(out.p_pass())
            at[b] = drops[b]
            miss.append((simulate_pilot(blocks, rule, psi, at, paths=args.paths, seed=seed + 11 + b).p_pass(), block.name))
        per_block = " ".join(f"{zero.p_pass(b):.3f}" for b in range(len(blocks)))
        print(
            f"  ratio {ratio:.3f}: sign-off P(pass|0) {zero.p_pass():.3f} +- {zero.standard_error():.3f} "
            f"(blocks {per_block}) | P(pass|-margin) block {max(margin_block)[0]:.4f} ({max(margin_block)[1]}) "
            f"sign-off {max(margin_signoff):.4f} | single-block miss {max(miss)[0]:.4f} ({max(miss)[1]}) | "
            f"out {zero.tokens(blocks) / 1e6:.2f} M in turn | more than 1 attempt chosen {zero.fired.mean():.2f}"
        )
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
