"""Measured beside designed: compare.json states, per block the config's ``design:`` names, the discordance the
comparison measured (the A/A pair's, with its interval; the A/B pair's beside it) next to the one the design
assumed and 2p(1−p) at the design's accuracy; when the measured interval lies above the design's value the
audit of the run under test carries a warning naming both and the operating characteristic at the measured
value.

The doctored run: a control and its repeat that disagree on 30 of 200 samples (ψ 0.150) against an argued 0.020,
every control answer right (a measured accuracy of 1.0, at which 2p(1−p) would be 0).
"""

from __future__ import annotations

import random
from pathlib import Path

from helpers.scored_runs import one_stratum_manifest, write_scored_run

from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.audit.checks import check_design
from evalpipe.compare import AAPair, Arms, Bootstrap, GatePolicy, PairedDesign, compare_runs
from evalpipe.config.gates import DesignAssumption
from evalpipe.report.compare_markdown import compare_markdown

SEED = 5
BENCH = "gpqa_diamond"
N = 200


def _compare(tmp_path: Path, aa_flips: int, design: float | None) -> CompareResult:
    manifest = one_stratum_manifest(SEED, {BENCH: [f"g{i:03d}" for i in range(N)]})
    ids = [e.source_id for e in manifest.entries]
    flipped = set(random.Random(2).sample(ids, aa_flips))

    def run(name: str, right: set[str]) -> Path:
        return write_scored_run(
            tmp_path / name, manifest, lambda e: e.source_id in right, output_tokens=lambda e, ok: 100
        )

    everything = set(ids)
    a, b, again = run("a", everything), run("b", everything), run("again", everything - flipped)
    assumed = {BENCH: DesignAssumption(accuracy=0.862, discordance=design, basis="argued")} if design is not None else {}
    gate = GatePolicy(margins=lambda name: 13.0 if name == BENCH else None, assumed=assumed)
    return compare_runs(PairedDesign(Arms(a, b), aa=AAPair(again), gate=gate, bootstrap=Bootstrap(resamples=10)))


def test_a_measured_discordance_above_the_design_is_a_warning_naming_both(tmp_path: Path) -> None:
    result = _compare(tmp_path, 30, 0.020)
    (block,) = result.benchmarks
    check = block.design_check
    assert check is not None and check.source == "A/A" and check.exceeds
    assert check.measured == 0.15 and check.measured_low > 0.02 and check.measured_high > 0.15
    assert check.ab_discordance == 0.0 and check.ab_high is not None and check.ab_high > 0
    # the chance reference is at the design's accuracy, not at the measured 1.0 (where it would be 0)
    assert block.b.score == 1.0 and round(check.chance_discordance, 4) == round(2 * 0.862 * 0.138, 4)
    assert block.operating is not None and block.operating.discordance == 0.15
    (finding,) = check_design(result)
    assert finding.severity == "warn" and finding.code == "discordance_above_design"
    assert finding.benchmark == BENCH
    for said in ("0.150", "0.020", "above the design", "A/A ψ = 0.150", "no regression"):
        assert said in finding.message, said
    md = compare_markdown(result)
    assert "measured A/A discordance 0.150 [" in md and "against the design's 0.020" in md


def test_a_measured_discordance_within_the_design_is_stated_without_a_warning(tmp_path: Path) -> None:
    result = _compare(tmp_path, 4, 0.020)  # 0.020 measured: its interval holds the design's value
    (block,) = result.benchmarks
    assert block.design_check is not None and not block.design_check.exceeds
    assert check_design(result) == []
    assert "within the design" in compare_markdown(result)
    # a block the design assumes nothing for is not checked
    assert _compare(tmp_path / "other", 30, None).benchmarks[0].design_check is None
