"""Every artifact model lives in ``evalpipe/artifacts/schema/`` and is imported from there only.

A model reachable from two modules (a stage's module re-exporting it, a schema module re-exporting another's)
lets readers drift apart on where it is defined and hides which package a module really depends on.  Read from
the source (no import): each class defined at module level in ``artifacts/schema/*.py`` has that module as its
one import path, in evalpipe, its tests and its tools; and no class deriving from ``Artifact`` or ``Row`` is
defined anywhere else.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers.source_trees import parsed

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "evalpipe" / "artifacts" / "schema"
TREES = ("evalpipe", "tests", "tools", "perf")
BASES = {"Artifact", "Row"}


def _homes(schema: Path = SCHEMA) -> dict[str, str]:
    """Class name → the schema module that defines it."""
    out: dict[str, str] = {}
    for path in sorted(schema.glob("*.py")):
        module = "evalpipe.artifacts.schema" + ("" if path.stem == "__init__" else f".{path.stem}")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                assert node.name not in out, f"{node.name} defined in {out[node.name]} and {module}"
                out[node.name] = module
    return out


def _sources(repo: Path = REPO) -> list[Path]:
    return [p for tree in TREES for p in sorted((repo / tree).rglob("*.py"))]


def _tree(path: Path) -> ast.Module:
    return parsed(path)  # the trees of tests/ are the tier scan's, parsed at collection


def other_paths(homes: dict[str, str], paths: list[Path], repo: Path = REPO) -> list[str]:
    """``file:line`` of every ``from evalpipe.… import M`` of a schema model ``M`` from a module not its home."""
    out = []
    named = "|".join(map(re.escape, homes))
    names = re.compile(rf"^\s*(?:from|import) .*\b(?:{named})\b|^\s*from evalpipe\S* import \($", re.M)
    for path in paths:
        if not names.search(path.read_text(encoding="utf-8")):  # no import line names a model: nothing to parse
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("evalpipe"):
                for alias in node.names:
                    home = homes.get(alias.name)
                    if home is not None and node.module != home:
                        out.append(f"{path.relative_to(repo)}:{node.lineno}: {alias.name} from {node.module} ({home})")
    return out


def models_elsewhere(paths: list[Path], repo: Path = REPO, schema: Path = SCHEMA) -> list[str]:
    """``file:line`` of every class deriving from ``Artifact`` or ``Row`` outside ``artifacts/schema``."""
    out = []
    for path in paths:
        if path.parent == schema or not path.is_relative_to(repo / "evalpipe"):
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & BASES:
                    out.append(f"{path.relative_to(repo)}:{node.lineno}: {node.name}")
    return out


def test_every_model_is_imported_from_its_schema_module() -> None:
    found = other_paths(_homes(), _sources())
    assert not found, "a schema model imported from a second path (import it from its home):\n" + "\n".join(found)


def test_every_artifact_model_is_defined_in_the_schema_package() -> None:
    found = models_elsewhere(_sources())
    assert not found, "artifact models outside evalpipe/artifacts/schema:\n" + "\n".join(found)


def test_the_checks_find_a_re_export_and_a_model_outside(tmp_path: Path) -> None:
    """A synthetic repository: a stage module re-exporting a schema model and defining one of its own."""
    schema = tmp_path / "evalpipe" / "artifacts" / "schema"
    schema.mkdir(parents=True)
    (schema / "speed.py").write_text("class Base: ...\nclass SpeedRow(Base): ...\n")
    stage = tmp_path / "evalpipe" / "speed.py"
    stage.write_text(
        "from evalpipe.artifacts.schema.speed import SpeedRow as SpeedRow\n"
        "from evalpipe.artifacts.schema.base import Artifact\n"
        "class Barrier(Artifact): ...\n"
    )
    user = tmp_path / "tests" / "test_x.py"
    user.parent.mkdir()
    user.write_text(
        "from evalpipe.speed import SpeedRow\nfrom evalpipe.artifacts.schema.speed import SpeedRow\n"
        "def f():\n    from evalpipe.speed import (\n        SpeedRow,\n    )\n"
    )
    homes = _homes(schema)
    paths = [stage, user]
    assert other_paths(homes, paths, tmp_path) == [
        "tests/test_x.py:1: SpeedRow from evalpipe.speed (evalpipe.artifacts.schema.speed)",
        "tests/test_x.py:4: SpeedRow from evalpipe.speed (evalpipe.artifacts.schema.speed)",
    ]
    assert models_elsewhere(paths, tmp_path, schema) == ["evalpipe/speed.py:3: Barrier"]
