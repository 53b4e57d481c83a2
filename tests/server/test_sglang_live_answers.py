"""What a live SGLang 0.5.17 answered (``tests/fixtures/sglang-0.5.17-live/``: one H100, 2026-12-06, a BF16
SmolLM2-135M with ``--kv-cache-dtype auto`` and ``fp8_e4m3``), read by the code that verifies, redacts, sizes
requests, joins responses and parses speed.  The source-built 0.5.23 payload beside it
(``sglang-0.5.23-server_info-glm-fp8.json``) keeps the production DSA/TP-8 layout these cannot show; the live
files show what a source build cannot: the scheduler's facts (``max_req_input_len``, the KV capacity), the
log lines, the request id round trip, a real ``bench_serving`` line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from fake_sglang.support import server_config

from evalpipe.artifacts.redact import REDACTED, redact
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.audit.checks import check_fp8_scales
from evalpipe.audit.linkage import link
from evalpipe.recording.proxy import inject_rid
from evalpipe.server.kinds.sglang.flags import expected_kv_storage, extra_arg_values
from evalpipe.server.kinds.sglang.launch_log import kv_cache_facts
from evalpipe.server.served_context import served_context
from evalpipe.server.verify import mismatches, verify
from evalpipe.speed.clients.sglang_bench import parse_jsonl

LIVE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.17-live"
ARMS = ("auto", "fp8_e4m3")
#: The flags the live servers were started with beside the KV dtype (answers/README of the recording).
LIVE_ARGS = [
    "--dtype", "bfloat16", "--sampling-backend", "pytorch", "--grammar-backend", "none",
    "--mem-fraction-static", "0.3", "--disable-cuda-graph", "--enable-metrics", "--log-level", "info",
]  # fmt: skip


def _info(arm: str) -> dict[str, Any]:
    return json.loads((LIVE / f"server_info-{arm}.json").read_text(encoding="utf-8"))


def _live_config(tmp_path: Path, kv: str, extra: list[str] | None = None) -> Any:
    """The live run's settings as an evalpipe config: the model path served verbatim (it was on that host)."""
    server = {"attention_backend": "triton", "kv_cache_dtype": kv, "extra_args": extra or LIVE_ARGS}
    model = {"path": "/tmp/smol_bf16", "served_name": "/tmp/smol_bf16"}
    return server_config(tmp_path, server, model=model, model_dir=False)


@pytest.mark.parametrize("arm", ARMS)
def test_each_live_arm_verifies_with_its_kv_pool_and_context(tmp_path: Path, arm: str) -> None:
    cfg = _live_config(tmp_path, arm)
    v = verify(
        cfg, cfg.server, _info(arm), base_url="http://h", log_path=LIVE / f"server-{arm}.log", fresh_start=True
    )
    assert v.verified, mismatches(v)
    assert v.server_version == "0.5.17"
    checked = {c.key for c in v.checks}
    # every launch flag the config passed is checked against what the server resolved
    assert {"dtype", "mem_fraction_static", "sampling_backend", "disable_cuda_graph", "model_path"} <= checked
    assert "kv_cache_storage_dtype" in checked and v.unreported_settings == []
    # context_length is null in 0.5.17's /server_info: the served context is the longest prompt it takes
    assert _info(arm)["context_length"] is None
    assert (v.served_context_tokens, v.served_context_source) == (8186, "max_req_input_len from /server_info")
    assert v.cache_state is not None and v.cache_state.prefix_cache == "on" and v.cache_state.fresh_start
    kv = v.kv_cache
    assert kv is not None
    if arm == "fp8_e4m3":
        assert (kv.storage_dtype, kv.capacity_tokens, kv.fp8_scales) == ("float8_e4m3fn", 2165893, "default_1.0")
        assert "no scaling factors provided" in (kv.fp8_scales_evidence or "")
        assert "FP8 scales 1.0 (none provided)" in v.description
        (finding,) = check_fp8_scales(v)
        assert finding.code == "fp8_kv_unscaled" and finding.severity == "warn"
    else:
        assert (kv.storage_dtype, kv.capacity_tokens, kv.fp8_scales) == ("bfloat16", 1082946, None)
        assert check_fp8_scales(v) == []


def test_a_flag_the_server_resolved_otherwise_is_a_mismatch_naming_it(tmp_path: Path) -> None:
    cfg = _live_config(tmp_path, "fp8_e4m3", [*LIVE_ARGS, "--chunked-prefill-size", "256"])
    v = verify(cfg, cfg.server, _info("fp8_e4m3"), base_url="http://h")
    assert not v.verified
    assert mismatches(v) == ["chunked_prefill_size: config 256, server resolved 8192"]


def test_a_pool_of_another_dtype_is_a_mismatch(tmp_path: Path) -> None:
    """``/server_info`` echoes the flag; the pool the log names is what ran: a server that fell back to BF16
    storage under ``--kv-cache-dtype fp8_e4m3`` is caught there."""
    log = tmp_path / "server.log"
    text = (LIVE / "server-fp8_e4m3.log").read_text(encoding="utf-8")
    log.write_text(text.replace("torch.float8_e4m3fn", "torch.bfloat16"), encoding="utf-8")
    cfg = _live_config(tmp_path, "fp8_e4m3")
    v = verify(cfg, cfg.server, _info("fp8_e4m3"), base_url="http://h", log_path=log, fresh_start=True)
    assert mismatches(v) == ["kv_cache_storage_dtype: config 'float8_e4m3fn', server resolved 'bfloat16'"]


def test_a_flag_the_server_does_not_report_is_listed_not_failed(tmp_path: Path) -> None:
    cfg = _live_config(tmp_path, "auto", [*LIVE_ARGS, "--enable-custom-thing", "3"])
    v = verify(cfg, cfg.server, _info("auto"), base_url="http://h")
    assert v.verified and v.unreported_settings == ["enable_custom_thing"]


def test_the_log_states_the_pool_of_the_last_launch_and_how_scales_were_set() -> None:
    fp8 = (LIVE / "server-fp8_e4m3.log").read_text(encoding="utf-8")
    bf16 = (LIVE / "server-auto.log").read_text(encoding="utf-8")
    # a relaunch appends to the same log: the newest launch's pool is the one that served
    facts = kv_cache_facts(fp8 + "\n=== evalpipe: launching at now\n" + bf16)
    assert facts is not None and (facts.storage_dtype, facts.fp8_scales) == ("bfloat16", None)
    loaded = "Loaded KV cache scaling factors from /ckpt/kv_scales.json\n" + fp8.replace(
        "Using FP8 KV cache but no scaling factors", "(elided)"
    )
    facts = kv_cache_facts(loaded)
    assert facts is not None and facts.fp8_scales == "loaded" and "/ckpt/kv_scales.json" in str(
        facts.fp8_scales_evidence
    )
    silent = fp8.replace("Using FP8 KV cache but no scaling factors", "(elided)")
    facts = kv_cache_facts(silent)
    assert facts is not None and facts.fp8_scales == "not_logged"
    assert kv_cache_facts("no pool was ever allocated\n") is None


def test_extra_args_are_keyed_as_server_args_names_them() -> None:
    got = extra_arg_values(
        ["--mem-fraction-static", "0.3", "--disable-cuda-graph", "--cuda-graph-bs", "1", "2", "4",
         "--chunked-prefill-size=256", "--admin-api-key", "s3cret", "--dtype", "bfloat16"]
    )  # fmt: skip
    assert got == {
        "mem_fraction_static": 0.3,
        "disable_cuda_graph": True,
        "cuda_graph_bs": [1, 2, 4],
        "chunked_prefill_size": 256,
        "dtype": "bfloat16",
    }  # a flag that may carry a credential is never copied into a verification file
    assert expected_kv_storage("fp8_e4m3", []) == "float8_e4m3fn"
    assert expected_kv_storage("auto", ["--dtype", "bfloat16"]) == "bfloat16"
    assert expected_kv_storage("auto", []) is None


def test_served_context_of_the_live_payload() -> None:
    assert served_context(_info("auto")) == (8186, "input", "max_req_input_len from /server_info")
    models = json.loads((LIVE / "v1_models.json").read_text(encoding="utf-8"))
    assert models["data"][0]["max_model_len"] == 8192  # prompt + output; the prompt alone may use 8,186


def test_a_planted_key_in_the_live_payload_is_redacted() -> None:
    info = copy.deepcopy(_info("fp8_e4m3"))
    key = "sk-live-PLANTED-0123456789abcdef"
    info["api_key"] = key
    info["internal_states"][0]["api_key"] = key
    assert key not in json.dumps(redact(info, [key]))
    assert redact(info, [key])["api_key"] == REDACTED


def test_the_body_rid_is_what_a_live_sglang_returns_as_the_response_id() -> None:
    """SGLang echoes no X-Request-Id (neither header nor body); a body ``rid`` comes back as the response
    ``id``: the proxy's rid joins each recorded attempt to the prediction EvalScope stored."""
    by_header = json.loads((LIVE / "chat_xrequestid.json").read_text(encoding="utf-8"))
    sent = by_header["request"]["headers"]["X-Request-Id"]
    assert sent not in json.dumps(by_header["response_headers"]) + json.dumps(by_header["response_body"])
    by_rid = json.loads((LIVE / "chat_body_rid.json").read_text(encoding="utf-8"))
    assert by_rid["response_body"]["id"] == by_rid["request"]["body"]["rid"]
    # the proxy sets the attempt id as rid; a response carrying it links back to that attempt
    body = dict(by_header["request"]["body"])
    spliced = json.loads(inject_rid(json.dumps(body).encode(), "0a1b2c3d-000001"))
    assert spliced["rid"] == "0a1b2c3d-000001" and {k: v for k, v in spliced.items() if k != "rid"} == body
    # the live attempt, recorded as the proxy records one: its response names it
    rid = by_rid["request"]["body"]["rid"]
    attempt = RequestAttempt.model_validate(
        {"attempt_id": rid, "seq": 1, "started_at": "2026-12-06T04:12:01+00:00", "method": "POST",
         "path": "/v1/chat/completions", "body_sha256": "0" * 64, "status": by_rid["status"],
         "response_id": by_rid["response_body"]["id"]}
    )  # fmt: skip
    assert attempt.response_id == attempt.attempt_id
    assert link([], [attempt]).by_id[by_rid["response_body"]["id"]] is attempt


@pytest.mark.parametrize(("arm", "throughput"), [("auto", 1705.19), ("fp8_e4m3", 1616.0)])
def test_a_live_bench_serving_line_parses(arm: str, throughput: float) -> None:
    parsed = parse_jsonl(LIVE / f"bench_serving-{arm}.jsonl", input_len=256, output_len=64, concurrency=50)
    # the recording ran bench_serving without --max-concurrency (evalpipe always passes it): the parser says so
    assert parsed.completed == 50
    assert parsed.problems == [f"max_concurrency = None in bench_serving-{arm}.jsonl, the workload asked for 50"]
    assert parsed.output_throughput == pytest.approx(throughput, rel=0.01)
    assert parsed.lengths_as_requested  # 3,112 of 3,200 tokens re-tokenized: within 5 %
    assert parsed.ttft_ms.median is not None and parsed.tpot_ms.median is not None
