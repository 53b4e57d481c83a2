"""The answer-key server as a subprocess: SGLang-like lifecycle, OpenAI wire format, planted faults.

Each server runs in its own process session on an ephemeral port (``--port 0``; the bound port is read
from its log) and is stopped with SIGTERM, then SIGKILL of its process group, in ``finally``.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.server_process import ServerProcess

from evalpipe.benchmarks import names
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.engines.answer_key import FAULTS, AnswerKey
from evalpipe.processes.group import signal_group
from evalpipe.server.kinds.registry import server_kind

MODULE = "evalpipe.engines.answer_key_server"
SERVED = "answer-key-test"
ALL_FAULTS = ",".join(FAULTS)
LISTENING = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)")


def _get(url: str, timeout: float = 5.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            body = resp.read()
            return resp.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return exc.code, json.loads(body) if body else None


def _post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@contextlib.contextmanager
def answer_key_server(tmp_path: Path, *args: str, wait_ready: bool = True) -> Iterator[ServerProcess]:
    """The answer-key server on ``--port 0`` (the bound port read from its log), stopped in any case."""
    log = tmp_path / f"answer-key-{time.monotonic_ns()}.log"
    argv = [sys.executable, "-m", MODULE, "--host", "127.0.0.1", "--port", "0", "--served-model-name", SERVED]
    server = ServerProcess(
        [*argv, *args], log=log, listening=LISTENING, ready_path="/health" if wait_ready else None
    )
    with server:
        yield server


@pytest.fixture(scope="module")
def key() -> AnswerKey:
    return AnswerKey.load(bundled_data_dir())


def _chat(server: ServerProcess, text: str, **extra: Any) -> tuple[int, Any]:
    body = {"model": SERVED, "messages": [{"role": "user", "content": text}], **extra}
    return _post(server.base_url + "/v1/chat/completions", body)


# ---------------------------------------------------------------- lifecycle


def test_health_503_while_starting_then_200_info_and_sigterm(tmp_path: Path, key: AnswerKey) -> None:
    item = key.items[0]
    with answer_key_server(tmp_path, "--startup-delay", "1.5", wait_ready=False) as server:
        t0 = time.monotonic()
        status, body = _get(server.base_url + "/health")
        assert status == 503 and body == {"status": "starting"}
        assert _chat(server, item.needle)[0] == 503  # no generation before ready
        while _get(server.base_url + "/health")[0] != 200:
            assert time.monotonic() - t0 < 30, server.log_text()
            time.sleep(0.05)
        assert time.monotonic() - t0 >= 1.0  # the startup delay kept it 503

        status, info = _get(server.base_url + "/server_info")
        assert status == 200
        for k in (
            "kv_cache_dtype",
            "attention_backend",
            "tp_size",
            "served_model_name",
            "version",
            "launch_command",
        ):
            assert k in info, k
        assert (
            info["served_model_name"] == SERVED and info["tp_size"] == 1 and info["kv_cache_dtype"] == "auto"
        )
        assert MODULE in info["launch_command"] and "--startup-delay" in info["launch_command"]
        assert info["answer_key"]["mode"] == "positive" and info["answer_key"]["faults"] == []
        # the server loaded the same items as the answer key here: every registered benchmark's miniature
        assert info["answer_key"]["items"] == key.counts() and set(key.counts()) == set(names())
        assert _get(server.base_url + "/get_server_info")[1] == info
        status, minfo = _get(server.base_url + "/model_info")
        assert status == 200 and minfo["is_generation"] is True
        status, models = _get(server.base_url + "/v1/models")
        assert status == 200 and [m["id"] for m in models["data"]] == [SERVED]

        signal_group(server.pid, signal.SIGTERM)
        assert server.proc is not None and server.proc.wait(timeout=15) == 0
        assert "stopping (signal)" in server.log_text()


def test_chat_rid_usage_stream_and_unmatched(tmp_path: Path, key: AnswerKey) -> None:
    """OpenAI SDK round trips: ``rid`` becomes the id, usage is reported, streamed text is identical."""
    from openai import OpenAI

    item = key.item("live_code_bench", next(i.source_id for i in key.items if i.func_name))
    expected = key.reply(item, mode="positive", faults=[]).content
    with answer_key_server(tmp_path) as server:
        client = OpenAI(base_url=server.base_url + "/v1", api_key="EMPTY", max_retries=0, timeout=10)
        messages = [
            {"role": "system", "content": "You are a programmer."},
            {"role": "user", "content": item.needle},
        ]
        out = client.chat.completions.create(model=SERVED, messages=messages, extra_body={"rid": "attempt-7"})
        assert out.id == "attempt-7"
        assert out.choices[0].message.content == expected and out.choices[0].finish_reason == "stop"
        assert out.usage.prompt_tokens > 0 and out.usage.completion_tokens > 0
        assert out.usage.total_tokens == out.usage.prompt_tokens + out.usage.completion_tokens

        stream = client.chat.completions.create(
            model=SERVED,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"rid": "attempt-8"},
        )
        chunks = list(stream)
        assert {c.id for c in chunks} == {"attempt-8"}
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == expected
        assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
            "stop"
        ]
        assert (
            chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == out.usage.completion_tokens
        )

        # max_tokens is honoured like a real server: the answer is cut and finish_reason is length.
        short = client.chat.completions.create(model=SERVED, messages=messages, max_tokens=3)
        assert short.choices[0].finish_reason == "length" and short.usage.completion_tokens == 3
        assert expected.startswith(short.choices[0].message.content)

        status, body = _chat(server, "What is the capital of Atlantis?")
        assert status == 200 and "matches no bundled item" in body["choices"][0]["message"]["content"]
        assert _post(server.base_url + "/v1/chat/completions", {"messages": []})[0] == 400
        stats = _get(server.base_url + "/stats")[1]
        assert stats == {"requests": {item.label: 3}, "unmatched": 1}


def test_negative_mode_answers_with_a_different_items_gold(tmp_path: Path, key: AnswerKey) -> None:
    with answer_key_server(tmp_path, "--mode", "negative") as server:
        for bench in ("gsm8k", "ceval", "ifeval", "live_code_bench"):
            item = next(i for i in key.items if i.benchmark == bench)
            partner = key.negative_partner(item)
            assert partner.label != item.label and partner.gold != item.gold
            status, body = _chat(server, item.needle)
            assert status == 200 and body["choices"][0]["message"]["content"] == partner.answer
        assert _get(server.base_url + "/server_info")[1]["answer_key"]["mode"] == "negative"


# ---------------------------------------------------------------- faults


def test_faults_fire_exactly_once_on_announced_items_with_evalscope_client(
    tmp_path: Path, key: AnswerKey
) -> None:
    """EvalScope's own OpenAI client: the 500 is retried, the held response makes it re-send the
    request (duplicate), truncate/index_error come back as 200 replies; each fires once, on its item."""
    from evalscope.api.messages import ChatMessageUser
    from evalscope.api.model import GenerateConfig
    from evalscope.models.openai_compatible import OpenAICompatibleAPI

    targets = {f: key.fault_targets[f] for f in FAULTS}
    with answer_key_server(tmp_path, "--faults", ALL_FAULTS) as server:
        status, listed = _get(server.base_url + "/faults")
        assert status == 200 and listed["mode"] == "positive"
        assert {(r["fault"], r["benchmark"], r["source_id"], r["fired"]) for r in listed["faults"]} == {
            (f, t.benchmark, t.source_id, 0) for f, t in targets.items()
        }
        api = OpenAICompatibleAPI(model_name=SERVED, base_url=server.base_url + "/v1", api_key="EMPTY")
        outputs = {}
        for fault, item in targets.items():
            cfg = GenerateConfig(timeout=1.0, max_tokens=64, stream=fault == "http_500_once")
            outputs[fault] = api.generate(
                [ChatMessageUser(content="Question:\n" + item.needle)],
                tools=[],
                tool_choice="auto",
                config=cfg,
            )
        other = next(i for i in key.items if i not in targets.values())
        outputs["other"] = api.generate(
            [ChatMessageUser(content=other.needle)],
            tools=[],
            tool_choice="auto",
            config=GenerateConfig(timeout=5),
        )

        for fault in ("http_500_once", "duplicate_request"):
            assert outputs[fault].completion == targets[fault].answer  # the retry got the right answer
        assert (
            outputs["truncate"].stop_reason == "max_tokens"
            and "\\boxed" not in outputs["truncate"].completion
        )
        assert "tokens[len(tokens)]" in outputs["index_error"].completion
        # thinking mode off: the endless thinking arrives inline, after an unclosed <think>, cut at the budget
        assert outputs["reasoning_budget"].stop_reason == "max_tokens"
        assert outputs["reasoning_budget"].completion.startswith("<think>Let me reconsider")
        assert "</think>" not in outputs["reasoning_budget"].completion
        assert outputs["other"].completion == other.answer

        fired = {r["fault"]: r["fired"] for r in _get(server.base_url + "/faults")[1]["faults"]}
        assert fired == dict.fromkeys(FAULTS, 1)
        requests = _get(server.base_url + "/stats")[1]["requests"]
        assert requests == {
            targets["http_500_once"].label: 2,  # 500, then the SDK's retry
            targets["duplicate_request"].label: 2,  # held past the timeout, then the re-sent request
            targets["truncate"].label: 1,
            targets["index_error"].label: 1,
            targets["reasoning_budget"].label: 1,
            other.label: 1,
        }
        log = server.log_text()
        for fault, item in targets.items():
            assert f"planted fault {fault} -> {item.benchmark} {item.source_id}" in log
            assert f"fault {fault} fired on {item.label} (1)" in log
        assert "response held 1.5s (client read timeout 1s)" in log

        # Transport faults are once-only; content faults answer their item the same way every time.
        assert _chat(server, targets["http_500_once"].needle)[0] == 200
        status, body = _chat(server, targets["truncate"].needle)
        assert status == 200 and body["choices"][0]["finish_reason"] == "length"
        fired = {r["fault"]: r["fired"] for r in _get(server.base_url + "/faults")[1]["faults"]}
        assert fired["http_500_once"] == 1 and fired["duplicate_request"] == 1 and fired["truncate"] == 2


def test_duplicate_request_drops_connection_without_announced_timeout(tmp_path: Path, key: AnswerKey) -> None:
    """A client that announces no read timeout (or a long one) sees a dropped connection; the OpenAI SDK
    retries that as a connection error, so the item still reaches the server twice."""
    from openai import OpenAI

    item = key.fault_targets["duplicate_request"]
    with answer_key_server(tmp_path, "--faults", "duplicate_request") as server:
        client = OpenAI(base_url=server.base_url + "/v1", api_key="EMPTY", max_retries=2, timeout=120)
        out = client.chat.completions.create(
            model=SERVED, messages=[{"role": "user", "content": item.needle}]
        )
        assert out.choices[0].message.content == item.answer
        assert _get(server.base_url + "/stats")[1]["requests"] == {item.label: 2}
        assert "connection dropped (client read timeout 120)" in server.log_text()
    with answer_key_server(tmp_path, "--faults", "duplicate_request") as server:
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP client, no retry
            _chat(server, item.needle)
        assert _chat(server, item.needle)[0] == 200
        assert "connection dropped (client read timeout not announced)" in server.log_text()


# ---------------------------------------------------------------- arguments and data directories


def test_unknown_fault_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", MODULE, "--port", "0", "--faults", "truncate,explode"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "unknown fault(s) explode" in proc.stderr


def test_missing_data_dir_exits_nonzero_with_reason(tmp_path: Path) -> None:
    with answer_key_server(tmp_path, "--data-dir", str(tmp_path / "nope"), wait_ready=False) as server:
        assert server.proc.wait(timeout=30) == 1
        assert "cannot start" in server.log_text() and "data directory not found" in server.log_text()


def test_custom_data_dir_default_fault_targets(tmp_path: Path) -> None:
    """A data dir with one benchmark and no faults.json: the first item carries its fault; a fault whose
    benchmark is absent refuses to start.  A benchmark that ships its own miniature (the YAML-described
    ``unit_facts``) comes with it whatever the data dir."""
    data = tmp_path / "data"
    shutil.copytree(bundled_data_dir() / "gsm8k", data / "gsm8k")
    custom = AnswerKey.load(data)
    first = custom.items[0]
    assert custom.counts() == {"gsm8k": 12, "unit_facts": 12} and custom.fault_targets == {"truncate": first}
    with answer_key_server(tmp_path, "--data-dir", str(data), "--faults", "truncate") as server:
        assert _get(server.base_url + "/faults")[1]["faults"][0]["source_id"] == first.source_id
        assert _chat(server, first.needle)[1]["choices"][0]["finish_reason"] == "length"
    with answer_key_server(
        tmp_path, "--data-dir", str(data), "--faults", "index_error", wait_ready=False
    ) as server:
        assert server.proc.wait(timeout=30) == 1
        assert "fault index_error: no live_code_bench item" in server.log_text()


# ---------------------------------------------------------------- through evalpipe's launcher and proxy


def test_launched_by_lifecycle_faults_recorded_by_proxy(
    tmp_path: Path, repo_root: Path, key: AnswerKey
) -> None:
    """configs/demo.yaml's server through the launcher (the argv built for ``kind: answer_key``, verified
    from /server_info, SIGTERM stop) and EvalScope's client through the recording proxy: the duplicate
    fault leaves two successful attempts for one prompt, the 500 a failed attempt and a successful one."""
    from evalscope.api.messages import ChatMessageUser
    from evalscope.api.model import GenerateConfig
    from evalscope.models.openai_compatible import OpenAICompatibleAPI

    from evalpipe.artifacts import RunDir, read_jsonl
    from evalpipe.artifacts.schema.requests import RequestAttempt
    from evalpipe.artifacts.schema.server import LaunchRecord
    from evalpipe.config.loader import load_config
    from evalpipe.hashing import prompt_sha256
    from evalpipe.recording.proxy import recording_proxy
    from evalpipe.server.lifecycle import managed_server

    cfg = load_config(repo_root / "configs" / "demo.yaml")
    rundir = RunDir(tmp_path / "run")
    dup, err = key.fault_targets["duplicate_request"], key.fault_targets["http_500_once"]
    with managed_server(cfg, cfg.server, rundir, kind=server_kind(cfg.server.kind)) as handle:
        assert handle.verification.verified, handle.verification.description
        with recording_proxy(handle.base_url, rundir) as proxy:
            api = OpenAICompatibleAPI(
                model_name=cfg.model.served_name,
                base_url=proxy.base_url + "/v1",
                api_key="EMPTY",
                max_retries=0,
            )
            config = GenerateConfig(timeout=1.0, retries=2, retry_interval=1)
            for item in (dup, err):
                msgs = [ChatMessageUser(content=item.needle)]
                out = api.generate(msgs, tools=[], tool_choice="auto", config=config)
                assert out.completion == item.answer
            time.sleep(1.0)  # the held first response of the duplicate arrives after the client gave up
            proxy.flush(30)
    launch = LaunchRecord.model_validate_json(rundir.server_dir.joinpath("launch.json").read_text())
    assert launch.argv[1:3] == ["-m", MODULE] and (launch.stop_method, launch.exit_code) == ("sigterm", 0)

    attempts = read_jsonl(rundir.requests_log, RequestAttempt)
    by_prompt: dict[str, list[int | None]] = {}
    attempts = sorted(attempts, key=lambda a: a.attempt_id)
    for a in attempts:
        by_prompt.setdefault(a.messages_sha256 or "", []).append(a.status)
    sha = {item: prompt_sha256([{"role": "user", "content": item.needle}]) for item in (dup, err)}
    assert by_prompt == {sha[dup]: [200, 200], sha[err]: [500, 200]}


def test_thinking_modes_both_forms_toggle_and_reasoning_budget(tmp_path: Path, key: AnswerKey) -> None:
    """Thinking mode: reasoning in reasoning_content (parser form) or inline <think> (no parser), usage with
    SGLang's top-level reasoning_tokens; a request that switches thinking off gets none; reasoning_budget
    thinks until max_tokens and never answers — and EvalScope's client splits both forms the same way."""
    from evalscope.api.messages import ChatMessageUser
    from evalscope.api.model import GenerateConfig
    from evalscope.models.openai_compatible import OpenAICompatibleAPI

    from evalpipe.recording.reasoning import split_message

    item = key.item("gsm8k", next(i.source_id for i in key.items if i.benchmark == "gsm8k"))
    budget = key.fault_targets["reasoning_budget"]
    for form in ("reasoning_content", "inline"):
        with answer_key_server(
            tmp_path, "--thinking", form, "--faults", "reasoning_budget", "--reasoning-parser", "glm45"
        ) as server:
            assert _get(server.base_url + "/server_info")[1]["reasoning_parser"] == "glm45"
            status, body = _chat(server, item.needle, chat_template_kwargs={"enable_thinking": True})
            msg, usage = body["choices"][0]["message"], body["usage"]
            split = split_message(msg["content"], msg.get("reasoning_content"))
            assert status == 200 and split.answer.strip() == item.answer and split.reasoning.strip()
            assert (msg["reasoning_content"] is not None) is (form == "reasoning_content")
            assert 0 < usage["reasoning_tokens"] < usage["completion_tokens"]

            off = _chat(server, item.needle, chat_template_kwargs={"enable_thinking": False})[1]
            assert off["choices"][0]["message"]["content"] == item.answer
            assert off["choices"][0]["message"]["reasoning_content"] is None
            assert off["usage"]["reasoning_tokens"] == 0

            status, body = _chat(server, budget.needle, max_tokens=40)
            msg, usage = body["choices"][0]["message"], body["usage"]
            split = split_message(msg["content"], msg.get("reasoning_content"))
            assert body["choices"][0]["finish_reason"] == "length" and not split.final_answer_present
            assert usage["reasoning_tokens"] == usage["completion_tokens"] == 40
            api = OpenAICompatibleAPI(model_name=SERVED, base_url=server.base_url + "/v1", api_key="EMPTY")
            out = api.generate(
                [ChatMessageUser(content=item.needle)], tools=[], tool_choice="auto", config=GenerateConfig()
            )
            assert out.completion.strip() == item.answer  # EvalScope scores the answer, not the thinking
            parts = [p.model_dump() for p in out.choices[0].message.content]  # type: ignore[union-attr]
            assert split_message(parts).reasoning.strip()
