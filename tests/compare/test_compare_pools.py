"""Config ``pools:``: benchmarks judged as one paired comparison in compare.json (members keep their blocks).

Synthetic runs over a synthetic two-benchmark manifest (no dataset): the pool block is the paired
comparison of the members' samples together, judged against the pool's own margin (and sequentially with
generation.sequential), and the non-inferiority gate reads it by the pool's name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.config import config_data, entry
from helpers.scored_runs import one_stratum_manifest, write_scored_run
from pydantic import ValidationError

from evalpipe.artifacts.schema.manifest import (
    Manifest,
)
from evalpipe.audit.gates import paired_gates
from evalpipe.compare import Arms, GatePolicy, PairedDesign, compare_runs
from evalpipe.config.models import GateConfig, RunConfig, SequentialConfig
from evalpipe.report.compare_markdown import compare_markdown
from evalpipe.stats.paired import paired_difference
from evalpipe.words.compare import verdict_sentence

SEED = 3
SIZES = {"aime25": 30, "aime26": 30, "gsm8k": 40}


def _manifest() -> Manifest:
    return one_stratum_manifest(
        SEED, {bench: [f"{bench}-{i}" for i in range(n)] for bench, n in SIZES.items()}
    )


def _run(root: Path, manifest: Manifest, wrong: set[str]) -> Path:
    return write_scored_run(
        root, manifest, lambda e: e.source_id not in wrong, output_tokens=lambda e, ok: 500
    )


def _pair(tmp_path: Path) -> tuple[Path, Path, Manifest]:
    """Control wrong on 6 of each AIME year; the test arm loses 3 more on aime25 and 1 on aime26."""
    manifest = _manifest()
    control_wrong = {f"aime25-{i}" for i in range(6)} | {f"aime26-{i}" for i in range(6)}
    test_wrong = control_wrong | {"aime25-10", "aime25-11", "aime25-12", "aime26-20"}
    return _run(tmp_path / "a", manifest, test_wrong), _run(tmp_path / "b", manifest, control_wrong), manifest


def test_pool_block_is_the_members_together(tmp_path: Path) -> None:
    a, b, manifest = _pair(tmp_path)
    pools = {"competition_math": ["aime25", "aime26"]}
    gate = GatePolicy(
        margins=lambda block: 10.0 if block == "competition_math" else None, pools=pools,
        sequential=SequentialConfig(),
    )  # fmt: skip
    result = compare_runs(PairedDesign(Arms(a, b), gate=gate))
    (pool,) = result.pools
    assert (pool.benchmark, pool.members, pool.n_pairs) == ("competition_math", ["aime25", "aime26"], 60)
    assert (pool.a.correct, pool.b.correct, pool.b_only, pool.a_only) == (44, 48, 4, 0)
    keys = [e for e in manifest.entries if e.benchmark in ("aime25", "aime26")]
    test = [[0.0] if e.source_id in {"aime25-10", "aime25-11", "aime25-12", "aime26-20"} or
            e.source_id.split("-")[1] in {str(i) for i in range(6)} else [1.0] for e in keys]  # fmt: skip
    control = [[0.0] if e.source_id.split("-")[1] in {str(i) for i in range(6)} else [1.0] for e in keys]
    expected = paired_difference(test, control)
    assert (pool.paired_ci_low, pool.paired_ci_high) == pytest.approx(expected.interval)
    assert pool.non_inferiority is not None and pool.non_inferiority.margin_pts == 10.0
    assert pool.sequential is not None and pool.sequential.units_available == 60
    by_name = {blk.benchmark: blk for blk in result.benchmarks}
    assert (by_name["aime25"].b_only, by_name["aime26"].b_only) == (3, 1)  # the members keep their lines
    assert by_name["aime25"].non_inferiority is None  # their margin is not the pool's
    assert "| competition_math |" in compare_markdown(result)
    plain = compare_runs(PairedDesign(Arms(a, b)))
    assert plain.pools == [] and plain.benchmarks == [
        blk.model_copy(update={"sequential": None}) for blk in result.benchmarks
    ]


def test_gate_judges_the_pool_by_name(tmp_path: Path) -> None:
    a, b, _ = _pair(tmp_path)
    gates = GateConfig(non_inferiority_margin_pts={"competition_math": 10.0})
    policy = GatePolicy(
        margins=lambda block: gates.points_for("non_inferiority_margin_pts", block),
        pools={"competition_math": ["aime25", "aime26"]},
    )
    result = compare_runs(PairedDesign(Arms(a, b), gate=policy))
    (gate,) = paired_gates(gates, result, under_test=True)
    assert gate.benchmark == "competition_math" and gate.threshold == 10.0
    assert result.pools[0].non_inferiority is not None
    assert gate.passed == (result.pools[0].non_inferiority.verdict == "non-inferior")
    assert gate.message == f"competition_math: {verdict_sentence(result.pools[0].non_inferiority)}"


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        ({"math": ["aime25", "aime24"]}, "not configured: aime24"),
        ({"math": ["aime25"]}, "at least two distinct"),
        ({"math": ["aime25", "aime25"]}, "at least two distinct"),
        ({"gsm8k": ["aime25", "aime26"]}, "already a benchmark"),
        ({"m1": ["aime25", "aime26"], "m2": ["aime26", "gsm8k"]}, "one pool at most: aime26"),
    ],
)
def test_config_refuses_bad_pools(pools: dict[str, list[str]], message: str) -> None:
    benchmarks = [entry("aime25", total=30), entry("aime26", total=30), entry("gsm8k", total=40)]
    with pytest.raises(ValidationError, match=message):
        RunConfig.model_validate(config_data(benchmarks=benchmarks, pools=pools))
    ok = RunConfig.model_validate(config_data(benchmarks=benchmarks, pools={"math": ["aime25", "aime26"]}))
    assert ok.pools == {"math": ["aime25", "aime26"]}
