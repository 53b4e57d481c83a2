"""Secrets: what one looks like, how it is masked, and how a saved artifact is checked for one.

Everything evalpipe writes about a server (argv, environment, ``/server_info``, ``/model_info``, request
headers) passes through the ``redact*`` functions *before* it reaches a file or a console, so no artifact
ever holds an API key; the summary's server strings pass through ``redact_text`` again.  The audit's scan
(``evalpipe.audit.secret_scan``) then re-checks the saved files with ``secret_kinds`` and
``holds_credential``.

Two purposes, two strictnesses, one vocabulary:

* **Masking** is deliberately broad: a false positive costs a ``***`` in a record, a false negative leaks
  a credential into an audit trail that is meant to be shared.
* **Detection** is precise: every hit is an error finding that fails the run, so it flags only values
  that are credentials beyond doubt (a credential-shaped value under a credential-named key, a
  well-known token shape, the value of a secret flag or header).

Masking covers everything detection flags (each rule of detection is also applied by ``redact_text``, and
every credential-named key is a secret key), so nothing the scan would flag survives capture.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

REDACTED = "***"

# --- key names ---------------------------------------------------------------------------------------------
# A key whose value is a credential: its last word names one (api_key, HF_TOKEN, client_secret, Authorization).
_CREDENTIAL_KEY = re.compile(
    r"(?:^|[_\-])(?:api[_\-]?key|apikey|token|secret|password|passwd|authorization|credentials?)$",
    re.IGNORECASE,
)
# Tokenizer settings that end in "token" but hold vocabulary (eos_token, pad_token, …).
_SPECIAL_TOKEN_KEY = re.compile(
    r"^(?:bos|eos|pad|unk|sep|cls|mask|additional_special|special)[_\-]?tokens?$", re.IGNORECASE
)
# Masking's wider net: any of these words anywhere in the name (x-api-key, hf_token_path, cookie, …) …
_SECRET_WORD = re.compile(r"(key|token|secret|passw(or)?d|authorization|credential|cookie)", re.IGNORECASE)
# … except names that hold no secret (counts, sizes, tokenizer settings).
_NOT_SECRET_KEY = re.compile(
    r"(^|_)(max|num|n|min|total|prompt|completion|reasoning|cached)_?tokens?($|_)|tokenizer|token_ids?$|"
    r"_tokens?_|^tokens?$|key_?(dtype|cache)|kv_|hash_?key|sort_?key|keyword",
    re.IGNORECASE,
)
# A value that could be a credential (no spaces, long enough); "None", "auto" or a sentence is not.
_CREDENTIAL_SHAPE = re.compile(r"^[A-Za-z0-9_\-\.=:/+]{8,}$")


def names_credential(key: str) -> bool:
    """Detection: the key's last word names a credential (``api_key``, ``HF_TOKEN``; not ``eos_token``)."""
    return bool(_CREDENTIAL_KEY.search(key)) and not _SPECIAL_TOKEN_KEY.match(key)


def is_secret_key(name: str) -> bool:
    """Masking: a mapping key / env var / header name whose value is masked (every credential name, and
    any name with a secret word in it unless it is a count or tokenizer setting)."""
    return names_credential(name) or (bool(_SECRET_WORD.search(name)) and not _NOT_SECRET_KEY.search(name))


def is_redaction_marker(value: str) -> bool:
    """True for values that are already redacted (``***``, ``<redacted>``, ``REDACTED``, ``xxxx``)."""
    v = value.strip().strip("\"'")
    if not v:
        return True
    if "redacted" in v.lower():
        return True
    return set(v) <= set("*xX.<>-_") or v.lower() in {"none", "null", "false"}


def holds_credential(key: str, value: Any) -> bool:
    """Detection: a string value under a credential-named key that looks like a credential."""
    return (
        isinstance(value, str)
        and names_credential(key)
        and bool(_CREDENTIAL_SHAPE.match(value))
        and not is_redaction_marker(value)
    )


# --- text ----------------------------------------------------------------------------------------------------
# Credential-shaped tokens by well-known prefix.
TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("openai-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}")),
    ("huggingface token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("github token", re.compile(r"\b(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}")),
    ("aws access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
)
# Flag / header / assignment forms whose value (group ``v`` or ``w``) is the secret, whatever it looks like.
VALUE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
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
)
# Command-line flags that take a secret as their next argument (or as ``--flag=value``) — masking's net.
_SECRET_FLAG = re.compile(
    r"^--?([\w-]*(api[-_]?key|secret|password|passwd)[\w-]*|[\w-]*token)$", re.IGNORECASE
)
# Masking's net inside free text (log lines, launch_command strings): any bearer value, any secret flag's
# value, short sk-/hf_ keys.
_MASK_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
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


def _secret_span(m: re.Match[str]) -> tuple[int, int] | None:
    """Span of the secret value in a ``VALUE_PATTERNS`` match, or None when it is not a secret."""
    names = [n for n in ("v", "w") if n in m.re.groupindex and m.group(n)]
    if not names:
        return None
    value = m.group(names[0])
    if is_redaction_marker(value):
        return None
    if "k" in m.re.groupindex:  # key=value: only credential-shaped values of non-tokenizer keys
        if _SPECIAL_TOKEN_KEY.match(m.group("k")) or not _CREDENTIAL_SHAPE.match(value):
            return None
    return m.span(names[0])


def secret_kinds(text: str) -> Iterator[str]:
    """Detection in free text: the kind of every credential found (``"huggingface token"``, ``"secret flag"``)."""
    for kind, pattern in TOKEN_PATTERNS:
        for m in pattern.finditer(text):
            if not is_redaction_marker(m.group(0)):
                yield kind
    for kind, pattern in VALUE_PATTERNS:
        for m in pattern.finditer(text):
            if _secret_span(m) is not None:
                yield kind


def _mask_value(m: re.Match[str]) -> str:
    span = _secret_span(m)
    if span is None:
        return m.group(0)
    base = m.start(0)
    s = m.group(0)
    return s[: span[0] - base] + REDACTED + s[span[1] - base :]


def redact_text(text: str) -> str:
    """Mask bearer tokens, secret flags' values, ``api_key=…`` assignments and well-known key formats."""
    for pattern, repl in _MASK_PATTERNS:
        text = pattern.sub(repl, text)
    for _, pattern in VALUE_PATTERNS:
        text = pattern.sub(_mask_value, text)
    return text


# --- structures ------------------------------------------------------------------------------------------------
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
