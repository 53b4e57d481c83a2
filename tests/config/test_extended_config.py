"""configs/glm-fp8-extended.yaml: the seed's 160 unchanged, MATH-500 10 per level, and LongBench-v2 named as
needing the hub when sampled from a mirror that lacks it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from evalpipe.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def _sample(config: str, shared: Path, out: Path, capsys) -> tuple[int, str]:
    try:
        code = main(
            ["sample", str(REPO / "configs" / config), "--dataset-root", str(shared), "--out", str(out)]
        )
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().out


def test_extended_sample_keeps_the_seed_entries_and_names_the_hub_benchmark(
    shared_datasets: Path, tmp_path: Path, capsys
) -> None:
    code, out = _sample("glm-fp8-extended.yaml", shared_datasets, tmp_path / "ext", capsys)
    assert code == 0
    assert "longbench_v2: no longbench_v2/ under" in " ".join(out.split()) and "needs the hub" in out
    code, _ = _sample("glm-fp8.yaml", shared_datasets, tmp_path / "seed", capsys)
    assert code == 0
    ext = json.loads((tmp_path / "ext" / "manifest.json").read_text())
    seed = json.loads((tmp_path / "seed" / "manifest.json").read_text())
    four = {"ifeval", "ceval", "gsm8k", "live_code_bench"}
    assert [e for e in ext["entries"] if e["benchmark"] in four] == seed["entries"]
    assert [b for b in ext["benchmarks"] if b["benchmark"] in four] == seed["benchmarks"]
    levels = Counter(e["stratum"] for e in ext["entries"] if e["benchmark"] == "math_500")
    assert levels == {str(n): 10 for n in range(1, 6)}
    assert "longbench_v2" not in {b["benchmark"] for b in ext["benchmarks"]}
    # the run directory's config.yaml records what was sampled
    assert "name: longbench_v2" not in (tmp_path / "ext" / "config.yaml").read_text()
