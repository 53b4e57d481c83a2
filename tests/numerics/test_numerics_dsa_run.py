"""The committed DSA run (``perf/results/sglang_dsa_h100_20261207``: evalpipe against a live SGLang 0.5.17 on its
DSA path, one H100) read back: what each arm's server said it ran, and the numerics block re-derived from the arms'
recorded ``numerics.json`` equal to the one the run wrote."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.numerics.compare import numerics_for

RUN = Path(__file__).resolve().parents[2] / "perf" / "results" / "sglang_dsa_h100_20261207"
ARMS = ("fp8_flashmla_kv", "tl_bf16", "tl_bf16_again")


def _rounded(value: object) -> object:
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_the_live_servers_ran_the_dsa_kernels_and_layouts_the_reports_name() -> None:
    for arm, kernel, layout in (
        ("fp8_flashmla_kv", "flashmla_kv", "fp8_e4m3 scaled FP8 (656 B), FlashMLA KV prefill/decode"),
        ("tl_bf16", "tilelang", "bfloat16 (1,152 B), TileLang prefill/decode"),
        ("tl_bf16_again", "tilelang", "bfloat16 (1,152 B), TileLang prefill/decode"),
    ):
        info = json.loads((RUN / arm / "server" / "server_info.json").read_text(encoding="utf-8"))
        assert info["attention_backend"] == "dsa" and info["version"] == "0.5.17" and info["page_size"] == 64
        assert info["dsa_prefill_backend"] == info["dsa_decode_backend"] == kernel
        log = (RUN / arm / "server" / "server.log").read_text(encoding="utf-8")
        assert f"prefill={kernel}, decode={kernel}." in log
        report = (RUN / arm / "report.md").read_text(encoding="utf-8")
        assert f"KV layout: {layout}" in report and " raw" not in report
        assert "prefill on 99 of 99 prefills" in report


def test_the_numerics_block_is_re_derived_from_the_recorded_arms(tmp_path: Path) -> None:
    committed = read_model(RUN / "compare.json", CompareResult)
    block = committed.numerics
    assert block is not None and block.ask == "teacher_forced" and block.prompts == 36
    for arm in ARMS:
        (tmp_path / arm).mkdir()
        with gzip.open(RUN / arm / "numerics.json.gz", "rb") as packed:
            (tmp_path / arm / "numerics.json").write_bytes(packed.read())
    shutil.copy(RUN / "compare.json", tmp_path / "compare.json")
    moved = committed.model_copy(
        update={
            "run_a": str(tmp_path / ARMS[0]),
            "run_b": str(tmp_path / ARMS[1]),
            "run_aa": str(tmp_path / ARMS[2]),
        }
    )
    again = numerics_for(moved, fail_above=None)
    assert again is not None
    # the device's Python 3.12 sums floats with compensation, this one's exactly (math.fsum): the last bit may differ
    assert _rounded(again.model_dump()) == _rounded(block.model_dump())
    by_length = {g.name: g for g in block.groups if g.by == "length"}
    assert (
        by_length["1024"].identical_aa == 12 and by_length["4096"].identical_aa == 0
    )  # TileLang beyond index_topk
    assert all(g.shift is not None and g.shift.above for g in block.groups)
