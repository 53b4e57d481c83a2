"""Every relative link and every repository path the docs name exists.

The docs are ``README.md`` and ``docs/*.md``.  Checked:

- a Markdown link ``[text](target)`` that is not a URL: ``target`` resolved against the directory of the
  page, and its ``#fragment``, when it points into a Markdown page, a heading of that page (GitHub's anchor:
  lower case, punctuation dropped, spaces as hyphens);
- a path in backticks, or a word of a fenced code block, whose first part is an entry at the top of the
  repository (``configs/glm-fp8.yaml``, ``tools/gpu/``, ``perf/results/…``): from the repository's root;
- a path in backticks ending in ``.py`` whose first part is a package of ``evalpipe/`` (``stats/power.py``):
  from ``evalpipe/``.

Not checked, on purpose: paths with a placeholder (``<name>``, ``{x}``, ``*``, ``…``), paths outside the
repository (``../shared/datasets``) and paths of a run directory (``server/server.log``), which name files
a run writes, not files of this repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"\]\(([^)\s]+)\)")
TICKED = re.compile(r"`([^`\s]+)`")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
PLACEHOLDER = set("<>{}*…|$=")
URL = re.compile(r"^[a-z][a-z0-9+.-]*:")


def _top_entries() -> set[str]:
    """The repository's own top-level names (what git tracks): build outputs a doc names (``.venv/``,
    ``.gpu/sgl1`` made by a command beside it) are not checked, whether or not this checkout has them."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {line.split("/", 1)[0] for line in tracked.splitlines() if line}


def _packages() -> set[str]:
    return {p.name for p in (ROOT / "evalpipe").iterdir() if p.is_dir() or p.suffix == ".py"}


def anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {anchor(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", FENCE.sub("", text), re.MULTILINE)}


def missing_links(page: Path, text: str) -> list[str]:
    out = []
    for m in LINK.finditer(text):
        target = m.group(1)
        if URL.match(target):
            continue
        name, _, fragment = target.partition("#")
        path = page.parent / name if name else page
        if not path.exists():
            out.append(target)
        elif fragment and path.suffix == ".md":
            heads = anchors(text if path == page else path.read_text(encoding="utf-8"))
            if fragment not in heads:
                out.append(target)
    return out


def _missing_path(token: str, top: set[str], packages: set[str], *, python_in_package: bool) -> bool:
    token = token.strip("\"'()[],;:").rstrip(".")
    if not token or any(c in PLACEHOLDER for c in token) or "/" not in token:
        return False
    first = token.split("/")[0]
    if first in top:
        return not (ROOT / token).exists()
    if python_in_package and token.endswith(".py") and first in packages:
        return not (ROOT / "evalpipe" / token).exists()
    return False


def missing_paths(text: str, top: set[str], packages: set[str]) -> list[str]:
    out = []
    fences = FENCE.findall(text)
    prose = FENCE.sub("", text)
    for m in TICKED.finditer(prose):
        if _missing_path(m.group(1), top, packages, python_in_package=True):
            out.append(m.group(1))
    for block in fences:
        for word in block.split()[1:]:
            if _missing_path(word, top, packages, python_in_package=False):
                out.append(word)
    return out


def test_every_link_and_path_the_docs_name_exists() -> None:
    top, packages = _top_entries(), _packages()
    missing = []
    for page in DOCS:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT)
        missing += [f"{name}: link {t}" for t in missing_links(page, text)]
        missing += [f"{name}: path {t}" for t in missing_paths(text, top, packages)]
    assert not missing, "the docs name what the repository does not hold:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_link_and_path() -> None:
    top, packages = _top_entries(), _packages()
    text = (
        "## Contents\nSee [gone](docs/no-such-page.md), [here](#contents), [nowhere](#no-such-heading), "
        "[site](https://example.org/x), [ok](docs/signoff.md#the-recipe) and [off](docs/signoff.md#gone).  `configs/no-such.yaml`, `stats/no_such.py`, `server/server.log`, "
        "`tests/<package>/test_*.py`, `../shared/datasets`.\n```bash\nevalpipe run configs/nope.yaml\n```\n"
    )
    assert missing_links(ROOT / "README.md", text) == [
        "docs/no-such-page.md",
        "#no-such-heading",
        "docs/signoff.md#gone",
    ]
    assert missing_paths(text, top, packages) == [
        "configs/no-such.yaml",
        "stats/no_such.py",
        "configs/nope.yaml",
    ]
