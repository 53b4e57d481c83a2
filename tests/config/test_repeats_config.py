"""Config fields of issue 18: generation.repeats, a variant's repeat_of, the paired gates' points."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalpipe.config.models import GateConfig, RunConfig
from evalpipe.evalscope_bridge.task import build_task, evalscope_index, task_repeats
from evalpipe.server.variants import effective_server


def _cfg(**extra: Any) -> RunConfig:
    data: dict[str, Any] = {
        "name": "t",
        "model": {"path": "/m", "served_name": "m"},
        "server": {"kind": "sglang", "kv_cache_dtype": "fp8_e4m3"},
        "benchmarks": [{"name": "gsm8k", "sampling": {"total": 4, "allocation": "uniform"}}],
        **extra,
    }
    return RunConfig.model_validate(data)


def test_repeats_reach_evalscope_only_when_asked(tmp_path) -> None:
    kw = {"api_url": "http://x", "dataset_dir": tmp_path, "subsets": ["main"], "work_dir": tmp_path}
    assert "repeats" not in build_task(_cfg(), "gsm8k", **kw)  # a run recorded before repeats still resumes
    task = build_task(_cfg(generation={"repeats": 4}), "gsm8k", **kw)
    assert task["repeats"] == 4 and task_repeats(task) == 4 and task_repeats({}) == 1
    assert [evalscope_index(2, j, 4) for j in range(4)] == [8, 9, 10, 11]
    with pytest.raises(ValidationError):
        _cfg(generation={"repeats": 0})


VARIANTS = [
    {"name": "fp8", "overrides": {"kv_cache_dtype": "fp8_e4m3"}},
    {"name": "bf16", "overrides": {"kv_cache_dtype": "bfloat16"}},
]


def test_repeat_of_runs_the_named_variants_settings() -> None:
    cfg = _cfg(variants=[*VARIANTS, {"name": "bf16_again", "repeat_of": "bf16"}])
    assert effective_server(cfg, "bf16_again") == effective_server(cfg, "bf16")
    assert effective_server(cfg, "bf16_again").kv_cache_dtype == "bfloat16"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"name": "x", "repeat_of": "nope"}, "'nope' is not another variant"),
        ({"name": "x", "repeat_of": "x"}, "'x' is not another variant"),
        ({"name": "x", "repeat_of": "bf16", "overrides": {"tp_size": 2}}, "no overrides"),
    ],
)
def test_repeat_of_refusals(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _cfg(variants=[*VARIANTS, extra])


def test_first_variant_cannot_be_a_repeat() -> None:
    with pytest.raises(ValidationError, match="the first variant is the one under test"):
        _cfg(variants=[{"name": "again", "repeat_of": "fp8"}, *VARIANTS])


def test_gate_points_per_block() -> None:
    one = GateConfig(non_inferiority_margin_pts=2, max_mde_pts={"gsm8k": 5, "overall": 3})
    assert one.points_for("non_inferiority_margin_pts", "ceval") == 2.0
    assert one.points_for("non_inferiority_margin_pts", "all") == 2.0
    assert one.points_for("max_mde_pts", "gsm8k") == 5.0
    assert one.points_for("max_mde_pts", "all") == 3.0  # compare.json calls the overall block "all"
    assert one.points_for("max_mde_pts", "ceval") is None
    with pytest.raises(ValidationError):
        GateConfig(non_inferiority_margin_pts=-1)


def test_request_seeds_per_attempt_index() -> None:
    """Each EvalScope sample index (position × repeats + attempt) gets its attempt's seed; no run seed, none."""
    from evalpipe.evalscope_bridge.task import generation_config, request_seeds
    from evalpipe.hashing import attempt_seed

    entries = [("main", 0, "a"), ("main", 1, "b")]
    seeds = request_seeds(_cfg(generation={"repeats": 2}), "gsm8k", entries, 2)
    assert seeds == {
        "main": {
            evalscope_index(p, k, 2): attempt_seed(42, "gsm8k", sid, k)
            for _, p, sid in entries
            for k in range(2)
        }
    }
    assert len(set(seeds["main"].values())) == 4
    unseeded = _cfg(generation={"repeats": 2, "seed": None})
    assert request_seeds(unseeded, "gsm8k", entries, 2) is None
    assert "seed" not in generation_config(unseeded, "gsm8k")
