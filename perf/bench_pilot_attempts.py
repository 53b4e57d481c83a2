"""An internal pilot that chooses the attempts per unit: the sensitive profile's operating characteristic and its
output tokens, simulated through the gate's own rule (``evalpipe.stats.operating.gate_codes``), before any of it
is built into a run.

**The design simulated** (one gated block; the sign-off is the three blocks at once, every path of every block
drawn at the same discordance ratio):

1. *Pilot* (generation 1): the first ``K`` units of the block in the manifest's seeded order, one attempt each, in
   every arm in turn — the control whole (its ``K``), then the test arm and the A/A arm up to the e-processes'
   crossing (the in-run stop).  A crossing inside the pilot is the verdict: nothing more is sent in any arm.
2. *Rule* (declared before any look): the pilot's discordance of the judged pair — the share of its ``K`` units
   whose paired difference is non-zero — as a ratio to ``2p(1 − p)`` at the design's accuracy, per block or
   pooled over the blocks (``--pooled``: ``Σ D_b / Σ K_b 2p_b(1 − p_b)``, one decision for the run).  Above
   ``threshold`` every remaining unit gets ``--attempts`` attempts per arm, else 1.  ``k`` of a remaining unit is
   fixed by answers to *other* units (the pilot's), before its own exist: a predictable choice, so the
   e-processes stay e-processes (Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by
   betting", JRSS B, arXiv 2010.09686, §4–5: the bet, and the law of the next observation, may depend on the
   past) and the unit value is the mean of its attempts, ``d ∈ [−1, 1]`` with mean Δ whatever ``k``.  The
   negative control (``--type-one``) re-asks a unit whose own first attempt was a loss: not predictable, and
   its type I at the margin is far above α.
3. *Remainder* (generation 2): the other ``n − K`` units at their ``k``, in every arm in turn — the control whole,
   the test and A/A arms to the stop — the e-processes continuing over all ``n`` units (bets tuned to ``n``).

**The model**: every attempt's paired difference is the three-point law of ``evalpipe.stats.operating``
(``ψ/2`` test-only right, ``ψ/2 + δ`` control-only right); a unit's ``d`` is the mean of its ``k`` attempts'
differences — exact when the disagreement is within-sample (two runs of one model on one prompt), the case
2p(1 − p) describes; a between-sample disagreement would not shrink with ``k``.

**Tokens**: each block's ``max_tokens`` budget per attempt (an upper bound, as ``evalpipe plan`` prices before a
run), three arms in turn: ``K + [no crossing in the pilot] · k (n − K)`` attempts in the control and the attempts
up to the stop in each of the other two arms.

    .venv/bin/python perf/bench_pilot_attempts.py [--paths 4000] [--pooled --share 0.4 --threshold 0.7 --attempts 4]
    .venv/bin/python perf/bench_pilot_attempts.py --search --paths 1000      # the grid, pooled rule
    .venv/bin/python perf/bench_pilot_attempts.py --type-one --paths 10000 --pooled --share 0.4 --threshold 0.7 \
        --attempts 4
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalpipe.stats.operating import GateDesign, gate_codes, unit_probabilities

ALPHA = 0.025
ARMS = 3
RATIOS = (0.467, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9, 1.0, 1.15)
ARGUED = 0.467
SEED = 20261206


@dataclass(frozen=True)
class Block:
    name: str
    n: int
    margin_pts: float
    drop_pts: float
    accuracy: float
    tokens_per_attempt: int

    def chance(self) -> float:
        return 2.0 * self.accuracy * (1.0 - self.accuracy)


#: configs/glm-fp8-sensitive.yaml's gated blocks: n, margin, must-catch drop, design accuracy, max_tokens budget.
BLOCKS = (
    Block("competition_math", 153, 13.0, 18.6, 0.91, 65536),
    Block("gpqa_diamond", 198, 13.0, 15.0, 0.862, 32768),
    Block("kv_probe", 288, 9.0, 13.0, 0.93, 4096),
)


@dataclass(frozen=True)
class Pilot:
    """The rule: pilot share of the block's units (0: no pilot, one attempt throughout) and the threshold on the
    pilot's discordance as a multiple of 2p(1 − p)."""

    share: float
    threshold: float
    attempts: int = 2
    pooled: bool = False

    def size(self, n: int) -> int:
        return min(n, max(0, round(self.share * n)))


@dataclass(frozen=True)
class Outcome:
    passed: NDArray[np.bool_]
    attempts: NDArray[np.float64]  # output attempts over the three arms, per path
    fired: NDArray[np.bool_]


def _draws(block: Block, pilot: Pilot | None, psi: float, drop: float, paths: int, seed: int) -> NDArray[np.float64]:
    gain, loss = unit_probabilities(psi, drop)
    most = pilot.attempts if pilot is not None else 1
    draw = np.random.default_rng(seed).random((paths, block.n, most))
    out: NDArray[np.float64] = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
    return out


def pilot_units(block: Block, pilot: Pilot | None) -> int:
    return pilot.size(block.n) if pilot is not None else block.n


def rule(
    blocks: tuple[Block, ...], pilot: Pilot | None, first: list[NDArray[np.float64]]
) -> list[NDArray[np.bool_]]:
    """Per block and path: whether the remainder gets ``pilot.attempts`` attempts — read off the pilot units'
    first attempts only (``first[b][:, :K_b]``), never a remainder unit's answers.  Pooled: one ratio over every
    block's pilot, ``Σ D_b / Σ K_b 2p_b(1 − p_b)``; else each block's own ``D_b / (K_b 2p_b(1 − p_b))``."""
    paths = first[0].shape[0]
    if pilot is None:
        return [np.zeros(paths, dtype=bool) for _ in blocks]
    sizes = [pilot_units(b, pilot) for b in blocks]
    discordant = [np.sum(f[:, :k] != 0.0, axis=1) for f, k in zip(first, sizes, strict=True)]
    expected = [k * b.chance() for b, k in zip(blocks, sizes, strict=True)]
    if pilot.pooled:
        ratio = sum(discordant) / sum(expected)
        return [ratio > pilot.threshold for _ in blocks]
    return [d / e > pilot.threshold for d, e in zip(discordant, expected, strict=True)]


def judge(
    block: Block, pilot: Pilot | None, attempt: NDArray[np.float64], fired: NDArray[np.bool_]
) -> Outcome:
    """One block's paths after the rule: unit values, ``gate_codes``, attempts spent in turn."""
    paths, n = attempt.shape[:2]
    k_pilot = pilot_units(block, pilot)
    most = attempt.shape[2]
    k = np.ones((paths, n))
    k[:, k_pilot:] = np.where(fired[:, None], float(most), 1.0)
    d = np.where(k > 1.0, attempt.mean(axis=2), attempt[:, :, 0])
    codes, units, _ = gate_codes(d, GateDesign(n, block.margin_pts, ALPHA, 1.0))
    cum = np.cumsum(k, axis=1)
    stopped = cum[np.arange(paths), units - 1]
    if pilot is None:
        control = np.full(paths, float(n))
    else:
        control = np.where(units <= k_pilot, float(k_pilot), cum[:, -1])
    return Outcome(codes == 1, control + (ARMS - 1) * stopped, fired)


def peeking(block: Block, attempt: NDArray[np.float64]) -> NDArray[np.bool_]:
    """The negative control: a rule that is *not* predictable — a unit whose first attempt went against the test
    arm (``d = −1``) is asked again (its value the mean of both) — judged by ``gate_codes`` at the margin."""
    first = attempt[:, :, 0]
    d = np.where(first < 0.0, attempt[:, :, :2].mean(axis=2), first)
    codes, _, _ = gate_codes(d, GateDesign(block.n, block.margin_pts, ALPHA, 1.0))
    passed: NDArray[np.bool_] = codes == 1
    return passed


def type_one(pilot: Pilot, paths: int, ratios: tuple[float, ...]) -> None:
    """P(pass | −margin) of each block through pilot, rule and stop (the others at no regression, as the pooled
    rule sees them), at several discordances, with its Monte-Carlo s.e.; and the peeking rule's."""
    print(f"type I at the margin (alpha {ALPHA}), {paths} paths per point")
    for r in ratios:
        seed = SEED + 5 + round(1000 * r)
        for b, block in enumerate(BLOCKS):
            at = [0.0] * len(BLOCKS)
            at[b] = block.margin_pts / 100.0
            p = float(simulate(pilot, r, at, paths, seed + 307 * (b + 1))[b].passed.mean())
            psi = min(r * block.chance(), 1.0 - block.drop_pts / 100.0)
            draws = _draws(block, Pilot(0.0, 0.0, 2), psi, at[b], paths, seed + 401 * (b + 1))
            q = float(peeking(block, draws).mean())
            se = math.sqrt(max(p * (1 - p), 1.0 / paths) / paths)
            print(
                f"  ratio {r:.3f} ({block.name}, psi {psi:.4f}): pilot design {p:.4f} +- {se:.4f} | "
                f"peeking rule (re-ask a unit's loss) {q:.4f}"
            )


def simulate(pilot: Pilot | None, ratio: float, drops: list[float], paths: int, seed: int) -> list[Outcome]:
    """Every block's paths at one discordance ratio, block b at drop ``drops[b]``, through pilot, rule,
    remainder and stop."""
    attempts = []
    for b, (block, drop) in enumerate(zip(BLOCKS, drops, strict=True)):
        psi = min(ratio * block.chance(), 1.0 - block.drop_pts / 100.0)
        attempts.append(_draws(block, pilot, psi, drop, paths, seed + 7919 * b))
    fired = rule(BLOCKS, pilot, [a[:, :, 0] for a in attempts])
    return [judge(b, pilot, a, f) for b, a, f in zip(BLOCKS, attempts, fired, strict=True)]


def table(pilot: Pilot | None, paths: int, ratios: tuple[float, ...] = RATIOS) -> list[dict[str, Any]]:
    """Per ratio: the sign-off's P(pass | no regression) (all blocks on the same paths), the worst block's
    P(pass | −margin) and the worst single-block miss (that block at its drop, the others at none, jointly
    simulated: a pooled rule couples them), expected output tokens in turn, and how often the rule fired."""
    rows = []
    for r in ratios:
        seed = SEED + round(1000 * r)
        zero = simulate(pilot, r, [0.0] * len(BLOCKS), paths, seed)
        passed = np.logical_and.reduce([o.passed for o in zero])
        margin, miss, block_margin = [], [], []
        for b, block in enumerate(BLOCKS):
            at = [0.0] * len(BLOCKS)
            at[b] = block.margin_pts / 100.0
            m = simulate(pilot, r, at, paths, seed + 101 * (b + 1))
            margin.append(float(np.logical_and.reduce([o.passed for o in m]).mean()))
            block_margin.append(float(m[b].passed.mean()))
            at[b] = block.drop_pts / 100.0
            x = simulate(pilot, r, at, paths, seed + 211 * (b + 1))
            miss.append(float(np.logical_and.reduce([o.passed for o in x]).mean()))
        rows.append(
            {
                "ratio": r,
                "signoff": float(passed.mean()),
                "blocks": [float(o.passed.mean()) for o in zero],
                "margin": max(margin),
                "block_margin": max(block_margin),
                "miss": max(miss),
                "tokens": sum(float(o.attempts.mean()) * b.tokens_per_attempt for o, b in zip(zero, BLOCKS, strict=True)),
                "fired": [float(o.fired.mean()) for o in zero],
            }
        )
    return rows


def show(title: str, rows: list[dict[str, Any]]) -> None:
    print(title)
    for row in rows:
        blocks = " ".join(f"{p:.3f}" for p in row["blocks"])
        fired = " ".join(f"{p:.2f}" for p in row["fired"])
        print(
            f"  ratio {row['ratio']:.3f}: sign-off P(pass|0) {row['signoff']:.3f} (blocks {blocks}) | "
            f"P(pass|-margin) block {row['block_margin']:.4f} sign-off {row['margin']:.4f} | single-block miss {row['miss']:.4f} | "
            f"out {row['tokens'] / 1e6:.2f} M in turn | k>1 chosen {fired}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--paths", type=int, default=4000)
    parser.add_argument("--search", action="store_true", help="grid over pilot share and threshold")
    parser.add_argument("--share", type=float, default=0.5)
    parser.add_argument("--threshold", type=float, default=0.6)
    parser.add_argument("--attempts", type=int, default=2)
    parser.add_argument("--pooled", action="store_true", help="one pilot ratio over every block")
    parser.add_argument("--type-one", action="store_true", help="type I at the margin of the chosen design")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.type_one:
        type_one(Pilot(args.share, args.threshold, args.attempts, args.pooled), args.paths, (0.1, ARGUED, 1.0))
        print(f"({time.perf_counter() - start:.0f} s)")
        return
    show("today's sensitive profile (sequential, one attempt, no pilot)", table(None, args.paths))
    if args.search:
        for attempts in (3, 4):
            for share in (0.35, 0.4, 0.5):
                for threshold in (0.6, 0.7, 0.8):
                    pilot = Pilot(share, threshold, attempts, pooled=True)
                    rows = table(pilot, args.paths, (ARGUED, 0.8, 1.0))
                    show(f"pooled pilot share {share:g}, threshold {threshold:g} x 2p(1-p), k {attempts}", rows)
    else:
        pilot = Pilot(args.share, args.threshold, args.attempts, args.pooled)
        title = f"{'pooled ' if pilot.pooled else ''}pilot share {pilot.share:g}, threshold {pilot.threshold:g} x 2p(1-p), k {pilot.attempts}"
        show(title, table(pilot, args.paths))
    print(f"({time.perf_counter() - start:.0f} s, {args.paths} paths per point)")


if __name__ == "__main__":
    main()
