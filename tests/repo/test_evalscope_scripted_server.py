"""The scripted OpenAI-compatible test server, in a thread and as a subprocess."""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from helpers.server_process import SCRIPTED_SERVER, ServerProcess
from scripted_server import Rule, ScriptedServer

from evalpipe.hashing import prompt_sha256


def post(base: str, body: dict) -> tuple[int, dict | str]:
    req = urllib.request.Request(
        f"{base}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raw = resp.read().decode()
            return resp.status, json.loads(raw) if resp.headers.get("Content-Type", "").startswith(
                "application/json"
            ) else raw
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read().decode())


def chat(question: str, **extra: object) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": f"Q: {question}\nThink."}], **extra}


def test_answers_by_question_content_and_records_requests() -> None:
    rules = [
        Rule("two plus two", "\\boxed{4}", name="add"),
        Rule("long story", "Once upon a", finish_reason="length", name="trunc"),
        Rule("flaky", "finally", status=500, fail_times=1, name="flaky"),
    ]
    with ScriptedServer(rules) as srv:
        status, body = post(srv.base_url, chat("what is two plus two?", max_tokens=5))
        assert status == 200
        assert body["choices"][0]["message"]["content"] == "\\boxed{4}"
        assert body["choices"][0]["finish_reason"] == "stop"
        assert body["usage"]["completion_tokens"] == 1
        _, body = post(srv.base_url, chat("a long story please"))
        assert body["choices"][0]["finish_reason"] == "length"
        assert post(srv.base_url, chat("flaky one"))[0] == 500  # first attempt fails...
        assert post(srv.base_url, chat("flaky one"))[1]["choices"][0]["message"]["content"] == "finally"
        assert post(srv.base_url, chat("unknown"))[0] == 404  # no rule, no default
        _, body = post(srv.base_url, chat("two plus two", rid="attempt-7"))
        assert body["id"] == "attempt-7"  # like SGLang: the request's rid becomes the response id
        reqs = srv.requests
    assert [r.rule for r in reqs] == ["add", "trunc", "flaky", "flaky", None, "add"]
    assert [r.status for r in reqs] == [200, 200, 500, 200, 404, 200]
    assert reqs[0].max_tokens == 5
    assert reqs[0].prompt_sha256 == prompt_sha256(chat("what is two plus two?")["messages"])
    assert reqs[0].last_user == "Q: what is two plus two?\nThink."


def test_default_rule_and_streaming() -> None:
    with ScriptedServer([], default=Rule("", "x" * 150, finish_reason="length")) as srv:
        status, raw = post(srv.base_url, chat("anything", stream=True))
    assert status == 200 and isinstance(raw, str)
    events = [line[len("data: ") :] for line in raw.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "x" * 150
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "length"
    assert chunks[-1]["usage"]["completion_tokens"] == 1


def test_subprocess_mode(tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps({"rules": [{"match": "capital of France", "content": "Paris"}], "default": None})
    )
    port_file, log = tmp_path / "port", tmp_path / "requests.jsonl"
    argv = [*SCRIPTED_SERVER, "--rules", str(rules), "--port-file", str(port_file), "--request-log", str(log)]
    with ServerProcess(argv, log=tmp_path / "server.log", port_file=port_file, ready_path=None) as server:
        base = server.base_url + "/v1"
        status, body = post(base, chat("the capital of France?"))
        assert status == 200 and body["choices"][0]["message"]["content"] == "Paris"
        with urllib.request.urlopen(f"{base}/models", timeout=10) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "scripted-model"
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 1 and logged[0]["status"] == 200


@pytest.mark.parametrize("times", [None, 2])
def test_fail_times(times: int | None) -> None:
    with ScriptedServer([Rule("q", "ok", status=503, fail_times=times)]) as srv:
        codes = [post(srv.base_url, chat("q"))[0] for _ in range(3)]
    assert codes == ([503, 503, 503] if times is None else [503, 503, 200])
