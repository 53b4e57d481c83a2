"""Replay server: recorded answers in their original order, ids rewritten, misses logged and audited."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt, ResponseRecord
from evalpipe.audit.checks import check_replay_misses
from evalpipe.engines.replay_queues import build_queues
from evalpipe.engines.replay_server import build_app
from evalpipe.hashing import prompt_sha256

MESSAGES = [{"role": "user", "content": "What is 1+1?"}]


def _body(rid: str, text: str) -> str:
    return json.dumps({"id": rid, "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})  # fmt: skip


def _bundle(root: Path) -> RunDir:
    rd = RunDir(root)
    root.mkdir(parents=True)
    h = prompt_sha256(MESSAGES)
    attempts = [  # a 500, then an unused late duplicate, then the answer the evaluation used
        RequestAttempt(attempt_id="a1", seq=0, started_at="t", method="POST", path="/v1/chat/completions", body_sha256="x", messages_sha256=h, status=500),
        RequestAttempt(attempt_id="a2", seq=1, started_at="t", method="POST", path="/v1/chat/completions", body_sha256="x", messages_sha256=h, status=200, response_id="a2"),
        RequestAttempt(attempt_id="a3", seq=2, started_at="t", method="POST", path="/v1/chat/completions", body_sha256="x", messages_sha256=h, status=200, response_id="a3"),
    ]  # fmt: skip
    rd.requests_log.write_text("".join(a.model_dump_json() + "\n" for a in attempts))
    records = [
        ResponseRecord(
            attempt_id="a1", status=500, content_type="application/json", body='{"error": "boom"}'
        ),
        ResponseRecord(
            attempt_id="a2", status=200, content_type="application/json", body=_body("a2", "late 2")
        ),
        ResponseRecord(
            attempt_id="a3", status=200, content_type="application/json", body=_body("a3", "used 2")
        ),
    ]
    rd.responses_log.write_bytes(
        b"".join(gzip.compress((r.model_dump_json() + "\n").encode()) for r in records)
    )
    outcome = OutcomeRow(
        benchmark="gsm8k", subset="main", index=0, source_id="s", stratum="all", prediction_present=True,
        review_present=True, n_predictions=1, n_reviews=1, response_id="a3", score=1.0, failure_class="ok",
        prompt_sha256=h,
    )  # fmt: skip
    rd.outcomes.write_text(outcome.model_dump_json() + "\n")
    return rd


def test_replay_serves_failures_then_the_used_answer_and_logs_misses(tmp_path: Path) -> None:
    rd = _bundle(tmp_path / "bundle")
    plan = build_queues(rd.root)
    assert plan.skipped_unused == 1 and not plan.missing_bodies
    out = RunDir(tmp_path / "replay")
    out.root.mkdir()

    async def scenario() -> list[tuple[int, dict]]:
        app = build_app(plan, {"server_info": {"kv_cache_dtype": "fp8_e4m3"}}, out.replay_misses)
        async with TestClient(TestServer(app)) as client:
            got = []
            for rid in ("new-1", "new-2", "new-3"):
                resp = await client.post("/v1/chat/completions", json={"messages": MESSAGES, "rid": rid})
                got.append((resp.status, await resp.json()))
            info = await (await client.get("/server_info")).json()
            assert info == {"kv_cache_dtype": "fp8_e4m3"}
            other = await client.post(
                "/v1/chat/completions", json={"messages": [{"role": "user", "content": "?"}]}
            )
            assert other.status == 404
            return got

    got = asyncio.run(scenario())
    assert got[0][0] == 500
    assert got[1][0] == 200 and got[1][1]["id"] == "new-2"
    assert got[1][1]["choices"][0]["message"]["content"] == "used 2"  # not the unused late duplicate
    assert got[2][0] == 404 and got[2][1]["type"] == "replay_miss"  # queue exhausted
    misses = [json.loads(line) for line in out.replay_misses.read_text().splitlines()]
    assert len(misses) == 2 and misses[0]["messages_sha256"] == prompt_sha256(MESSAGES)
    findings = check_replay_misses(out)
    assert [(f.severity, f.code) for f in findings] == [("error", "replay_miss")]
    assert "2 replayed request(s)" in findings[0].message
