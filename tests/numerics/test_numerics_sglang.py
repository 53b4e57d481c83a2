"""The teacher-forced probe against the fake SGLang, which answers ``/generate`` and chat ``logprobs`` in the
shape live SGLang 0.5.17 did (``fake_sglang/sglang/logprobs.py``): launched by evalpipe's lifecycle, asked through
the recording proxy, read back from the recorded answers, compared.  The fake's BF16 launches answer alike bit
for bit and its FP8 cache moves every position past the first 256-token chunk, as the live servers did, so the
comparison must find the long prompts above the A/A floor and the short ones identical."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR, server_config

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.numerics import NumericsProbe
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.config.numerics import NumericsConfig
from evalpipe.numerics.compare import compare_numerics
from evalpipe.numerics.probe import ProbeTarget, run_probe
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.lifecycle import managed_server

REPO = Path(__file__).resolve().parents[2]


def _probe(tmp_path: Path, name: str, kv: str, cfg: NumericsConfig) -> NumericsProbe:
    (tmp_path / name).mkdir()
    run_cfg = server_config(tmp_path / name, {"kv_cache_dtype": kv})
    rundir = RunDir(tmp_path / name / "run")
    with managed_server(run_cfg, run_cfg.server, rundir, kind=server_kind(run_cfg.server.kind)) as handle:
        return run_probe(ProbeTarget(handle.base_url, rundir.root, "fake-model", api_key=handle.api_key), cfg,
                         base_dir=REPO)  # fmt: skip


def test_teacher_forced_probe_through_the_proxy_against_sglang_shaped_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(FAKE_SGLANG_DIR))
    monkeypatch.setenv("FAKE_SGLANG_STARTUP_S", "0.1")
    cfg = NumericsConfig(ask="teacher_forced", tokenizer="gguf:smollm2", lengths=[128, 1024], prompts_per_cell=2,
                         continuation_tokens=32, edges={"page": 64}, top_k=5)  # fmt: skip
    bf16, again, fp8 = (
        _probe(tmp_path, n, kv, cfg) for n, kv in (("a", "auto"), ("b", "auto"), ("c", "fp8_e4m3"))
    )
    assert all(len(a.forced) == 32 and a.error is None for a in bf16.answers)
    attempts = read_jsonl(tmp_path / "a" / "run" / "numerics" / "requests.jsonl", RequestAttempt)
    assert [a.path for a in attempts] == ["/generate"] * len(bf16.answers) == ["/generate"] * 16
    assert all(a.server_prompt_tokens == a.prompt_tokens for a in bf16.answers)
    block = compare_numerics(fp8, bf16, again, labels=("fp8", "bf16", "bf16 again"))
    assert block.primary == "kl_forced" and block.prompts == 16
    short = next(g for g in block.groups if g.by == "length" and g.name == "128")
    long = next(g for g in block.groups if g.by == "length" and g.name == "1024")
    assert short.identical_ab == short.identical_aa == short.n == 8  # one chunk: nothing read from FP8
    assert long.identical_ab == 0 and long.identical_aa == long.n == 8
    assert long.shift is not None and long.shift.above and long.shift.p_value == 2.0**-8
    page_edge = next(g for g in block.groups if g.by == "placement" and g.name == "page+0")
    assert page_edge.n == 4 and {p.length for p in block.pairs if p.placement == "page+0"} == {128, 1024}
