"""Look for anything resembling a credential in saved artifacts.

Server artifacts are redacted at capture, but ``/server_info`` echoes the server's own arguments
(``api_key``, ``admin_api_key``) and a launch command may carry ``--api-key``; a leaked key in a run
directory that gets attached to a pull request is a release problem, so the audit re-scans.  What counts
as a credential is decided in ``evalpipe.artifacts.redact`` (the same rules capture masks with); this module walks
the files.  Hits name the file and the JSON path or line, never the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.artifacts.redact import holds_credential, secret_kinds

_MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SecretHit:
    path: str
    where: str
    kind: str


def _json_hits(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            sub = f"{where}.{k}" if where else str(k)
            if holds_credential(str(k), v):
                yield sub, "secret-named key"
            else:
                yield from _json_hits(v, sub)
    elif isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            # an argv list: flags and their values sit in consecutive items
            for kind in secret_kinds(" ".join(value)):
                yield where or "(top level)", kind
        else:
            for i, v in enumerate(value):
                yield from _json_hits(v, f"{where}[{i}]")
    elif isinstance(value, str):
        for kind in secret_kinds(value):
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
            for kind in secret_kinds(line):
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
