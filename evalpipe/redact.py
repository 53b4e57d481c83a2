"""Secret redaction, applied at the point of capture.

Everything evalpipe writes about a server (argv, environment, ``/server_info``, ``/model_info``, request
headers) passes through these functions *before* it reaches a file or a console, so no artifact ever holds
an API key.  The rules are deliberately broad: a false positive costs a ``***`` in a record, a false
negative leaks a credential into an audit trail that is meant to be shared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "***"

# Key names whose values are secrets: api_key, x-api-key, hf_token, client_secret, password, authorization…
_SECRET_KEY = re.compile(r"(key|token|secret|passw(or)?d|authorization|credential|cookie)", re.IGNORECASE)
# Key names that match the pattern above but hold no secret (counts, sizes, tokenizer settings).
_NOT_SECRET_KEY = re.compile(
    r"(^|_)(max|num|n|min|total|prompt|completion|reasoning|cached)_?tokens?($|_)|tokenizer|token_ids?$|"
    r"_tokens?_|^tokens?$|key_?(dtype|cache)|kv_|hash_?key|sort_?key|keyword",
    re.IGNORECASE,
)
# Command-line flags that take a secret as their next argument (or as ``--flag=value``).
_SECRET_FLAG = re.compile(
    r"^--?([\w-]*(api[-_]?key|secret|password|passwd)[\w-]*|[\w-]*token)$", re.IGNORECASE
)
# Credential-shaped tokens by well-known prefix: masked here at capture, and detected by the audit's secret
# scan (``evalpipe.audit.secrets``) in anything that was saved anyway — one table for both.
TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("openai-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}")),
    ("huggingface token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("github token", re.compile(r"\b(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}")),
    ("aws access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
)
# Secret-looking substrings inside free text (log lines, launch_command strings).
_INLINE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"), r"\1" + REDACTED),
    (
        re.compile(
            r"(?i)(--?(?:[\w-]*(?:api[-_]?key|secret|password|passwd)[\w-]*|[\w-]*token)(?:=|\s+))"
            r"(\"[^\"]*\"|'[^']*'|\S+)"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,})"), REDACTED),
    *((pattern, REDACTED) for _, pattern in TOKEN_PATTERNS),
)


def is_secret_key(name: str) -> bool:
    """True when a mapping key / env var / header name denotes a secret value."""
    return bool(_SECRET_KEY.search(name)) and not _NOT_SECRET_KEY.search(name)


def redact_text(text: str) -> str:
    """Mask bearer tokens, ``--api-key VALUE`` and well-known key formats inside free text."""
    for pattern, repl in _INLINE_PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_argv(argv: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """Copy of ``argv`` with the values of secret flags (and any literal ``secrets``) replaced."""
    known = [s for s in secrets if s]
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            out.append(REDACTED)
            mask_next = False
            continue
        flag, eq, _value = arg.partition("=")
        if arg.startswith("-") and _SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}={REDACTED}")
            else:
                out.append(arg)
                mask_next = True
            continue
        for s in known:
            arg = arg.replace(s, REDACTED)
        out.append(arg)
    return out


def redact_mapping(env: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """Redact an environment-like ``str → str`` mapping by key name and by known secret values."""
    known = [s for s in secrets if s]
    out = {}
    for k, v in env.items():
        if is_secret_key(k):
            out[k] = REDACTED
            continue
        for s in known:
            v = v.replace(s, REDACTED)
        out[k] = redact_text(v)
    return out


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Deep copy of a JSON-like value with secret-named keys masked and known secret values removed.

    ``secrets`` are literal values (e.g. the API key read from the environment) to scrub wherever they
    appear, even under innocuous keys or inside ``launch_command`` strings.
    """
    known = tuple(s for s in secrets if s)
    return _redact(value, known)


def _redact(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            key = str(k)
            if is_secret_key(key) and v not in (None, "", [], {}) and not isinstance(v, bool | int | float):
                out[key] = REDACTED
            else:
                out[key] = _redact(v, known)
        return out
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, str) for v in value) and any(str(v).startswith("-") for v in value):
            return redact_argv([_scrub(v, known) for v in value], known)
        return [_redact(v, known) for v in value]
    if isinstance(value, str):
        return redact_text(_scrub(value, known))
    return value


def _scrub(text: str, known: tuple[str, ...]) -> str:
    for s in known:
        text = text.replace(s, REDACTED)
    return text
