"""What a live SGLang 0.5.17 answered on the DSA attention path (``tests/fixtures/sglang-0.5.17-dsa-live/``: one
H100, 2026-12-07, a 4-layer GlmMoeDsaForCausalLM), read by verification: the kernels the log names, the KV row
the pool's size shows (BF16 1,152 B; FlashMLA-KV's scaled FP8 656 B — never "raw"), the page size, the
dense-prefill threshold; a configuration that asked for the raw TileLang layout and got another is a mismatch."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fake_sglang.support import server_config

from evalpipe.audit.checks import check_fp8_scales
from evalpipe.server.kinds.sglang.dsa_facts import dsa_facts, row_layout
from evalpipe.server.verify import mismatches, verify

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "tests" / "fixtures" / "sglang-0.5.17-dsa-live"
MODEL_CONFIG = ROOT / "tools" / "gpu" / "sglang" / "glm-dsa-tiny" / "config.json"
#: The live launches' flags beside the arm's own (cmd-<arm>.txt), as an evalpipe config passes them.
LIVE_ARGS = [
    "--load-format", "dummy", "--mem-fraction-static", "0.35", "--max-total-tokens", "131072",
    "--max-running-requests", "8", "--disable-cuda-graph", "--disable-radix-cache", "--sampling-backend",
    "pytorch", "--grammar-backend", "none", "--enable-metrics", "--random-seed", "1234", "--log-level", "info",
]  # fmt: skip


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "glm_dsa_tiny"
    model.mkdir(exist_ok=True)
    shutil.copyfile(MODEL_CONFIG, model / "config.json")
    return model


def _info(arm: str, model: Path) -> dict[str, Any]:
    """The live ``/server_info`` with its model path moved to ``model`` (the host's /tmp/glm_dsa_tiny)."""
    info = json.loads((LIVE / f"server_info-{arm}.json").read_text(encoding="utf-8"))
    for state in [info, *info["internal_states"]]:
        state["model_path"] = str(model)
    return info


def _config(tmp_path: Path, model: Path, kv: str, **settings: str) -> Any:
    server = {"attention_backend": "dsa", **settings, "kv_cache_dtype": kv, "extra_args": LIVE_ARGS}
    return server_config(
        tmp_path, server, model={"path": str(model), "served_name": "glm-dsa-tiny"}, model_dir=False
    )


@pytest.mark.parametrize(
    ("arm", "kv", "settings", "layout", "row", "kernels"),
    [
        ("bf16_tilelang", "auto", {"dsa_prefill_backend": "tilelang", "dsa_decode_backend": "tilelang"},
         "bf16", 1152, ("tilelang", "tilelang")),
        ("fp8_flashmla_kv", "fp8_e4m3", {}, "scaled", 656, ("flashmla_kv", "flashmla_kv")),
    ],
)  # fmt: skip
def test_each_live_arm_states_its_kernels_row_page_and_threshold(
    tmp_path: Path,
    arm: str,
    kv: str,
    settings: dict[str, str],
    layout: str,
    row: int,
    kernels: tuple[str, str],
) -> None:
    model = _model(tmp_path)
    cfg = _config(tmp_path, model, kv, **settings)
    v = verify(cfg, cfg.server, _info(arm, model), base_url="http://h", log_path=LIVE / f"server-{arm}.log",
               fresh_start=True)  # fmt: skip
    assert v.verified, mismatches(v)
    facts = v.sparse_attention
    assert facts is not None and (facts.prefill_kernel, facts.decode_kernel) == kernels
    assert facts.kv_layout == layout and abs(facts.kv_bytes_per_token_layer - row) < 2
    assert facts.page_size == 64 and facts.index_topk == 2048
    assert (facts.dense_prefill_threshold, facts.dense_prefill_threshold_source) == (0, "server log")
    assert "131,136 slots × 4 layers" in facts.kv_bytes_evidence
    if layout == "scaled":
        assert "KV layout: fp8_e4m3 scaled FP8 (656 B), FlashMLA KV prefill/decode" in v.description
        assert " raw" not in v.description
    else:
        assert "KV layout: bfloat16 (1,152 B), TileLang prefill/decode; page size 64" in v.description


def test_the_logs_kv_size_alone_tells_the_rows_apart(tmp_path: Path) -> None:
    """Without ``memory_usage`` (2 decimals of GB instead of 3): 0.63 GB is BF16, 0.38 GB the scaled row."""
    model = _model(tmp_path)
    for arm, layout in (("bf16_tilelang", "bf16"), ("fp8_flashmla_kv", "scaled")):
        info = _info(arm, model)
        for state in info["internal_states"]:
            del state["memory_usage"]
        facts = dsa_facts(info, LIVE / f"server-{arm}.log", str(model), {})
        assert facts is not None and facts.kv_layout == layout, facts
    assert row_layout(576.4) == "raw" and row_layout(700.0) is None


def test_asking_for_the_raw_tilelang_layout_and_getting_the_scaled_one_is_a_mismatch(tmp_path: Path) -> None:
    """A server that resolved other kernels and stores the scaled row than the raw TileLang FP8 the config asks
    for: the kernels from the log and the row from the pool's size fail, so ``on_mismatch`` applies."""
    model = _model(tmp_path)
    cfg = _config(tmp_path, model, "fp8_e4m3", dsa_prefill_backend="tilelang", dsa_decode_backend="tilelang")
    info = _info("fp8_flashmla_kv", model)
    v = verify(cfg, cfg.server, info, base_url="http://h", log_path=LIVE / "server-fp8_flashmla_kv.log")
    bad = {c.key: c.resolved for c in v.checks if not c.ok}
    assert not v.verified
    assert bad["kv_row_layout"] == "scaled (656 B)"
    assert bad["dsa_prefill_kernel (server log)"] == bad["dsa_decode_kernel (server log)"] == "flashmla_kv"
    assert "MISMATCH" in v.description


def test_the_default_threshold_is_sglangs_index_topk_where_nothing_says_otherwise(tmp_path: Path) -> None:
    model = _model(tmp_path)
    info = _info("bf16_tilelang", model)
    log = tmp_path / "server.log"
    text = (LIVE / "server-bf16_tilelang.log").read_text(encoding="utf-8")
    log.write_text(text.replace("Dense attention kv len threshold is manually set to 0", "(line removed)"))
    facts = dsa_facts(info, log, str(model), {})
    assert (facts.dense_prefill_threshold, facts.dense_prefill_threshold_source) == (
        2048, "engine default (index_topk)")  # fmt: skip
    facts = dsa_facts(info, log, str(model), {"SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD": "512"})
    assert (facts.dense_prefill_threshold, facts.dense_prefill_threshold_source) == (512, "server env")


def test_a_server_off_the_dsa_path_has_no_sparse_attention_facts(tmp_path: Path) -> None:
    info = copy.deepcopy(_info("bf16_tilelang", _model(tmp_path)))
    info["attention_backend"] = "triton"
    assert dsa_facts(info, None, None, {}) is None


def test_the_fp8_scale_finding_is_worded_for_the_scaled_row(tmp_path: Path) -> None:
    """SGLang prints "no scaling factors provided ... 1.0" over FlashMLA-KV's per-block-scaled pool too: it
    concerns per-tensor k/v scales, so the finding must not call the cache unscaled."""
    model = _model(tmp_path)
    cfg = _config(tmp_path, model, "fp8_e4m3")
    v = verify(cfg, cfg.server, _info("fp8_flashmla_kv", model), base_url="http://h",
               log_path=LIVE / "server-fp8_flashmla_kv.log")  # fmt: skip
    assert v.kv_cache is not None and v.kv_cache.fp8_scales == "default_1.0"
    found = check_fp8_scales(v)
    assert [f.severity for f in found] == ["info"]
    assert "per-block scales" in found[0].message and "unscaled" not in found[0].message


def test_prefills_at_or_below_the_threshold_are_counted_as_dense_and_warned(tmp_path: Path) -> None:
    """SGLang's default threshold (index_topk 2,048): a 1,500- and a 2,048-token prompt run dense attention,
    a 3,000-token one the TileLang kernel — "TileLang prefill on 1 of 3 prefills", a warning."""
    from evalpipe.artifacts.schema.requests import RequestAttempt, Usage
    from evalpipe.audit.checks import check_dsa_prefill_share

    model = _model(tmp_path)
    cfg = _config(tmp_path, model, "auto", dsa_prefill_backend="tilelang", dsa_decode_backend="tilelang")
    log = tmp_path / "server.log"
    text = (LIVE / "server-bf16_tilelang.log").read_text(encoding="utf-8")
    log.write_text(
        text.replace("manually set to 0 for DSA", "manually set to 2048 for DSA"), encoding="utf-8"
    )
    v = verify(cfg, cfg.server, _info("bf16_tilelang", model), base_url="http://h", log_path=log)
    attempts = [
        RequestAttempt(attempt_id=str(i), seq=i, started_at="2026-12-07T00:00:00Z", method="POST",
                       path="/v1/chat/completions", body_sha256="0", usage=Usage(prompt_tokens=n))
        for i, n in enumerate((1500, 2048, 3000))
    ]  # fmt: skip
    [finding] = check_dsa_prefill_share(v, attempts)
    assert finding.severity == "warn"
    assert finding.message.startswith("TileLang prefill on 1 of 3 prefills: 2 ran dense attention")


@pytest.mark.integration  # the kind's provenance probes the server's environment in a child interpreter
def test_provenance_reads_the_cuda_release_of_the_servers_torch(tmp_path: Path) -> None:
    """``torch.version.cuda`` from the server's torch (its version.py, read without importing torch), as the
    live server's environment had it (versions.txt: torch 2.11.0+cu130, cuda 13.0); a CPU build records None."""
    from evalpipe.server.kinds.sglang.env import TORCH_CUDA
    from evalpipe.server.kinds.sglang.kind import KIND

    first = (LIVE / "versions.txt").read_text(encoding="utf-8").splitlines()[0].split()
    facts = dict(zip(first[::2], first[1::2], strict=True))
    for build, cuda in ((facts["torch"], f"'{facts['cuda']}'"), ("2.11.0+cpu", "None")):
        site = tmp_path / build
        (site / "torch").mkdir(parents=True)
        (site / "torch" / "version.py").write_text(
            f"__version__ = '{build}'\ncuda: Optional[str] = {cuda}\n", encoding="utf-8"
        )
        cfg = _config(tmp_path, _model(tmp_path), "auto")
        packages = KIND.provenance(cfg.server, {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}).packages
        recorded = {p.name: p for p in packages}[TORCH_CUDA]
        assert recorded.environment == "server"
        assert recorded.version == (facts["cuda"] if cuda != "None" else None)


def test_an_attached_servers_threshold_is_neither_read_from_our_environment_nor_assumed(tmp_path: Path) -> None:
    model = _model(tmp_path)
    facts = dsa_facts(_info("bf16_tilelang", model), None, str(model), None)
    assert facts is not None and facts.dense_prefill_threshold is None and facts.kv_layout == "bf16"
