"""configs/glm-fp8-sensitive.yaml: the seed's 160 unchanged, MATH-500 level 5 from the mirror, and every
benchmark the mirror lacks (the competition-maths pool's AIME and HMMT years, GPQA-Diamond, LongBench-v2) named
as needing the hub."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from evalpipe.benchmarks import benchmark
from evalpipe.cli.main import main
from evalpipe.config.loader import load_config

REPO = Path(__file__).resolve().parents[2]
SEED_MANIFEST_SHA256 = "e9800b864da4e99d1e62581cbf9e928b99dcca40e073399f49e0024f3216caba"


def _sample(config: str, shared: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(
            ["sample", str(REPO / "configs" / config), "--dataset-root", str(shared), "--out", str(out)]
        )
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, " ".join(capsys.readouterr().out.split())


def test_sensitive_sample_keeps_the_seed_and_names_what_needs_the_hub(
    shared_datasets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _sample("glm-fp8-sensitive.yaml", shared_datasets, tmp_path / "sens", capsys)
    assert code == 0
    for name in ("aime24", "aime25", "aime26", "hmmt25", "hmmt26", "gpqa_diamond", "longbench_v2"):
        assert f"{name}: no {name}/ under" in out and "needs the hub" in out
    # the generated probe needs no hub: --dataset-root stands in for its local folder, and the note says so
    assert "kv_probe: no kv_probe/ under" in out and "in place of its source.local folder glm-fp8-kv-probe" in out
    code, _ = _sample("glm-fp8.yaml", shared_datasets, tmp_path / "seed", capsys)
    assert code == 0
    seed_bytes = (tmp_path / "seed" / "manifest.json").read_bytes()
    assert hashlib.sha256(seed_bytes).hexdigest() == SEED_MANIFEST_SHA256  # glm-fp8 untouched
    sens = json.loads((tmp_path / "sens" / "manifest.json").read_text())
    seed = json.loads(seed_bytes)
    four = {"ifeval", "ceval", "gsm8k", "live_code_bench"}
    assert [e for e in sens["entries"] if e["benchmark"] in four] == seed["entries"]
    assert [b for b in sens["benchmarks"] if b["benchmark"] in four] == seed["benchmarks"]
    levels = Counter(e["stratum"] for e in sens["entries"] if e["benchmark"] == "math_500")
    assert levels == {"5": 134}  # all of level 5
    assert {b["benchmark"] for b in sens["benchmarks"]} == four | {"math_500"}


def test_sensitive_profile_pairs_fp8_with_bf16_and_gives_the_long_budgets() -> None:
    cfg = load_config(REPO / "configs" / "glm-fp8-sensitive.yaml")
    seed = load_config(REPO / "configs" / "glm-fp8.yaml")
    assert [b.model_dump() for b in cfg.benchmarks[:4]] == [b.model_dump() for b in seed.benchmarks]
    assert [(v.name, v.overrides) for v in cfg.variants] == [
        ("fp8_raw", {}),
        ("bf16_control", {"kv_cache_dtype": "bfloat16"}),
        ("bf16_control_again", {}),
    ]
    assert [v.repeat_of for v in cfg.variants] == [None, None, "bf16_control"]
    # the optimiser's design: one attempt (Cochran's k* = 0 under the assumed noise), competition maths pooled,
    # the sequential rule at the margin on the pool and GPQA-Diamond
    assert cfg.generation.repeats == 1
    assert cfg.pools == {"competition_math": ["aime24", "aime25", "aime26", "hmmt25", "hmmt26"]}
    assert cfg.generation.sequential is not None
    assert (cfg.generation.sequential.alpha, cfg.generation.sequential.sequential_share) == (0.025, 1.0)
    # the gate designed for both error rates (docs/benchmarks.md "Sensitive sign-off profile",
    # tests/plan/test_plan_operating.py)
    assert cfg.gates.non_inferiority_margin_pts == {
        "competition_math": 13.0,
        "gpqa_diamond": 13.0,
        "kv_probe": 9.0,
    }
    assert cfg.gates.must_catch_drop_pts == {"competition_math": 18.6, "gpqa_diamond": 15.0, "kv_probe": 13.0}
    assert set(cfg.design) == {"competition_math", "gpqa_diamond", "kv_probe"}
    assert cfg.server.kv_cache_dtype == "fp8_e4m3"
    for name in cfg.pools["competition_math"]:
        assert cfg.max_tokens_for(name) == 65536
    for name in ("ifeval", "ceval", "gsm8k", "live_code_bench"):
        assert cfg.max_tokens_for(name) == seed.max_tokens_for(name)


def test_sensitive_design_is_planned_without_data_and_sees_the_22671_drops() -> None:
    """The pool and GPQA-Diamond are planned from their modules' populations (no hub): AIME 30 a year and
    HMMT February's published counts, 153 problems; at #22671's BF16 scores under the assumed noise the new
    design sees both drops with power >= 0.9 (the pool >= 0.99, above the 120 problems without HMMT Feb 2026),
    the old 30 x 4 AIME only half the time (the before/after table of docs/benchmarks.md)."""
    from evalpipe.benchmarks.competition_math import HMMT_POPULATION
    from evalpipe.plan.mde import plan_benchmark, pool_input, population_only
    from evalpipe.stats.power import assumed_noise, drop_power

    cfg = load_config(REPO / "configs" / "glm-fp8-sensitive.yaml")
    members = cfg.pools["competition_math"]
    inputs = [population_only(cfg, benchmark(name), None) for name in [*members, "gpqa_diamond"]]
    assert all(x is not None for x in inputs)
    known = [x for x in inputs if x is not None]
    pool = pool_input("competition_math", members, list(known))
    n_pool = 3 * 30 + HMMT_POPULATION[2025] + HMMT_POPULATION[2026]  # AIME 2024-2026, HMMT Feb 2025 and 2026
    assert n_pool == 153
    assert not isinstance(pool, str) and (pool.n_now, pool.population) == (n_pool, n_pool)
    plan = plan_benchmark(cfg, pool, None, 15.0, None, False)
    assert plan.cochran is not None and plan.cochran.repeats == 1 == plan.repeats
    assert [d.n for d in plan.designs] == [n_pool]  # the whole population already: nothing larger to propose
    assert plan.designs[0].worst_tokens == n_pool * 1 * 3 * 65536
    aime, gpqa = assumed_noise(0.953), assumed_noise(0.862)
    assert drop_power(30, 0.186, aime, 4) < 0.55 < 0.95 < drop_power(120, 0.186, aime, 1)
    assert drop_power(120, 0.186, aime, 1) < 0.99 < drop_power(n_pool, 0.186, aime, 1)
    assert drop_power(198, 0.150, gpqa, 1) > 0.9

    # the old design (4 attempts): the rule proposes the same 198 GPQA questions at one attempt, a quarter of
    # the tokens
    old = cfg.model_copy(update={"generation": cfg.generation.model_copy(update={"repeats": 4})})
    gpqa_plan = plan_benchmark(old, known[-1], None, 15.0, None, False)
    current, by_rule = gpqa_plan.designs[0], gpqa_plan.designs[-1]
    assert (current.n, current.repeats) == (198, 4)
    assert (by_rule.label, by_rule.n, by_rule.repeats) == ("proposed at Cochran's k = 1", 198, 1)
    assert by_rule.worst_tokens * 4 == current.worst_tokens
