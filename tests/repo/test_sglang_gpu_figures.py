"""The README's live-SGLang paragraph quotes ``perf/results/sglang_h100_20261206/``: each figure it gives is
read back from the run's own files, so a new run without the README following it (or a README figure without
a run) fails here."""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "perf" / "results" / "sglang_h100_20261206"


def _json(rel: str) -> dict:
    return json.loads((RUN / rel).read_text(encoding="utf-8"))


def _readme() -> str:
    return " ".join((REPO / "README.md").read_text(encoding="utf-8").split())


def test_the_probe_figures_are_the_runs() -> None:
    block = next(b for b in _json("compare.json")["benchmarks"] if b["benchmark"] == "kv_probe")
    noise = block["noise_vs_ab"]
    readme = _readme()
    lost, won = block["b_only"], block["a_only"]  # A is the FP8 arm, B the BF16 control
    assert f"FP8 changed {noise['ab_changed']} of {block['n_pairs']} probe answers ({lost} lost, {won} won" in readme
    assert f"the A/A arm {noise['aa_changed']}" in readme
    assert f"(McNemar p = {noise['p_value']:.4f})" in readme
    flips = "/".join(str(len(row["flips"])) for row in block["by_length"])
    assert f"{flips} at 1k/2k/4k/6k tokens" in readme
    assert f"MDE {block['mde_pts']:.1f} pts" in readme


def test_the_verification_and_speed_figures_are_the_runs() -> None:
    readme = _readme()
    fp8 = _json("kv_fp8/server/verification.json")
    bf16 = _json("kv_bf16/server/verification.json")
    assert fp8["verified"] and bf16["verified"] and fp8["kv_cache"]["fp8_scales"] == "default_1.0"
    assert f"`float8_e4m3fn` ({fp8['kv_cache']['capacity_tokens']:,}" in readme
    assert f"`bfloat16` ({bf16['kv_cache']['capacity_tokens']:,})" in readme
    assert f"served context {fp8['served_context_tokens']:,} tokens" in readme
    speed = _json("speed_compare.json")["workloads"][0]["metrics"]
    out = next(m for m in speed if m["metric"] == "output_throughput")
    assert f"×{out['ratio']:.3f} [{out['ci_low']:.3f}, {out['ci_high']:.3f}]" in readme
    requests = (RUN / "kv_fp8" / "requests.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(x) for x in requests]
    joined = sum(1 for r in rows if r["response_id"] == r["attempt_id"])
    assert f"{joined} of {len(rows)} requests per arm joined" in readme
