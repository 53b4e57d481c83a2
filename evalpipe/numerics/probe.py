"""One arm's numerics probe: every prompt once, one at a time in a fixed order, through the recording proxy.

The server was just launched (the stage runs before the evaluation), so every arm meets the prompts with the
same cache history; ``flush_cache`` empties SGLang's prefix cache first.  One request at a time: a batch would
add the batching's own numerics to what is compared (llama.cpp's answers differ between runs with two slots,
and not with one).  Each request goes through the recording proxy into ``numerics/requests.jsonl`` and
``numerics/responses.jsonl.gz`` like an evaluation request (attempt id, body and response hashes);
``numerics.json`` is then read back *from those recorded responses*, joined to its prompt by the sha256 of
the body the probe sent, so every number in it traces to a recorded answer.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalpipe.artifacts import RunDir, read_jsonl, write_model
from evalpipe.artifacts.schema.numerics import NumericsAnswer, NumericsProbe
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.config.numerics import NumericsConfig
from evalpipe.hashing import sha256_hex
from evalpipe.numerics.asks.base import AnswerError, Ask
from evalpipe.numerics.asks.registry import ask_for
from evalpipe.numerics.prompts import WORDS, ProbePrompt, build_prompts, resolve_served_tokens
from evalpipe.recording.proxy import recording_proxy
from evalpipe.recording.responses import read_responses
from evalpipe.server.served_context import served_context

#: ``/server_info`` keys of the edges placements use (SGLang's names).
EDGE_KEYS = {"page": "page_size", "chunk": "chunked_prefill_size"}


def numerics_dir(run_dir: Path) -> RunDir:
    """``RUN/numerics/`` as a run directory of its own: the proxy writes its requests.jsonl and
    responses.jsonl.gz (and logs/recorder.log) there."""
    return RunDir(RunDir(run_dir).numerics_dir)


@dataclass(frozen=True)
class ProbeTarget:
    """Where the probe asks and what it knows of the server."""

    base_url: str
    run_dir: Path
    model: str
    server_info: Mapping[str, Any] | None = None
    api_key: str | None = None


def edges_for(cfg: NumericsConfig, info: Mapping[str, Any] | None) -> tuple[dict[str, int], Literal["config", "server_info", "none"]]:  # fmt: skip
    """The edges the placements use: the config's, else the server's ``page_size``/``chunked_prefill_size``."""
    if cfg.edges is not None:
        found = {k: v for k, v in (("page", cfg.edges.page), ("chunk", cfg.edges.chunk)) if v is not None}
        return found, "config"
    out: dict[str, int] = {}
    for name, key in EDGE_KEYS.items():
        value = (info or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            out[name] = value
    return out, ("server_info" if out else "none")


def _max_prompt(cfg: NumericsConfig, info: Mapping[str, Any] | None) -> int | None:
    found = served_context(info or {})
    if found is None:
        return None
    tokens, scope, _ = found
    return tokens - cfg.generated_tokens if scope == "total" else tokens


def _post(url: str, body: bytes, api_key: str | None, timeout: float) -> tuple[int | None, str | None]:
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status, None
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _flush(base_url: str, api_key: str | None) -> bool:
    status, _ = _post(base_url.rstrip("/") + "/flush_cache", b"", api_key, 60.0)
    return status is not None and 200 <= status < 300


def run_probe(target: ProbeTarget, cfg: NumericsConfig, *, base_dir: Path,
              say: Callable[[str], None] | None = None) -> NumericsProbe:  # fmt: skip
    """Ask every prompt on ``target`` and write ``numerics.json`` (returned) from the recorded answers."""
    ask = ask_for(cfg.ask)
    served = resolve_served_tokens(cfg.tokenizer, base_dir)
    edges, edges_from = edges_for(cfg, target.server_info)
    prompts, dropped = build_prompts(
        cfg, edges, served, max_prompt_tokens=_max_prompt(cfg, target.server_info)
    )
    if say is not None:
        gone = f"; lengths beyond the served context left out: {dropped}" if dropped else ""
        say(f"numerics: {len(prompts)} prompts ({cfg.ask}), edges {edges or 'none'}{gone}")
    flushed = _flush(target.base_url, target.api_key) if cfg.flush_cache else False
    recording = numerics_dir(target.run_dir)
    recording.root.mkdir(parents=True, exist_ok=True)
    sent: dict[str, bytes] = {}
    errors: dict[str, str] = {}
    start = time.perf_counter()
    with recording_proxy(target.base_url, recording, api_key=target.api_key) as proxy:
        url = proxy.base_url.rstrip("/") + ask.path
        for prompt in prompts:
            body = json.dumps(ask.body(prompt, cfg, target.model), separators=(",", ":")).encode()
            sent[prompt.id] = body
            _, error = _post(url, body, None, cfg.request_timeout_s)
            if error is not None:
                errors[prompt.id] = error
        proxy.flush()
    seconds = time.perf_counter() - start
    probe = read_back(recording, prompts, sent, errors, ask)
    artifact = NumericsProbe(
        config=cfg,
        ask=cfg.ask,
        edges=edges,
        edges_from=edges_from,
        tokenizer=served.name if served is not None else WORDS,
        dropped_lengths=dropped,
        cache_flushed=flushed,
        seconds=round(seconds, 3),
        prompt_tokens_sent=sum(a.server_prompt_tokens or 0 for a in probe),
        answers=probe,
    )
    write_model(RunDir(target.run_dir).numerics_json, artifact)
    return artifact


def read_back(recording: RunDir, prompts: list[ProbePrompt], sent: Mapping[str, bytes],
              errors: Mapping[str, str], ask: Ask) -> list[NumericsAnswer]:  # fmt: skip
    """Each prompt's answer as the proxy recorded it: the attempt whose body sha256 is the body sent."""
    attempts: dict[str, RequestAttempt] = {}
    if recording.requests_log.is_file():
        for row in read_jsonl(recording.requests_log, RequestAttempt):
            attempts.setdefault(row.body_sha256, row)  # the first attempt with that body: the one sent
    bodies = read_responses(recording) if recording.responses_log.is_file() else {}
    return [_answer(p, attempts, bodies, sent, errors.get(p.id), ask) for p in prompts]


def _answer(prompt: ProbePrompt, attempts: Mapping[str, RequestAttempt], bodies: Mapping[str, str],
            sent: Mapping[str, bytes], error: str | None, ask: Ask) -> NumericsAnswer:  # fmt: skip
    attempt = attempts.get(sha256_hex(sent[prompt.id])) if prompt.id in sent else None
    body = bodies.get(attempt.attempt_id) if attempt is not None else None
    answer = NumericsAnswer(
        id=prompt.id,
        length=prompt.length,
        placement=prompt.placement,
        prompt_sha256=prompt.sha256,
        prompt_tokens=prompt.prompt_tokens,
        server_prompt_tokens=None,
        attempt_id=attempt.attempt_id if attempt is not None else None,
        status=attempt.status if attempt is not None else None,
    )
    if error is None and attempt is None:
        error = "no recorded attempt"
    if error is None and body is None:
        error = "no recorded response body"
    if error is not None or body is None:
        return answer.model_copy(update={"error": error})
    try:
        read = ask.read(prompt, json.loads(body))
    except json.JSONDecodeError as exc:
        return answer.model_copy(update={"error": f"the response is not JSON: {exc}"})
    except AnswerError as exc:
        return answer.model_copy(update={"error": str(exc)})
    return answer.model_copy(
        update={
            "server_prompt_tokens": read.server_prompt_tokens,
            "text": read.text,
            "generated": read.generated,
            "forced": read.forced,
        }
    )
