"""configs/glm-fp8-sensitive.yaml: the seed's 160 unchanged, MATH-500 level 5 from the mirror, and every
benchmark the mirror lacks (AIME 2026, GPQA-Diamond, LongBench-v2) named as needing the hub."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from evalpipe.cli.main import main
from evalpipe.config.loader import load_config

REPO = Path(__file__).resolve().parents[1]
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
    for name in ("aime26", "gpqa_diamond", "longbench_v2"):
        assert f"{name}: no {name}/ under" in out and "needs the hub" in out
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
    assert cfg.generation.repeats == 4
    assert cfg.server.kv_cache_dtype == "fp8_e4m3"
    assert cfg.max_tokens_for("aime26") == 65536
    for name in ("ifeval", "ceval", "gsm8k", "live_code_bench"):
        assert cfg.max_tokens_for(name) == seed.max_tokens_for(name)
