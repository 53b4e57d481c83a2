"""What a speed client is to evalpipe: an argv for one round, and a parser for the files it wrote.

Only the modules in this package know a client's flags and output layout; when EvalScope or SGLang change
either, one file changes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalpipe.artifacts.redact import REDACTED, redact, redact_text
from evalpipe.artifacts.schema.speed import LatencyStats, PercentileMethod, RawFile
from evalpipe.config.speed import JSONScalar, SpeedClientName, SpeedConfig, SpeedWorkload


@dataclass(frozen=True)
class RoundPlan:
    """Everything one client run needs; the same plan (seed included) goes to every variant."""

    workload: SpeedWorkload
    round_index: int
    seed: int
    round_dir: Path
    base_url: str
    served_model: str
    tokenizer_dir: Path | None
    extra_request_body: Mapping[str, JSONScalar]
    timeout_s: float


@dataclass
class ParsedRound:
    """The figures a client's files hold for one round (None where the client does not report one)."""

    completed: int = 0
    duration_s: float | None = None
    request_throughput: float | None = None
    input_throughput: float | None = None
    output_throughput: float | None = None
    total_throughput: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    ttft_ms: LatencyStats = field(default_factory=LatencyStats)
    itl_ms: LatencyStats = field(default_factory=LatencyStats)
    tpot_ms: LatencyStats = field(default_factory=LatencyStats)
    e2e_ms: LatencyStats = field(default_factory=LatencyStats)
    prompt_set_sha256: str | None = None
    cached_prompt_tokens_pct: float | None = None
    lengths_as_requested: bool | None = None
    derived: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class SpeedClient(Protocol):
    name: SpeedClientName
    program: str
    percentile_method: PercentileMethod

    def version(self) -> str:
        """The installed client's version; raises :class:`SpeedSetupError` naming the extra when missing."""
        ...

    def check(self, cfg: SpeedConfig, tokenizer_dir: Path | None) -> None:
        """Refuse, in one line, what this client cannot run (e.g. no tokenizer)."""
        ...

    def argv(self, plan: RoundPlan, cfg: SpeedConfig) -> list[str]: ...

    def env(self, api_key: str | None) -> dict[str, str]:
        """Extra environment for the client process (offline switches, the API key where it reads one)."""
        ...

    def parse(self, plan: RoundPlan) -> ParsedRound: ...


def finite(value: Any, what: str, problems: list[str]) -> float | None:
    """A float, or None (with a problem line) for a missing, non-numeric or non-finite value."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append(f"{what}: not a number ({value!r})")
        return None
    number = float(value)
    if not math.isfinite(number):
        problems.append(f"{what}: the client reported {value!r}")
        return None
    return number


def sha256_of_prompts(prompts: Iterable[Any]) -> str:
    """Order-free fingerprint of a prompt set: sha256 over the sorted per-prompt sha256s."""
    digests = sorted(
        hashlib.sha256(json.dumps(p, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()
        for p in prompts
    )
    return hashlib.sha256("\n".join(digests).encode("ascii")).hexdigest()


def _scrub_text(text: str, secrets: tuple[str, ...]) -> tuple[str, int]:
    count = 0
    for secret in secrets:
        count += text.count(secret)
        text = text.replace(secret, REDACTED)
    scrubbed = redact_text(text)
    if scrubbed != text:
        count += 1
    return scrubbed, count


def _scrub_jsonl(text: str) -> tuple[str, int]:
    """SGLang's JSONL embeds the server's whole ``/server_info`` (an SGLang server reports ``api_key`` there):
    mask secret-named keys line by line.  ``json.dumps`` with default separators is the serializer SGLang's
    writer uses, so an unchanged line keeps its bytes."""
    out, count = [], 0
    for line in text.split("\n"):
        try:
            obj = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("server_info"), dict):
            masked = redact(obj["server_info"])
            if masked != obj["server_info"]:
                obj["server_info"] = masked
                line = json.dumps(obj)
                count += 1
        out.append(line)
    return "\n".join(out), count


def keep_raw_files(round_dir: Path, relative_to: Path, secrets: Iterable[str] = ()) -> list[RawFile]:
    """List every file the client left in ``round_dir`` (sha256, size), masking secrets in text files first.

    Binary files (EvalScope's SQLite request log) are listed as they are: they hold request bodies, which
    carry no credentials (keys travel in headers)."""
    known = tuple(s for s in secrets if s)
    kept: list[RawFile] = []
    for path in sorted(p for p in round_dir.rglob("*") if p.is_file()):
        redactions = 0
        data = path.read_bytes()
        if path.suffix in (".json", ".jsonl", ".log", ".txt", ".html"):
            text = data.decode("utf-8", errors="surrogateescape")
            scrubbed, redactions = _scrub_text(text, known)
            if path.suffix == ".jsonl":
                scrubbed, jsonl_redactions = _scrub_jsonl(scrubbed)
                redactions += jsonl_redactions
            if redactions:
                data = scrubbed.encode("utf-8", errors="surrogateescape")
                path.write_bytes(data)
        kept.append(
            RawFile(
                path=path.relative_to(relative_to).as_posix(),
                sha256=hashlib.sha256(data).hexdigest(),
                bytes=len(data),
                redactions=redactions,
            )
        )
    return kept


@dataclass(frozen=True)
class ClientPlugin:
    """What a speed-client module declares as ``CLIENT``: the client's name (``speed.client``) and how to
    make one for a run.  ``make(client_env)``: ``client_env`` is the server's own environment additions
    (``server.env``), for a client that must run in the installation the server runs."""

    name: str
    make: Callable[[Mapping[str, str] | None], SpeedClient]
