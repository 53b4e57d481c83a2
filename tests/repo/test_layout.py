"""The folders are what the README says: its architecture list names every package of ``evalpipe/`` (and
no package that is gone), and the top of ``evalpipe/`` holds only the package face and the leaves the README
names (``errors``, ``hashing``, ``clock``, ``progress``, ``registry``, ``tokenizer``).  A new package or a loose
module fails here until the README's list says where it sits in the run."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "evalpipe"
TOP_LEVEL_LEAVES = {
    "__init__.py", "errors.py", "hashing.py", "clock.py", "progress.py", "registry.py", "tokenizer.py"
}


def _readme_packages() -> set[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return set(re.findall(r"^- `evalpipe/([a-z_]+)/`[ :]", text, flags=re.M))


def test_readme_architecture_list_names_every_package_and_only_those() -> None:
    on_disk = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    listed = _readme_packages()
    assert listed, "the README's architecture list (items '- `evalpipe/<pkg>/` …') was not found"
    assert on_disk - listed == set(), (
        f"packages missing from the README architecture list: {on_disk - listed}"
    )
    assert listed - on_disk == set(), (
        f"README architecture list names packages that do not exist: {listed - on_disk}"
    )


def test_only_the_stated_leaves_sit_at_the_top_of_the_package() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose - TOP_LEVEL_LEAVES == set(), (
        f"loose modules at the top of evalpipe/: {sorted(loose - TOP_LEVEL_LEAVES)}"
    )
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for leaf in sorted(TOP_LEVEL_LEAVES - {"__init__.py"}):
        assert f"`{leaf}`" in text, f"the README does not say why {leaf} stays at the top of evalpipe/"
