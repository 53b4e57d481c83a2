"""The package layers of ``evalpipe/`` (``tools/layers.py``): the package graph has no cycle it did not have
before, and the checker sees every kind of import.

``tools/layers.py`` collapses every ``import`` of ``evalpipe.X`` (module level, inside functions, under
``if TYPE_CHECKING:``) into an edge between first-level packages and ranks the packages in the order of issue
38 (core < artifacts < stats < config < plugins < stages < analysis < presentation < run < cli).  The package
graph still has one cycle; ``CLOSING_EDGES`` is a ratchet: the exact set of edges inside it that do not go
down that order.  A new one fails here (put the code where the layers say instead); a removed one fails here
too, so the set is shrunk in the same commit and cannot grow back.

What holds the remaining cycle together is by design, for now: ``artifacts → config → benchmarks/server →
artifacts``.  The manifest embeds ``SamplingPlan``, whose ``benchmark`` and ``stratify_by`` are literals built
from the benchmark registry (``audits/manifest.schema.json`` lists the registered names), and ``ServerConfig``
validates by asking its kind; the benchmarks and the server kinds write and read artifact models.  Every
plugin that imports ``artifacts`` and is imported by one of those sits in the same component, so the sideways
edges among plugins (``server ↔ fleet``, ``benchmarks ↔ sources`` …) are listed too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import layers  # noqa: E402

#: Edges that close a package cycle, each to be removed by moving code to where the layers say it belongs.
CLOSING_EDGES: set[tuple[str, str]] = {
    ("artifacts", "config"),
    ("benchmarks", "sandbox"),
    ("benchmarks", "sources"),
    ("benchmarks", "speed"),
    ("config", "benchmarks"),
    ("config", "server"),
    ("fleet", "server"),
    ("recording", "fleet"),
    ("server", "fleet"),
    ("server", "recording"),
    ("sources", "benchmarks"),
    ("speed", "server"),
}


def test_package_cycles_are_closed_only_by_the_known_edges() -> None:
    closing = layers.package_graph().closing_edges()
    found = {(e.source, e.target) for e in closing}
    new = [
        f"  {e.source} → {e.target}: {', '.join(e.sites)}"
        for e in closing
        if (e.source, e.target) not in CLOSING_EDGES
    ]
    assert not new, "new edges close a package cycle (move the code down the layers instead):\n" + "\n".join(
        new
    )
    assert CLOSING_EDGES - found == set(), (
        f"edges no longer close a cycle: remove them from CLOSING_EDGES: {sorted(CLOSING_EDGES - found)}"
    )


def test_one_package_cycle_remains() -> None:
    assert layers.package_graph().cycles() == [
        ["artifacts", "benchmarks", "config", "fleet", "recording", "sandbox", "server", "sources", "speed"]
    ]


def test_every_package_has_a_layer() -> None:
    graph = layers.package_graph()
    assert [p for p in graph.packages if p not in layers.LAYERS] == []
    assert set(layers.LAYERS) - set(graph.packages) == set(), "LAYERS names packages that are gone"


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "evalpipe"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_the_walk_counts_function_local_and_type_checking_imports(tmp_path: Path) -> None:
    """A synthetic package whose cycle ``a → b → c → a`` is closed by an import inside a function and one
    under ``TYPE_CHECKING``: both are edges, and the type-only one says so."""
    root = _package(
        tmp_path,
        {
            "a/__init__.py": "",
            "a/x.py": "import evalpipe.b.y\n",
            "b/__init__.py": "",
            "b/y.py": "def f():\n    from evalpipe.c import z\n",
            "c/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evalpipe.a import x\n",
            "c/z.py": "from importlib import import_module\nM = import_module(f'evalpipe.d.{1}')\n",
            "d.py": "",
        },
    )
    graph = layers.package_graph(root)
    assert graph.packages == ["a", "b", "c", "d"]
    assert set(graph.edges) == {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}
    assert graph.edges[("c", "a")].kind == "type-only"
    assert graph.edges[("b", "c")].kind == "runtime"
    assert graph.edges[("b", "c")].sites == ["evalpipe/b/y.py:2"]
    assert graph.cycles() == [["a", "b", "c"]]
    assert "cycles (SCCs > 1): 1" in layers.describe(graph)


def test_closing_edges_are_those_that_do_not_go_down_the_layers(tmp_path: Path) -> None:
    """``cli → run → config`` goes down; ``config → cli`` climbs and closes the cycle."""
    root = _package(
        tmp_path,
        {
            "cli.py": "from evalpipe import run\n",
            "run.py": "from evalpipe.config import X\n",
            "config.py": "from evalpipe.cli import Y\n",
            "errors.py": "",
        },
    )
    graph = layers.package_graph(root)
    assert graph.cycles() == [["cli", "config", "run"]]
    assert [(e.source, e.target) for e in graph.closing_edges()] == [("config", "cli")]
    assert [(e.source, e.target) for e in graph.climbing_edges()] == [("config", "cli")]


def test_main_prints_the_graph(capsys: pytest.CaptureFixture[str]) -> None:
    assert layers.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"packages: {len(layers.package_graph().packages)}\n")
    assert "  cli [9] → " in out
