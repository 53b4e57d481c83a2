"""The gate's error rates, regenerated: the figures README's "Sensitive sign-off profile" and "Error rates of the
gate" sections print, from ``evalpipe.stats.operating`` (the rule compare.json applies).

1. **Old vs new sensitive profile** — P(pass) at no regression, at the margin and at #22671's drops (AIME −18.6
   for the competition-maths pool, GPQA −15.0) per gated block and for the whole sign-off, under the argued
   discordance (0.467 × 2p(1 − p), vLLM PR #54705's A/A ratio) and under 2p(1 − p); with the expected output
   tokens per design, variants in turn (the control whole, the test and A/A arms stopping) and together (every
   arm stopping), at each block's max_tokens budget per attempt (an upper bound until a run measures tokens).
2. **Type I at the margin in every path** — 20 000 seeded paths each of ``simulate_oc``, which judges every
   generation with ``gate_codes`` as compare does: the fixed look, the in-run stop (share 0.5 and 1; a resume
   recomputes the same stop), extend once and twice, a fixed design extended once and twice (its look stays at
   the first run's units; ``run --extend`` refuses it), a pool of unequal members; and the negative controls
   (the plain 1.96 Bonett–Price bound, exact at ψ 0.02 and as ψ → 0, a fresh full-α look per extension of a
   fixed design, the restarted e-process under --extend).

    .venv/bin/python perf/bench_gate_oc.py [--paths 20000] [--part all|type-one]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from evalpipe.stats.operating import (
    GateDesign,
    PassProbability,
    fixed_pass_probability,
    gate_codes,
    look_codes,
    pass_probability,
    simulate_oc,
    unit_probabilities,
    worst_size,
)

RATIO = 177 / 1319 / (2 * 0.826 * (1 - 0.826))  # vLLM PR #54705: A/A discordance over 2p(1-p)
ARMS = 3
#: block → (n, accuracy, must-catch drop, output budget per attempt)
BLOCKS = {"competition_math": (153, 0.91, 0.186, 65536), "gpqa_diamond": (198, 0.862, 0.150, 32768)}
PROFILES: dict[str, tuple[float, float | str | None]] = {
    "old, as the gate was (margin 10, plain 95 % Bonett-Price bound, z 1.96)": (10.0, "plain"),
    "old margin with today's fixed look (margin 10, calibrated z*)": (10.0, None),
    "new (margin 13, alpha 0.025 all on the e-processes)": (13.0, 1.0),
}


def plain_pass(n: int, psi: float, drop: float, margin: float) -> float:
    """Exact P(pass) of the gate as it was before the calibration: the 95 % Bonett-Price bound (z = 1.96)."""
    from scipy.stats import binom

    from evalpipe.stats.operating import _ordered_outcomes

    outcomes = _ordered_outcomes(n, margin / 100)
    gain, loss = unit_probabilities(psi, drop)
    passed = outcomes.statistic > 1.959964
    pmf = binom.pmf(outcomes.discordant, n, gain + loss) * binom.pmf(
        outcomes.losses, outcomes.discordant, loss / (gain + loss)
    )
    return float(np.sum(np.where(passed, pmf, 0.0)))


def _tokens(x: float) -> str:
    return f"{x / 1e6:.1f} M"


def profiles(paths: int) -> None:
    print("## 1. Sensitive profile: P(pass) per block and for the sign-off")
    for profile, (margin, share) in PROFILES.items():
        print(f"\n### {profile}")
        for label in ("argued", "2p(1-p)"):
            whole_zero, whole_drop, in_turn, together, fixed = 1.0, 1.0, 0.0, 0.0, 0.0
            for block, (n, p, drop, budget) in BLOCKS.items():
                psi = 2 * p * (1 - p) * (RATIO if label == "argued" else 1.0)
                if isinstance(share, str):  # the gate as it was
                    zero, edge, caught = (
                        PassProbability(-100 * x, plain_pass(n, psi, x, margin), 0.0, "exact enumeration", n)
                        for x in (0.0, margin / 100, drop)
                    )
                else:
                    design = GateDesign(n, margin, 0.025, share)
                    zero = pass_probability(design, psi, 0.0, paths=paths)
                    edge = pass_probability(design, psi, margin / 100, paths=paths)
                    caught = pass_probability(design, psi, drop, paths=paths)
                whole_zero *= zero.p_pass
                whole_drop *= caught.p_pass
                in_turn += (n + (ARMS - 1) * zero.mean_units) * budget
                together += ARMS * zero.mean_units * budget
                fixed += ARMS * n * budget
                print(
                    f"| {block} | {label} ψ {psi:.3f} | {zero.p_pass:.3f} | {edge.p_pass:.3f} | "
                    f"{caught.p_pass:.4f} (−{100 * drop:.1f}) | {zero.mean_units:.0f} of {n} units |"
                )
            print(
                f"| sign-off | {label} | {whole_zero:.3f} | | {whole_drop:.4f} (both drops) | expected "
                f"{_tokens(in_turn)} in turn / {_tokens(together)} together / {_tokens(fixed)} fixed |"
            )


def _limit(alpha: float, paths: int) -> float:
    return alpha + 3 * math.sqrt(alpha * (1 - alpha) / paths)


def restarted_extension_passes(
    paths: int, margin: float, alpha: float, generations: tuple[int, ...] = (100, 300, 1000), seed: int = 4
) -> float:
    """P(pass) at Δ = −margin (ψ 0.1) of the negative control: each larger run of an ``--extend`` chain judged
    afresh (its units re-ordered, bets re-tuned, from unit 1), a path passing when any run passes — what
    ``--extend`` did before the e-process continued; it exceeds α (``tests/stats/test_gate_error_rates.py``)."""
    gain, loss = unit_probabilities(0.1, margin / 100)
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(paths // 2000):
        draw = rng.random((2000, generations[-1]))
        d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
        hit = np.zeros(2000, dtype=bool)
        for size in generations:
            fresh = rng.permuted(d[:, :size], axis=1)  # the old units scattered through the new order
            codes, _, _ = gate_codes(fresh, GateDesign(size, margin, alpha, 1.0))
            hit |= codes == 1
        hits += int(hit.sum())
    return hits / paths


def type_one(paths: int) -> None:
    alpha, margin = 0.025, 10.0
    print(
        f"\n## 2. P(pass | Δ = −margin), {paths} paths each (α {alpha}, limit α + 3 s.e. = {_limit(alpha, paths):.4f})"
    )
    for psi in (0.02, 0.1, 0.3):
        exact = fixed_pass_probability(153, psi, margin / 100, margin, alpha)
        sim = simulate_oc(GateDesign(153, margin, alpha), psi, margin / 100, paths=paths, seed=1)
        print(
            f"| fixed look, n 153, ψ {psi} | {sim.p_pass:.4f} ± {sim.standard_error:.4f} (exact {exact:.4f}) |"
        )
    for share in (0.5, 1.0):
        sim = simulate_oc(GateDesign(198, margin, alpha, share), 0.1, margin / 100, paths=paths, seed=2)
        print(
            f"| in-run stop (= resume), n 198, share {share} | {sim.p_pass:.4f} ± {sim.standard_error:.4f} |"
        )
    for share, chains in ((0.5, ((100, 200), (100, 200, 300), (100, 200, 700), (300, 700))), (None, ((100, 200), (100, 200, 700)))):
        for generations in chains:
            for psi in (0.02, 0.1) if share is None else (0.1,):
                sim = simulate_oc(
                    GateDesign(generations[0], margin, alpha, share),
                    psi,
                    margin / 100,
                    paths=paths,
                    seed=3,
                    generations=generations,
                )
                kind = "fixed design extended" if share is None else "extend"
                print(
                    f"| {kind} {' → '.join(str(x) for x in np.cumsum(generations))}, ψ {psi} | "
                    f"{sim.p_pass:.4f} ± {sim.standard_error:.4f} |"
                )
    rng = np.random.default_rng(5)
    member_psi = np.where(np.arange(153) < 90, 0.04, 0.2)
    passed = 0
    for _ in range(paths // 2000):
        order = rng.permuted(np.tile(member_psi, (2000, 1)), axis=1)
        draw = rng.random((2000, 153))
        d = np.where(draw < order / 2, 1.0, np.where(draw < order + margin / 100, -1.0, 0.0))
        codes, _, _ = gate_codes(d, GateDesign(153, margin, alpha, 0.5))
        passed += int(np.sum(codes == 1))
    print(f"| pool (90 units ψ 0.04, 63 ψ 0.2), share 0.5 | {passed / paths:.4f} |")
    gain, loss = unit_probabilities(0.02, margin / 100)
    draw = np.random.default_rng(7).random((paths, 100))
    d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
    centre = d.sum(axis=1) / 102
    second = (np.square(d).sum(axis=1) + 2) / 102
    lower = centre - 1.959964 * np.sqrt(np.maximum(0, second - centre**2)) / math.sqrt(102)
    calibrated = look_codes(d.sum(axis=1), np.square(d).sum(axis=1), 100, margin, alpha)
    print(
        f"| negative control: plain 95 % Bonett–Price (z 1.96), n 100, ψ 0.02 | {np.mean(100 * lower > -margin):.4f} "
        f"(calibrated z*: {np.mean(calibrated == 1):.4f}) |"
    )
    worst, where = worst_size(100, margin, 1.959964)
    print(f"| negative control: plain 95 % Bonett–Price (z 1.96), n 100, worst over ψ (exact) | {worst:.4f} at ψ {where:g} |")
    hits = restarted_extension_passes(paths, margin, alpha)
    print(f"| negative control: e-process restarted at each extension, 100 → 300 → 1000 | {hits:.4f} |")
    for psi in (0.02, 0.1):
        draw = np.random.default_rng(9).random((paths, 1000))
        gain, loss = unit_probabilities(psi, margin / 100)
        d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
        fresh = np.zeros(paths, dtype=bool)
        for n in (100, 300, 1000):
            codes, _, _ = gate_codes(d[:, :n], GateDesign(n, margin, alpha))
            fresh |= codes == 1
        print(
            f"| negative control: fixed design, a fresh full-α look per extension, 100 → 300 → 1000, ψ {psi} | "
            f"{fresh.mean():.4f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=20_000)
    parser.add_argument("--part", choices=["all", "type-one"], default="all")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.part == "all":
        profiles(args.paths)
    type_one(args.paths)
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
