"""Look for anything resembling a credential in saved artifacts, and redact strings for the summary.

Server artifacts are redacted at capture, but ``/server_info`` echoes the server's own arguments
(``api_key``, ``admin_api_key``) and a launch command may carry ``--api-key``; a leaked key in a run
directory that gets attached to a pull request is a release problem, so the audit re-scans.  Hits
name the file and the JSON path or line, never the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.redact import TOKEN_PATTERNS

REDACTED = "***REDACTED***"

# Credential-shaped tokens by well-known prefix (shared with the capture-time redactor).
_TOKEN_PATTERNS = TOKEN_PATTERNS
# Flag/assignment/header forms whose value is the secret, whatever it looks like.
_ASSIGN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "secret flag",
        re.compile(
            r"--(?:admin-)?api-key(?:\s+|=)(?P<v>[^\s\"',]+)|--[a-z-]*(?:token|secret|password)(?:\s+|=)(?P<w>[^\s\"',]+)",
            re.IGNORECASE,
        ),
    ),
    ("authorization header", re.compile(r"\bBearer\s+(?P<v>[A-Za-z0-9_\-\.=:/+]{8,})")),
    (
        "secret assignment",
        re.compile(
            r"\b(?P<k>[A-Za-z0-9_]*(?:api_key|apikey|token|secret|password))\s*[=:]\s*['\"]?(?P<v>[^\s'\",)]+)",
            re.IGNORECASE,
        ),
    ),
]
# JSON keys whose string value is a credential.
_SECRET_KEY = re.compile(
    r"(?:^|[_\-])(?:api[_\-]?key|apikey|token|secret|password|passwd|authorization|credentials?)$",
    re.IGNORECASE,
)
_TOKENIZER_KEY = re.compile(
    r"^(?:bos|eos|pad|unk|sep|cls|mask|additional_special|special)[_\-]?tokens?$", re.I
)
_CREDENTIAL_SHAPE = re.compile(r"^[A-Za-z0-9_\-\.=:/+]{8,}$")
_MAX_BYTES = 64 * 1024 * 1024


def is_redaction_marker(value: str) -> bool:
    """True for values that are already redacted (``***``, ``<redacted>``, ``REDACTED``, ``xxxx``)."""
    v = value.strip().strip("\"'")
    if not v:
        return True
    if "redacted" in v.lower():
        return True
    return set(v) <= set("*xX.<>-_") or v.lower() in {"none", "null", "false"}


@dataclass(frozen=True)
class SecretHit:
    path: str
    where: str
    kind: str


def _secret_span(m: re.Match[str]) -> tuple[int, int] | None:
    """Span of the secret value in an assignment-style match, or None when it is not a secret."""
    names = [n for n in ("v", "w") if n in m.re.groupindex and m.group(n)]
    if not names:
        return None
    value = m.group(names[0])
    if is_redaction_marker(value):
        return None
    if "k" in m.re.groupindex:  # key=value: only credential-shaped values of non-tokenizer keys
        if _TOKENIZER_KEY.match(m.group("k")) or not _CREDENTIAL_SHAPE.match(value):
            return None
    return m.span(names[0])


def _text_hits(text: str) -> Iterator[str]:
    for kind, pat in _TOKEN_PATTERNS:
        for m in pat.finditer(text):
            if not is_redaction_marker(m.group(0)):
                yield kind
    for kind, pat in _ASSIGN_PATTERNS:
        for m in pat.finditer(text):
            if _secret_span(m) is not None:
                yield kind


def _json_hits(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{where}.{k}" if where else str(k)
            if (
                isinstance(v, str)
                and _SECRET_KEY.search(str(k))
                and not _TOKENIZER_KEY.match(str(k))
                and _CREDENTIAL_SHAPE.match(v)
                and not is_redaction_marker(v)
            ):
                yield sub, "secret-named key"
            else:
                yield from _json_hits(v, sub)
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            # an argv list: flags and their values sit in consecutive items
            for kind in _text_hits(" ".join(value)):
                yield where or "(top level)", kind
        else:
            for i, v in enumerate(value):
                yield from _json_hits(v, f"{where}[{i}]")
    elif isinstance(value, str):
        for kind in _text_hits(value):
            yield where or "(top level)", kind


def scan_file(path: Path, rel: str) -> list[SecretHit]:
    """Secret-looking values in one file (JSON walked by key; other text scanned line by line)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            data = fh.read(_MAX_BYTES)
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    hits: dict[tuple[str, str], SecretHit] = {}
    parsed: Any = None
    if path.suffix == ".json" and size <= _MAX_BYTES:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
    if parsed is not None:
        for where, kind in _json_hits(parsed, ""):
            hits.setdefault((where, kind), SecretHit(rel, where, kind))
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            for kind in _text_hits(line):
                hits.setdefault((f"line {lineno}", kind), SecretHit(rel, f"line {lineno}", kind))
    return list(hits.values())


def scan_paths(root: Path, paths: list[Path]) -> list[SecretHit]:
    """Scan files and (recursively) directories under ``root``; absent paths are skipped."""
    out: list[SecretHit] = []
    for p in paths:
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else ([p] if p.is_file() else [])
        for f in files:
            try:
                rel = str(f.relative_to(root))
            except ValueError:
                rel = str(f)
            out.extend(scan_file(f, rel))
    return out


def redact_text(text: str) -> str:
    """Replace every credential-looking substring with ``REDACTED`` (keys and flags are kept)."""
    for _, pat in _TOKEN_PATTERNS:
        text = pat.sub(lambda m: m.group(0) if is_redaction_marker(m.group(0)) else REDACTED, text)

    def _sub_value(m: re.Match[str]) -> str:
        span = _secret_span(m)
        if span is None:
            return m.group(0)
        base = m.start(0)
        s = m.group(0)
        return s[: span[0] - base] + REDACTED + s[span[1] - base :]

    for _, pat in _ASSIGN_PATTERNS:
        text = pat.sub(_sub_value, text)
    return text
