"""``evalpipe plan`` without the data (the module's population) and with the cost of each design.

The population path must not load any data (a hub load is what fails on a host without network); a plan
that does need its data and cannot get it is reported on its own line while the others are planned.  The
cost lines use RUN's measured tokens per attempt, else the budget as an upper bound.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers.config import entry, write_config
from helpers.scored_runs import one_stratum_manifest, write_scored_run

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.manifest import (
    Manifest,
)
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.benchmarks import benchmark
from evalpipe.cli.main import main
from evalpipe.config.loader import load_config
from evalpipe.errors import DataError
from evalpipe.plan import inputs as plan_inputs_module
from evalpipe.plan import mde as mde_plan
from evalpipe.plan.mde import PlanInput, plan_benchmark, token_cost
from evalpipe.report.plan import plan_lines
from evalpipe.samplers.loading import load_benchmark
from evalpipe.stats.power import assumed_noise, drop_power


def _cli(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path / "c.yaml",
        benchmarks=[
            entry("gpqa_diamond", total=198),
            entry("aime26", total=30),
            {"name": "ceval", "sampling": {"stratify_by": "subject", "per_stratum": 1}},
        ],
        generation={"max_tokens": {"gpqa_diamond": 32768, "aime26": 65536}},
    )


def test_plans_from_the_module_population_without_loading_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No network: gpqa_diamond and aime26 (total plans) are planned from N = 198 and N = 30 without a load;
    ceval's per-subject plan needs its data, whose load fails — one line, and the command still exits 0."""
    loaded: list[str] = []

    def refuse(cfg, dataset_root, run):  # type: ignore[no-untyped-def]  # stands in for the hub load
        loaded.extend(b.name for b in cfg.benchmarks)
        raise DataError("hub dataset evalscope/ceval: could not load (no network)")

    monkeypatch.setattr(plan_inputs_module, "manifest_for", refuse)
    assert _cli(["plan", str(_config(tmp_path)), "--mde", "15"]) == 0
    text = capsys.readouterr().out
    assert loaded == ["ceval"]
    assert "gpqa_diamond: n now 198 of N = 198 (N from the benchmark module; data not loaded" in text
    assert "aime26: n now 30 of N = 30 (N from the benchmark module" in text
    assert "ceval: not planned — its plan needs the data, which could not be loaded (hub dataset" in text
    noise = assumed_noise(0.5)
    power = drop_power(198, 0.15, noise, 1)
    assert (
        f"current design (1 arm): 198 samples × 1 attempt, power {power:.2f} at a 15-pt drop; "
        f"at most {198 * 32768 / 1e6:.1f} M output tokens (the budget; no run measured)" in text
    )


def test_a_local_copy_is_read_not_the_module_population(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --dataset-root the local files decide N (they may be a subset of the published split)."""
    cfg = load_config(_config(tmp_path))
    assert mde_plan.population_only(cfg, benchmark("gpqa_diamond"), tmp_path) is None
    known = mde_plan.population_only(cfg, benchmark("gpqa_diamond"), None)
    assert known is not None and (known.n_now, known.population) == (198, 198)
    assert mde_plan.population_only(cfg, benchmark("ceval"), None) is None  # per stratum: the strata decide n


@pytest.mark.parametrize("name", ["gsm8k", "ifeval", "math_500"])
def test_module_population_matches_the_published_split(
    name: str, shared_datasets: Path, tmp_path: Path
) -> None:
    cfg = load_config(write_config(tmp_path / "c.yaml", benchmarks=[entry(name, total=1)]))
    assert (
        load_benchmark(cfg, name, shared_datasets).eval.records.__len__() == benchmark(name).meta.population
    )


def _run_with_tokens(root: Path, n: int) -> tuple[Path, Manifest]:
    manifest = one_stratum_manifest(1, {"aime26": [f"p{i:02d}" for i in range(n)]}, kind="hub")
    rng = random.Random(2)
    write_scored_run(
        root,
        manifest,
        lambda e: True,
        output_tokens=lambda e, ok: rng.choice([10000, 20000]),
        input_tokens=200,
        reasoning_tokens=9000,
    )
    return root, manifest


def test_cost_from_a_run_and_the_designs(tmp_path: Path) -> None:
    run, manifest = _run_with_tokens(tmp_path / "run", 30)
    cfg = load_config(_config(tmp_path))
    cost = token_cost(cfg, run, manifest, "aime26")
    mean = sum(r.output_tokens or 0 for r in read_jsonl(RunDir(run).outcomes, OutcomeRow)) / 30
    assert cost.measured and cost.output_per_attempt == pytest.approx(mean)
    assert (cost.reasoning_per_attempt, cost.input_per_sample, cost.budget) == (9000.0, 200.0, 65536)
    assert f"mean {mean:.0f} output tokens per attempt (9000 of them reasoning)" in cost.basis

    target = PlanInput(benchmark="aime26", n_now=30, population=90, plan=manifest.benchmarks[0].plan)
    plan = plan_benchmark(cfg, target, manifest, 15.0, run, write=False)
    current, proposed = plan.designs
    assert (current.n, current.repeats) == (30, 1)
    assert current.expected_tokens == pytest.approx(30 * mean) and current.worst_tokens == 30 * 65536
    assert current.power == pytest.approx(drop_power(30, 0.15, plan.noise, 1))
    # nothing reaches 15 pts within 90 at this noise: the whole population is proposed, with its power
    assert plan.needed.reachable is False and (proposed.n, proposed.label) == (
        90,
        "proposed: the whole population",
    )
    assert (
        proposed.power == pytest.approx(drop_power(90, 0.15, plan.noise, 1))
        and proposed.power > current.power
    )
    text = "\n".join(plan_lines(plan))
    assert "output tokens expected" in text
    # no A/A noise measured: the assumed noise has no within-sample part, so Cochran's k* is 0 whatever the
    # costs — one attempt, which the config already asks for (no design at another k is added)
    assert plan.cochran is not None and (plan.cochran.k_star, plan.cochran.repeats) == (0.0, 1)
    assert "no within-sample part (τ² = 0)" in text and len(plan.designs) == 2


def test_a_pool_is_planned_as_one_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """AIME 2025 and 2026 pooled: n now 60 of N = 60 from the two modules' populations, its own MDE and cost;
    a pool whose member could not be planned says so."""

    def refuse(cfg, dataset_root, run):  # type: ignore[no-untyped-def]  # stands in for the hub load
        raise DataError("hub dataset evalscope/ceval: could not load (no network)")

    monkeypatch.setattr(plan_inputs_module, "manifest_for", refuse)
    path = write_config(
        tmp_path / "c.yaml",
        benchmarks=[
            entry("aime25", total=30),
            entry("aime26", total=30),
            {"name": "ceval", "sampling": {"stratify_by": "subject", "per_stratum": 1}},
            entry("gsm8k", total=50),
        ],
        pools={"competition_math": ["aime25", "aime26"], "mixed": ["ceval", "gsm8k"]},
    )
    assert _cli(["plan", str(path), "--mde", "20"]) == 0
    text = capsys.readouterr().out
    assert "competition_math: n now 60 of N = 60 (pool of aime25, aime26; N from the benchmark module" in text
    noise = assumed_noise(0.5)
    power = drop_power(60, 0.20, noise, 1)
    assert f"current design (1 arm): 60 samples × 1 attempt, power {power:.2f} at a 20-pt drop" in text
    assert "mixed (pool): not planned — ceval could not be planned" in text


def test_gpu_hours_from_the_runs_speed_benchmark(tmp_path: Path) -> None:
    """With a serving benchmark in RUN (speed.json) and its GPUs (provenance.json), each design's tokens are
    also GPU-hours: tokens ÷ the mean measured output rate per GPU; a timed-out round is not averaged in."""
    from datetime import UTC, datetime

    from evalpipe.artifacts import write_model
    from evalpipe.artifacts.schema.provenance import GpuInfo, Provenance
    from evalpipe.artifacts.schema.speed import (
        ClientInfo,
        LatencyStats,
        RoundRecord,
        SpeedArtifact,
        WorkloadRounds,
    )
    from evalpipe.config.speed import SpeedConfig, SpeedWorkload

    run, manifest = _run_with_tokens(tmp_path / "run", 30)
    cfg = load_config(_config(tmp_path))
    assert token_cost(cfg, run, manifest, "aime26").tokens_per_gpu_s is None  # no speed benchmark: none
    now = datetime.now(UTC)
    rounds = [
        RoundRecord(
            workload="w",
            round_index=i,
            seed=i,
            started_at=now,
            finished_at=now,
            client_exit_code=0 if i < 2 else None,
            timed_out=i == 2,
            requested=4,
            completed=4 if i < 2 else 0,
            output_throughput=tput,
            input_tokens=128 if i < 2 else None,
            ttft_ms=LatencyStats(median=ttft),
            percentile_method="nearest-rank",
        )
        for i, (tput, ttft) in enumerate([(1000.0, 100.0), (1400.0, 200.0), (50.0, 5.0)])
    ]
    workload = SpeedWorkload(input_len=32, output_len=16, concurrency=1)
    speed = SpeedArtifact(
        variant="control",
        server_url="http://127.0.0.1:1",
        served_model="m",
        client=ClientInfo(name="evalscope", program="evalscope perf", version="1", argv=[]),
        tokenizer=None,
        config=SpeedConfig(workloads=[workload], rounds=3),
        schedule="single",
        workloads=[WorkloadRounds(workload=workload, name="w", rounds=rounds)],
    )
    write_model(RunDir(run).speed_json, speed)
    write_model(
        RunDir(run).provenance,
        Provenance(
            evalpipe_version="0",
            host="h",
            python="3.11",
            platform="linux",
            started_at=now.isoformat(),
            gpus=[GpuInfo(index=i, name="H100") for i in range(4)],
        ),
    )
    cost = token_cost(cfg, run, manifest, "aime26")
    assert cost.tokens_per_gpu_s == pytest.approx(1200.0 / 4)  # (1000 + 1400) / 2 over 4 GPUs
    assert (
        cost.rate_basis is not None and "300 output tokens/s per GPU (1200 over 4 GPU(s)" in cost.rate_basis
    )
    target = PlanInput(benchmark="aime26", n_now=30, population=90, plan=manifest.benchmarks[0].plan)
    plan = plan_benchmark(cfg, target, manifest, 15.0, run, write=False)
    current = plan.designs[0]
    assert current.gpu_hours_expected == pytest.approx(current.expected_tokens / 300.0 / 3600.0)
    assert current.gpu_hours_worst == pytest.approx(current.worst_tokens / 300.0 / 3600.0)
    text = "\n".join(plan_lines(plan))
    assert f"{current.gpu_hours_expected:.3g} GPU-hours expected" in text and "  GPU time: " in text
    # the prefill's rate: concurrency 1 × 32 prompt tokens per request / median TTFT (0.1 s, 0.2 s) = 320 and
    # 160 tokens/s, their mean over 4 GPUs; the timed-out round is not averaged in
    assert cost.prefill_per_gpu_s == pytest.approx(240.0 / 4)
    assert cost.prefill_basis is not None and "60 prompt tokens/s per GPU of prefill" in cost.prefill_basis
    assert "  GPU time of the prefill: " in text
    assert cost.input_per_sample == 200  # the run's mean prompt
    prompt = 200 * current.n * current.repeats * plan.arms
    assert f"{prompt / 60.0 / 3600.0:.3g} GPU-hours of prefill beside" in text


def test_the_operating_characteristic_under_the_discordance_a_paired_run_measured(tmp_path: Path) -> None:
    """``plan --from RUN``: the gated block's OC under the A/B discordance RUN's compare.json measured, beside
    2p(1-p) at RUN's control accuracy; tokens from RUN's control."""
    from evalpipe.compare import Arms, GatePolicy, PairedDesign, compare_runs
    from evalpipe.plan.operating import plan_operating_lines
    from evalpipe.run.compare_files import write_compare

    manifest = one_stratum_manifest(1, {"aime26": [f"p{i:02d}" for i in range(30)]}, kind="hub")
    root = tmp_path / "paired"
    right = {f"p{i:02d}" for i in range(24)}
    write_scored_run(
        root / "a",
        manifest,
        lambda e: e.source_id in right - {"p00", "p01"},
        output_tokens=lambda e, ok: 1000,
    )
    write_scored_run(root / "b", manifest, lambda e: e.source_id in right, output_tokens=lambda e, ok: 1000)
    write_compare(compare_runs(PairedDesign(Arms(root / "a", root / "b"), gate=GatePolicy(margins=lambda _b: 10.0))), root)
    cfg_path = write_config(
        tmp_path / "c.yaml",
        benchmarks=[entry("aime26", total=30)],
        generation={"max_tokens": {"aime26": 65536}},
        gates={"non_inferiority_margin_pts": {"aime26": 10}, "must_catch_drop_pts": {"aime26": 20}},
    )
    cfg = load_config(cfg_path)
    target = PlanInput(benchmark="aime26", n_now=30, population=90, plan=manifest.benchmarks[0].plan)
    text = "\n".join(plan_operating_lines(cfg, [target], manifest, root))
    assert "ψ 0.067 measured A/B: " in text  # 2 of 30 discordant
    assert "ψ 0.320 2p(1-p): 2p(1-p) at accuracy 0.800 (RUN's control accuracy)" in text
    assert "mean 1000 output tokens per attempt" in text
    assert "sign-off (1 gated blocks;" in text and "    fixed, measured A/B: P(pass | no regression)" in text
