"""The source tree a package runs from, as a typed record: its git commit, whether it carries uncommitted
changes and a hash of them (``GitInfo``), read by running ``git`` — never by importing the package.

The sign-off names a "runtime base + validation patch": evalpipe's own tree (``evalpipe.run.provenance``) and
the serving engine's (a server kind's ``Kind.provenance``) are both captured here.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalpipe.artifacts.schema.provenance import GitInfo


def _git(args: list[str], cwd: Path, *, binary: bool = False) -> bytes | str | None:
    try:
        proc = subprocess.run(
            ["git", "-c", "safe.directory=*", *args],
            cwd=cwd,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout if binary else proc.stdout.decode("utf-8", errors="replace").strip()


def git_info(path: Path) -> GitInfo | None:
    """Commit, dirtiness and a hash of the uncommitted change of the git work tree containing ``path``.

    The hash covers ``git diff HEAD --binary`` plus the path and content of every untracked, non-ignored
    file (a validation patch often adds files), so two trees with the same hash run the same code.
    """
    path = Path(path)
    start = path if path.is_dir() else path.parent
    top = _git(["rev-parse", "--show-toplevel"], start)
    if not isinstance(top, str) or not top:
        return None
    root = Path(top)
    commit = _git(["rev-parse", "HEAD"], root)
    diff = _git(["diff", "HEAD", "--binary"], root, binary=True)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root, binary=True)
    files = sorted(f for f in (untracked or b"").split(b"\0") if f) if isinstance(untracked, bytes) else []
    dirty = bool(diff) or bool(files)
    digest = None
    if dirty:
        h = hashlib.sha256()
        h.update(diff if isinstance(diff, bytes) else b"")
        for name in files:
            h.update(b"\0untracked\0" + name + b"\0")
            try:
                h.update((root / name.decode("utf-8", errors="surrogateescape")).read_bytes())
            except OSError:
                h.update(b"<unreadable>")
        digest = h.hexdigest()
    return GitInfo(
        path=str(root),
        commit=commit if isinstance(commit, str) and commit else None,
        dirty=dirty,
        diff_sha256=digest,
        source="git",
    )


def package_source(location: str | None, direct_url: dict[str, Any] | None) -> GitInfo | None:
    """A Python package's source commit: the git work tree holding ``location`` (run from a checkout), else
    pip's PEP 610 record (``direct_url``: an editable install's tree, or the VCS commit it was built from)."""
    if location:
        info = git_info(Path(location))
        if info is not None:
            return info
    if isinstance(direct_url, dict):
        url = str(direct_url.get("url", ""))
        vcs = direct_url.get("vcs_info") or {}
        if url.startswith("file://") and (direct_url.get("dir_info") or {}).get("editable"):
            info = git_info(Path(unquote(urlparse(url).path)))
            if info is not None:
                return info
        if vcs.get("commit_id"):
            return GitInfo(path=url, commit=vcs["commit_id"], dirty=None, source="direct_url")
    return None
