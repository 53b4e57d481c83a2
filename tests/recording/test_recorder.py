"""``evalpipe.recording.recorder.build_attempt``: what one ``requests.jsonl`` line keeps of the request body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalpipe.recording.recorder import build_attempt

META = [
    "a1",
    0,
    0.0,
    1.0,
    1.0,
    "POST",
    "/v1/chat/completions",
    200,
    "application/json",
    None,
    False,
    None,
    False,
]
RESPONSE = json.dumps(
    {"id": "r1", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]}
).encode()


@pytest.mark.parametrize(
    ("body", "seed"),
    [({"seed": 1234567}, 1234567), ({}, None), ({"seed": True}, None), ({"seed": "7"}, None)],
)
def test_request_seed_is_recorded(body: dict[str, Any], seed: int | None) -> None:
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "2+2"}], **body}).encode()
    assert build_attempt(META, request, RESPONSE).seed == seed
