"""The package layers of ``evalpipe/`` (``tools/layers.py``): no package cycle, and no edge climbs the layers
beyond the known ones, which only shrink.

``tools/layers.py`` collapses every ``import`` of ``evalpipe.X`` (module level, inside functions, under
``if TYPE_CHECKING:``) into an edge between first-level packages and ranks the packages (core < config, stats
< artifacts < plugins < resolve < stages, words < analysis < presentation < orchestration < cli).  The package graph
has no cycle — a new one fails here, whatever closes it, a process started by module name (``-m evalpipe.…``)
included.  ``CLIMBING_EDGES`` is a ratchet of edges that go up the order without closing a cycle — empty now: a
new one fails (move the code down instead, or argue its entry here in the same commit).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import layers  # noqa: E402

#: Edges that climb the layer order (no cycle), each to be removed by moving code to where the layers say.
CLIMBING_EDGES: set[tuple[str, str]] = set()


@pytest.fixture(scope="module")
def graph() -> layers.PackageGraph:
    """``evalpipe/``'s package graph, walked once for the module's tests (every file parsed: ~2 s)."""
    return layers.package_graph()


def test_the_package_graph_has_no_cycle(graph: layers.PackageGraph) -> None:
    closing = [f"  {e.source} → {e.target}: {', '.join(e.sites)}" for e in graph.closing_edges()]
    assert graph.cycles() == [], "package cycles, closed by:\n" + "\n".join(closing)


def test_edges_climb_the_layers_only_where_known(graph: layers.PackageGraph) -> None:
    climbing = graph.climbing_edges()
    found = {(e.source, e.target) for e in climbing}
    new = [
        f"  {e.source} → {e.target}: {', '.join(e.sites)}"
        for e in climbing
        if (e.source, e.target) not in CLIMBING_EDGES
    ]
    assert not new, "new edges climb the layers (move the code down instead):\n" + "\n".join(new)
    assert CLIMBING_EDGES - found == set(), (
        f"edges no longer climb: remove them from CLIMBING_EDGES: {sorted(CLIMBING_EDGES - found)}"
    )


def test_every_package_has_a_layer(graph: layers.PackageGraph) -> None:
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


def test_main_prints_the_graph(capsys: pytest.CaptureFixture[str], graph: layers.PackageGraph) -> None:
    assert layers.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"packages: {len(graph.packages)}\n")
    assert "  cli [9] → " in out


def test_plugin_folders_are_imported_only_through_their_face() -> None:
    """Outside ``server/kinds/<x>/`` and ``benchmarks/<x>/`` only the folder's ``__init__`` is imported."""
    assert {"evalpipe.server.kinds.sglang", "evalpipe.server.kinds.router"} <= set(layers.plugin_folders())
    breaches = [f"  {b.site}: {b.target}" for b in layers.face_breaches()]
    assert not breaches, "plugin internals imported from outside their folder:\n" + "\n".join(breaches)


def test_a_face_breach_is_found_in_every_import_form(tmp_path: Path) -> None:
    """A module, a name that is a module of the folder, a function-local and a type-only import, and
    ``import_module`` all count; the face and a name it offers do not, nor the folder's own imports."""
    root = _package(
        tmp_path,
        {
            "server/__init__.py": "",
            "server/kinds/__init__.py": "",
            "server/kinds/eng/__init__.py": "from evalpipe.server.kinds.eng.kind import KIND\n",
            "server/kinds/eng/kind.py": "from evalpipe.server.kinds.eng import flags\nKIND = 1\n",
            "server/kinds/eng/flags.py": "",
            "benchmarks/__init__.py": "",
            "benchmarks/bench/__init__.py": "",
            "benchmarks/bench/data.py": "",
            "ok.py": "from evalpipe.server.kinds.eng import KIND\nimport evalpipe.benchmarks.bench\n",
            "bad.py": (
                "from typing import TYPE_CHECKING\n"
                "from importlib import import_module\n"
                "import evalpipe.server.kinds.eng.kind\n"
                "from evalpipe.server.kinds.eng import flags\n"
                "if TYPE_CHECKING:\n"
                "    from evalpipe.benchmarks.bench.data import X\n"
                "def f():\n"
                "    from evalpipe.benchmarks.bench import data\n"
                "M = import_module('evalpipe.server.kinds.eng.flags')\n"
            ),
        },
    )
    assert layers.plugin_folders(root) == ["evalpipe.benchmarks.bench", "evalpipe.server.kinds.eng"]
    found = sorted((b.site, b.target) for b in layers.face_breaches(root))
    assert found == [
        ("evalpipe/bad.py:3", "evalpipe.server.kinds.eng.kind"),
        ("evalpipe/bad.py:4", "evalpipe.server.kinds.eng.flags"),
        ("evalpipe/bad.py:6", "evalpipe.benchmarks.bench.data.X"),
        ("evalpipe/bad.py:8", "evalpipe.benchmarks.bench.data"),
        ("evalpipe/bad.py:9", "evalpipe.server.kinds.eng.flags"),
    ]
    assert "plugin folders imported past their face: 5" in layers.describe_faces(layers.face_breaches(root))
def test_process_launches_and_module_name_constants_are_edges(tmp_path: Path) -> None:
    """``a`` starts ``b.server`` as a process and ``c`` keeps a command line naming ``d.tool``: both are edges
    (``process-launch``).  A docstring, a logger name, a former module path that no longer exists and a
    constant inside its own package are not."""
    root = _package(
        tmp_path,
        {
            "a.py": 'import sys\nARGV = [sys.executable, "-m", "evalpipe.b.server"]\n',
            "b/__init__.py": "",
            "b/server.py": '"""Started as ``python -m evalpipe.c``."""\nimport logging\nlog = logging.getLogger("evalpipe.c")\n',
            "c.py": 'CMD = "{python} -m evalpipe.d.tool --port 1"\nOLD = "evalpipe.b.gone"\n',
            "d/__init__.py": 'SELF = "evalpipe.d.tool"\nfrom evalpipe import c\n',
            "d/tool.py": "",
        },
    )
    graph = layers.package_graph(root)
    assert set(graph.edges) == {("a", "b"), ("c", "d"), ("d", "c")}
    assert graph.edges[("a", "b")].kind == "process-launch"
    assert graph.edges[("a", "b")].sites == ["evalpipe/a.py:2"]
    assert graph.edges[("c", "d")].kind == "process-launch"
    assert graph.edges[("d", "c")].kind == "runtime"
    assert graph.cycles() == [["c", "d"]]
    assert "2 process-launch only" in layers.describe(graph).splitlines()[1]
