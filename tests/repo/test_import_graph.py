"""The import graph of ``evalpipe/`` has no cycle.

Every import that runs counts: ``import``/``from … import`` at module level and inside functions alike
(importing ``evalpipe.a.b`` runs ``evalpipe/a/__init__.py`` first: that is an edge too), and every
``importlib.import_module(...)`` call: a string constant is that module; an f-string
``f"evalpipe.pkg.{x}"`` (the registries' built-ins: ``evalpipe.benchmarks`` over ``_MODULES``,
``evalpipe.server.kinds.registry`` over ``BuiltinKind``) stands for every direct submodule of
``evalpipe.pkg`` — an over-approximation, so no registered module can hide an edge.  A call whose target the
walk cannot read must be listed in ``NON_LITERAL_IMPORTS`` with the reason it cannot reach back into
evalpipe.

Imports under ``if TYPE_CHECKING:`` never execute, so the first test leaves them out; a second counts them too
(a type a module names must be understood before it), as ``tools/layers.py``, the package view, does.

A cycle between two modules means neither can be understood (or imported) without the other; the fix is to
move the shared piece to where both can import it, never to hide an import inside a function.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from helpers.source_trees import parsed

PACKAGE = "evalpipe"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE
sys.path.insert(0, str(ROOT.parent / "tools"))

import layers  # noqa: E402  (tools/layers.py: the Tarjan the package graph uses too)

UNREADABLE = "<unreadable>"
#: Modules calling ``import_module`` with a target that is not in the source, each with why the target is
#: never an evalpipe module (``test_non_literal_import_targets_are_outside_evalpipe`` checks the registry).
NON_LITERAL_IMPORTS = {
    "evalpipe.registry": "installed packages' entry points and EVALPIPE_BENCHMARK_MODULES: plugin modules outside "
    "evalpipe (the built-ins are imported by the registries' owners, with an f-string the walk reads)",
    "evalpipe.benchmarks.base": "Benchmark.meta.evalscope_module: the EvalScope adapter module a benchmark names",
    "evalpipe.evalscope_bridge.patches": "Benchmark.meta.nltk_module: EvalScope's module holding the NLTK check",
}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _ancestors(name: str) -> list[str]:
    """The packages Python imports before ``name`` (``a``, ``a.b`` for ``a.b.c``): their ``__init__`` runs."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The evalpipe module ``name`` refers to (a submodule, else its closest enclosing package/module)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def _import_module_targets(call: ast.Call, known: dict[str, Path]) -> list[str]:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "import_module" or not call.args:
        return []
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.JoinedStr) and len(arg.values) == 2:
        head, tail = arg.values
        if (
            isinstance(head, ast.Constant)
            and isinstance(head.value, str)
            and isinstance(tail, ast.FormattedValue)
        ):
            prefix = head.value
            if prefix.startswith(PACKAGE + ".") and prefix.endswith("."):
                return [m for m in known if m.startswith(prefix) and "." not in m[len(prefix) :]]
    return [UNREADABLE]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, type_checking: bool) -> list[ast.AST]:
    """Every node of ``tree``; the bodies of ``if TYPE_CHECKING:`` only when ``type_checking``."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def import_graph(
    unreadable: set[str] | None = None, root: Path = ROOT, *, type_checking: bool = False
) -> dict[str, set[str]]:
    """``module → modules it imports`` over every module under ``root`` (a package named ``evalpipe``);
    with ``type_checking`` the imports under ``if TYPE_CHECKING:`` too."""
    known = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in known.items():
        tree = parsed(path)
        is_pkg = path.name == "__init__.py"
        own = {mod, *_ancestors(mod)}  # already imported when ``mod`` runs
        for node in _nodes(tree, type_checking):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" for a in node.names]  # resolved to a submodule when it is one
            elif isinstance(node, ast.Call):
                targets = _import_module_targets(node, known)
            for t in targets:
                if t == UNREADABLE:
                    if unreadable is not None:
                        unreadable.add(mod)
                    continue
                if t != PACKAGE and not t.startswith(PACKAGE + "."):
                    continue
                dep = _resolve(t, known)
                if dep is not None and dep != mod:
                    graph[mod].add(dep)
                    graph[mod].update(a for a in _ancestors(dep) if a in known and a not in own)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, each sorted (``tools/layers.py``'s Tarjan, the
    one the package graph uses)."""
    return layers.strongly_connected(graph, lambda v: graph[v])


def _path(graph: dict[str, set[str]], component: list[str]) -> str:
    """One closed walk through ``component`` (``a → b → a``), to say where the cycle is."""
    members = set(component)
    start = component[0]
    walk = [start]
    seen = {start}
    while True:
        nxt = sorted(graph[walk[-1]] & members)
        step = next((w for w in nxt if w not in seen), None) or next(w for w in nxt)
        walk.append(step)
        if step in seen:
            return " → ".join(walk[walk.index(step) :])
        seen.add(step)


@pytest.fixture(scope="module")
def evalpipe_walk() -> tuple[dict[str, set[str]], set[str]]:
    """``evalpipe/``'s import graph and the modules whose ``import_module`` target the walk cannot read, from one
    walk shared by the module's tests (every file parsed)."""
    unreadable: set[str] = set()
    return import_graph(unreadable), unreadable


def test_no_import_cycle(evalpipe_walk: tuple[dict[str, set[str]], set[str]]) -> None:
    graph = evalpipe_walk[0]
    found = cycles(graph)
    assert not found, "import cycles in evalpipe/:\n" + "\n".join(_path(graph, c) for c in found)


def test_every_import_module_target_is_readable_or_listed(
    evalpipe_walk: tuple[dict[str, set[str]], set[str]],
) -> None:
    unreadable = evalpipe_walk[1]
    assert unreadable == set(NON_LITERAL_IMPORTS), (
        "import_module with a target the walk cannot read: make it a literal (or f'evalpipe.pkg.{name}'), "
        "or list the module in NON_LITERAL_IMPORTS with the reason it cannot reach back into evalpipe"
    )


def test_non_literal_import_targets_are_outside_evalpipe() -> None:
    """What NON_LITERAL_IMPORTS claims, checked on the registry as it is."""
    from evalpipe.benchmarks import REGISTRY

    named = [m for b in REGISTRY.values() for m in (b.meta.evalscope_module, b.meta.nltk_module) if m]
    assert not [m for m in named if m == PACKAGE or m.startswith(PACKAGE + ".")]


def test_registries_f_string_imports_reach_every_registered_module(
    evalpipe_walk: tuple[dict[str, set[str]], set[str]],
) -> None:
    graph = evalpipe_walk[0]
    direct = {m for m in graph if m.startswith("evalpipe.server.kinds.") and m.count(".") == 3}
    assert "evalpipe.server.kinds.sglang" in graph["evalpipe.server.kinds.registry"]  # a folder's face
    assert "evalpipe.server.kinds.sglang.kind" in graph["evalpipe.server.kinds.sglang"]  # offers its KIND
    assert direct - {"evalpipe.server.kinds.registry"} <= graph["evalpipe.server.kinds.registry"]
    assert {"evalpipe.benchmarks.gsm8k", "evalpipe.benchmarks.live_code_bench"} <= graph[
        "evalpipe.benchmarks"
    ]


def test_the_walk_sees_function_level_type_checking_and_import_module_edges(tmp_path: Path) -> None:
    """A synthetic package whose only cycle runs through an ``import_module`` f-string, an import inside a
    function and one under ``TYPE_CHECKING``: the walk finds it when asked to read TYPE_CHECKING blocks,
    and finds none when not (or without the back edge)."""
    pkg = tmp_path / PACKAGE
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text(
        "from importlib import import_module\n_M = ('a',)\nX = [import_module(f'evalpipe.sub.{m}') for m in _M]\n"
    )
    (pkg / "sub" / "a.py").write_text("def f():\n    from evalpipe.sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "import typing\nif typing.TYPE_CHECKING:\n    import evalpipe.sub\nelse:\n    import evalpipe.c\n"
    )
    (pkg / "c.py").write_text("import importlib\nimportlib.import_module(NAME)\n")
    assert import_graph(root=pkg)["evalpipe.sub.b"] == {"evalpipe.c"}
    assert cycles(import_graph(root=pkg)) == []
    unreadable: set[str] = set()
    graph = import_graph(unreadable, root=pkg, type_checking=True)
    assert graph["evalpipe.sub"] == {"evalpipe.sub.a", "evalpipe.sub.b"}
    assert graph["evalpipe.sub.a"] == {"evalpipe.sub.b"}
    assert graph["evalpipe.sub.b"] == {"evalpipe.sub", "evalpipe.c"}
    assert unreadable == {"evalpipe.c"}
    assert cycles(graph) == [["evalpipe.sub", "evalpipe.sub.a", "evalpipe.sub.b"]]
    assert _path(graph, cycles(graph)[0]) == "evalpipe.sub → evalpipe.sub.a → evalpipe.sub.b → evalpipe.sub"
    (pkg / "sub" / "b.py").write_text("")
    assert cycles(import_graph(root=pkg, type_checking=True)) == []


def test_importing_a_submodule_runs_its_package_init(tmp_path: Path) -> None:
    """``import evalpipe.p.x`` runs ``evalpipe/p/__init__.py``: a cycle closed only by what that file imports
    is a cycle (the one ``sources/__init__.py`` used to hide behind a lazy ``__getattr__``)."""
    pkg = tmp_path / PACKAGE
    (pkg / "p").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "p" / "__init__.py").write_text("from evalpipe import d\n")
    (pkg / "p" / "x.py").write_text("from evalpipe.p import y\n")
    (pkg / "p" / "y.py").write_text("")
    (pkg / "d.py").write_text("from evalpipe.p.x import NAME\n")
    graph = import_graph(root=pkg)
    assert graph["evalpipe.d"] == {"evalpipe.p.x", "evalpipe.p"}
    assert graph["evalpipe.p.x"] == {"evalpipe.p.y"}  # its own package is already imported
    assert cycles(graph) == [["evalpipe.d", "evalpipe.p"]]


def test_no_import_cycle_with_type_only_imports() -> None:
    """Imports under ``if TYPE_CHECKING:`` close no module cycle either: a type a module names is something a
    reader must understand before it (a run's plan and its stages were such a loop)."""
    graph = import_graph(type_checking=True)
    found = cycles(graph)
    assert not found, "module cycles through type-only imports:\n" + "\n".join(_path(graph, c) for c in found)
