"""``RunDir`` names every file of a run directory, and docs/signoff.md's "What a run directory holds" lists
every name it spells: a file added to ``RunDir`` without a row there (or a row naming a file ``RunDir`` does
not) fails here."""

from __future__ import annotations

import re
from pathlib import Path

from evalpipe.artifacts import RunDir, ServerFiles

REPO = Path(__file__).resolve().parents[2]
SECTION = "### What a run directory holds"


def named_by_rundir() -> dict[str, str]:
    """Each ``RunDir`` property that is a path → that path, relative to the run directory."""
    at = RunDir(Path("."))
    out = {}
    for name, value in vars(RunDir).items():
        if isinstance(value, property):
            path = getattr(at, name)
            if isinstance(path, Path):
                out[name] = path.as_posix()
    return out


def table_paths() -> set[str]:
    text = (REPO / "docs" / "signoff.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {token.rstrip("/") for row in rows for token in re.findall(r"`([^`]+)`", row.split(" | ")[0])}


def documented(path: str, listed: set[str]) -> bool:
    """``path`` is a row's name, or the folder a row's name lies in (``server`` for ``server/launch.json``)."""
    return any(entry == path or entry.startswith(path + "/") for entry in listed)


def test_every_file_rundir_names_has_a_row_in_the_docs() -> None:
    listed = table_paths()
    missing = sorted(
        f"{name}: {path}" for name, path in named_by_rundir().items() if not documented(path, listed)
    )
    assert not missing, f"RunDir names files docs/signoff.md's {SECTION!r} does not list:\n" + "\n".join(
        missing
    )


def test_every_row_names_a_file_rundir_spells() -> None:
    names = set(named_by_rundir().values())
    server_files = {
        f"server/workers/<n>/{getattr(ServerFiles(Path()), n).name}"
        for n, v in vars(ServerFiles).items()
        if isinstance(v, property)
    }
    unknown = sorted(
        entry
        for entry in table_paths()
        if entry not in names
        and entry not in server_files
        and not any(entry.startswith(n + "/") for n in names if "." not in Path(n).name)
    )
    assert not unknown, "docs/signoff.md lists run files RunDir does not name:\n" + "\n".join(unknown)
