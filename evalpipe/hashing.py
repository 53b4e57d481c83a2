"""Content hashing: canonical JSON and sha256 helpers.

The canonical form is what makes a record's hash independent of the file format it was read from:
sorted keys, UTF-8 (no ASCII escaping), no spaces, and text line endings normalised to ``\\n``.
Benchmark-specific value normalisation (``"0"`` vs ``0`` ids, null kwargs) happens in the source
loaders before this function sees the record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import orjson


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR become LF."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _normalize(value: Any) -> Any:
    if isinstance(value, str):
        return normalize_newlines(value)
    if isinstance(value, dict):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    return value


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_float(v) for v in value)
    return False


def _canonical_json_stdlib(value: Any) -> bytes:
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


def canonical_json(value: Any) -> bytes:
    """Canonical UTF-8 JSON bytes of ``value`` (sorted keys, compact, LF line endings).

    The definition is the stdlib form ``json.dumps(v, sort_keys=True, ensure_ascii=False,
    separators=(",", ":"))``.  orjson produces the same bytes for everything except float formatting
    (``1e-07`` vs ``1e-7``) and integers beyond 64 bits, so it is used as a 2-3x faster path only for
    values without floats, with the stdlib as fallback (a test checks the equivalence).
    """
    value = _normalize(value)
    if not _has_float(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _canonical_json_stdlib(value)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def sha256_json(value: Any) -> str:
    """sha256 of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def fingerprint(record_hashes: Iterable[str]) -> str:
    """Dataset fingerprint: sha256 over the sorted record hashes, one per line."""
    h = hashlib.sha256()
    for rh in sorted(record_hashes):
        h.update(rh.encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


def rank_key(seed: int, benchmark: str, source_id: str) -> str:
    """The selection rank key: ``sha256(f"{seed}:{benchmark}:{source_id}")`` as hex."""
    return hashlib.sha256(f"{seed}:{benchmark}:{source_id}".encode()).hexdigest()


def sequence_key(seed: int, benchmark: str, source_id: str) -> str:
    """The order in which a sequential rule consumes a benchmark's selected samples:
    ``sha256(f"{seed}:sequence:{benchmark}:{source_id}")`` as hex.

    Not the rank key: a stratified selection takes the lowest rank keys of each stratum, so a stratum sampled
    more thinly has lower keys and would come first; a second, independent key orders the selected samples
    uniformly at random whatever the strata, and never by anything an answer decides."""
    return hashlib.sha256(f"{seed}:sequence:{benchmark}:{source_id}".encode()).hexdigest()


def block_order(
    seed: int, units: Iterable[tuple[str, str]], generation: Mapping[tuple[str, str], int] | None = None
) -> list[tuple[str, str]]:
    """A block's units ``(benchmark, source_id)`` in the order the sequential rule consumes them: by
    generation first (``ExtensionRecord.generation_of``: 0 the first run's entries, 1 those an ``--extend``
    added, …; a unit not named is of the newest), then by ``sequence_key`` within a generation.

    So after ``--extend`` the old run's units keep their positions — they are the old run's order, which is
    itself this order one generation down — and the new units follow in their own seeded order: the e-process
    continues where the old run left it instead of being restarted on a reshuffled sequence."""
    named = generation or {}
    newest = max(named.values(), default=-1) + 1
    return sorted(units, key=lambda u: (named.get(u, newest), sequence_key(seed, u[0], u[1])))


def generation_sizes(
    ordered: Iterable[tuple[str, str]], generation: Mapping[tuple[str, str], int] | None = None
) -> list[int]:
    """Units per generation of a block in ``block_order`` (generations without a unit of the block left
    out): ``[n]`` for a block never extended, ``[n_old, n_new]`` after one ``--extend``."""
    named = generation or {}
    newest = max(named.values(), default=-1) + 1
    counts: dict[int, int] = {}
    for unit in ordered:
        g = named.get(unit, newest)
        counts[g] = counts.get(g, 0) + 1
    return [counts[g] for g in sorted(counts)]


#: Request seeds are kept below 2**31: llama.cpp reads a request's ``seed`` into a uint32 (``-1``, i.e.
#: 0xFFFFFFFF, meaning "random"), and a positive 31-bit value is an int every OpenAI-compatible server and
#: client accepts whatever its integer width.
ATTEMPT_SEED_MASK = 0x7FFF_FFFF


def attempt_seed(seed: int | None, benchmark: str, source_id: str, attempt: int) -> int | None:
    """The request seed of one attempt at one sample: the first 8 bytes of
    ``sha256(f"{seed}:attempt-seed:{benchmark}:{source_id}:{attempt}")``, big-endian, masked to 31 bits;
    None (send no seed) when ``generation.seed`` is None.

    Why per attempt: with one seed on every request, a server that honours it (llama.cpp; SGLang with
    deterministic inference) answers every repeat of a sample identically, so repeats cost N× and measure no
    within-sample noise.  Why from the sample and not the arm: every arm of a paired run sends attempt k of
    a sample the same seed (common random numbers), so the arms' draws are coupled and the difference
    between them is the server's, not the dice's.  A function of (seed, benchmark, source_id, attempt) only:
    the same on a retry, a resume, or a later extension of the run."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:attempt-seed:{benchmark}:{source_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ATTEMPT_SEED_MASK


def message_text(content: Any) -> str:
    """Text of a chat message ``content``: a string, or the concatenated text parts of a part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if text is None and part.get("type") == "text":
                    text = part.get("content")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return str(content)


def prompt_sha256(messages: Iterable[Any]) -> str:
    """Hash of the rendered prompt: canonical JSON of ``[{"role", "content"}]`` with text content.

    The same function is applied to the OpenAI wire request (proxy), to EvalScope's prediction and
    review records and at resume, so a prompt can be followed across all three.  Messages may be dicts
    or objects with ``role``/``content`` attributes.
    """
    norm = []
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else getattr(m, "role", None)
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
        norm.append({"role": str(role), "content": message_text(content)})
    return sha256_json(norm)
