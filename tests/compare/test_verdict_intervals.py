"""Every interval printed beside a verdict is the one that decided it: over random paired runs (sizes, accuracies,
discordances, drops, margins, fixed or sequential designs), the non-inferiority cell of compare.md's table, the
console's verdict line and the explorer's statistics row each print a verdict and an interval, and the verdict
reads off that interval — non-inferior ⇔ lower bound > −margin, inferior ⇔ upper bound < −margin, else
inconclusive.  The by-length table prints the interval its "behind" sentence tests: the sentence names the first
length whose printed interval lies wholly below 0, or none when none does."""

from __future__ import annotations

import random
import re
from pathlib import Path

from helpers.scored_runs import one_stratum_manifest, write_scored_run

from evalpipe.artifacts.schema.compare import CompareResult, PairedBenchmark
from evalpipe.compare import Arms, GatePolicy, PairedDesign, compare_runs
from evalpipe.config.models import SequentialConfig
from evalpipe.explore.build import _stats
from evalpipe.report.compare_markdown import _by_length_lines, compare_markdown
from evalpipe.words.compare import verdict_sentence

TRIALS = 24
CELL = re.compile(r"^(non-inferior|inferior|inconclusive) \[([+-][0-9.]+), ([+-][0-9.]+)\] \((.+)\)$")
SENTENCE = re.compile(r"(?:in|not rejected) \[([+-][0-9.]+), ([+-][0-9.]+)\] pts")


def _reads_off(verdict: str, low: float, high: float, margin: float) -> bool:
    if verdict == "non-inferior":
        return low > -margin
    if verdict == "inferior":
        return high < -margin
    return not (low > -margin) and not (high < -margin)


def _runs(tmp_path: Path, rng: random.Random) -> tuple[Path, Path]:
    sizes = {bench: rng.randint(8, 120) for bench in ("aime", "gpqa")}
    manifest = one_stratum_manifest(
        rng.randint(1, 10**6), {b: [f"{b}{i:03d}" for i in range(n)] for b, n in sizes.items()}
    )
    accuracy, churn, drop = rng.uniform(0.5, 0.95), rng.uniform(0.0, 0.4), rng.choice([0.0, 0.0, 0.1, 0.3])
    control: set[str] = set()
    test: set[str] = set()
    for e in manifest.entries:
        right = rng.random() < accuracy
        control.add(e.source_id) if right else None
        flip = rng.random() < churn / 2 + (drop if right else 0.0)
        if right != flip:
            test.add(e.source_id)
    a = write_scored_run(
        tmp_path / "a", manifest, lambda e: e.source_id in test, output_tokens=lambda e, ok: 10
    )
    b = write_scored_run(
        tmp_path / "b", manifest, lambda e: e.source_id in control, output_tokens=lambda e, ok: 10
    )
    return a, b


def test_every_printed_verdict_reads_off_the_interval_printed_beside_it(tmp_path: Path) -> None:
    rng = random.Random(20261207)
    seen: set[str] = set()
    for trial in range(TRIALS):
        a, b = _runs(tmp_path / str(trial), rng)
        margin = rng.choice([3.0, 5.0, 10.0, 20.0])
        share = rng.choice([None, 0.5, 1.0])
        sequential = None if share is None else SequentialConfig(alpha=0.05, sequential_share=share)
        gate = GatePolicy(margins=lambda _b, m=margin: m, sequential=sequential)
        result = compare_runs(PairedDesign(Arms(a, b, "A", "B"), gate=gate))
        md = compare_markdown(result)
        blocks = [*result.benchmarks, *([result.overall] if result.overall else [])]
        rows = {
            line.split(" | ")[0].lstrip("| "): line.split(" | ")
            for line in md.splitlines()
            if line.startswith("| ")
        }
        for block in blocks:
            ni = block.non_inferiority
            assert ni is not None and ni.margin_pts == margin
            # compare.md's table: the verdict's column holds the verdict and its own interval, named
            cell = CELL.match(rows[block.benchmark][7])
            assert cell is not None, rows[block.benchmark]
            verdict, low, high = cell.group(1), float(cell.group(2)), float(cell.group(3))
            assert verdict == ni.verdict and _reads_off(verdict, low, high, margin), (trial, cell.group(0))
            assert cell.group(4).startswith(("fixed look at z* = ", "margins not rejected", "final look"))
            # the console's line (and compare.md's note): the verdict's sentence carries the same interval
            said = SENTENCE.search(verdict_sentence(ni))
            assert said is not None and (float(said.group(1)), float(said.group(2))) == (low, high)
            assert verdict_sentence(ni).startswith(verdict)
            # the explorer's statistics row: the same cell; its other interval is labelled descriptive
            stats = _stats(block, "A", "B")
            assert stats.verdict == cell.group(0) and stats.ci_label.endswith("descriptive")
            seen.add(verdict)
    assert seen == {"non-inferior", "inferior", "inconclusive"}  # the trials reach every verdict


def _length(length: str, low: float, high: float, paired: bool) -> PairedBenchmark:
    ci = {"paired_ci_low": low, "paired_ci_high": high} if paired else {}
    return PairedBenchmark.model_construct(
        benchmark=f"kv_probe {length}", length=length, difference=(low + high) / 2, diff_ci_low=low - 0.05,
        diff_ci_high=high + 0.05, flips=[], n_pairs=30, a=_Counts(), b=_Counts(), **ci,
    )  # fmt: skip


class _Counts:
    correct, scored = 10, 30


def test_the_length_sentence_tests_the_interval_its_table_prints() -> None:
    """The by-length table and its sentence over random intervals: the bootstrap interval (set wider here)
    is never the one printed where a Bonett–Price interval decides."""
    rng = random.Random(7)
    for _ in range(200):
        lengths = [
            _length(str(512 * 2**i), low, low + rng.uniform(0.01, 0.4), rng.random() < 0.8)
            for i, low in enumerate(rng.uniform(-0.5, 0.1) for _ in range(rng.randint(1, 5)))
        ]
        block = PairedBenchmark.model_construct(
            benchmark="kv_probe", by_length=lengths, by_placement=[], flips=[]
        )
        md = _by_length_lines(CompareResult.model_construct(benchmarks=[block], label_a="A", label_b="B"))
        table = [x.split(" | ") for x in md if x.startswith("| kv_probe | ")]
        printed = {row[1]: [float(v) for v in re.findall(r"[+-][0-9.]+", row[6])] for row in table}
        behind = [length for length, (_, high) in printed.items() if high < 0]
        sentence = next(x for x in md if x.startswith("- kv_probe: "))
        if behind:
            assert f"first falls behind at length {behind[0]} " in sentence, (printed, sentence)
        else:
            assert "falls behind" not in sentence, (printed, sentence)
