"""The package-level import graph of ``evalpipe/``: which first-level packages import which, and the cycles.

A *package* is a first-level subpackage or module of ``evalpipe/`` (``artifacts``, ``report``, ``errors``,
…); ``evalpipe/__init__.py`` itself (the package face, importing nothing of evalpipe) is not one.  An edge
``a → b`` means some module under ``a`` names ``evalpipe.b`` (or something inside it) in an ``import`` or
``from … import`` statement, or in ``importlib.import_module(...)`` with a string constant or an
``f"evalpipe.b.{…}"`` prefix.  Every such statement counts, wherever it sits: at module level, inside a
function, and under ``if TYPE_CHECKING:``.

A module can also depend on another without importing it: by starting it as a process (``[python, "-m",
"evalpipe.b.m"]``, a ``"python -m evalpipe.b.m"`` command line) or by keeping its name in a constant that
something else imports or launches.  Those count too (``kind == "process-launch"`` when every site behind an
edge is one): any string literal that is exactly an existing module's dotted name (or a package's, with a
trailing dot: an f-string's prefix), and any ``-m evalpipe.…`` inside a string.  Docstrings and other bare
strings, logger names (``getLogger("evalpipe.server")``) and names of modules that do not exist (a former
path kept to refuse it) are words, not edges.

Type-only imports count as full edges.  The question this graph answers is "what must a reader understand
before this package", and a parameter annotated with ``config.models.ServerConfig`` ties a module to that
model as surely as a call does; a layer rule that type-only imports could climb would let the layers be
climbed by adding a ``TYPE_CHECKING`` block.  Each edge also says whether *every* import behind it is
type-only (``kind == "type-only"``), so a loop through type-only edges alone is visible as such.
(``tests/repo/test_import_graph.py`` checks the *module* graph of imports that execute and leaves
``TYPE_CHECKING`` out; this module is the stricter, coarser view.)

The order, lowest first::

    core (errors, hashing, clock, progress, processes, registry, tokenizer) < config (plain data), stats
    < artifacts < plugins (sources, sandbox, recording, server, engines, speed, benchmarks, samplers, selftest) < resolve
    < stages (evalscope_bridge), words < analysis (compare, audit, plan) < presentation (report, explore)
    < orchestration (run, replay) < cli

``config`` sits under ``artifacts`` because the artifact models record config sections (the manifest its
sampling rule, ``speed.json`` its speed settings) and the config, plain data, imports nothing but ``errors``.
Plugins share a layer: an edge between two of them is allowed as long as it closes no cycle.

A cycle is a strongly connected component of more than one package; the edges *closing* it are those of its
edges that do not go down that order (a climbing or sideways edge inside the component): removing them all
leaves the component acyclic.

A plugin with a folder of its own (``server/kinds/<x>/``, ``benchmarks/<x>/``: :data:`PLUGIN_HOMES`) is
imported from outside that folder only through its face, the folder's ``__init__``: :func:`face_breaches`
lists every import of a module below the face from elsewhere (``tests/repo/test_layers.py`` wants none).

    python tools/layers.py            # prints packages, edges, cycles, their closing edges, face breaches
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "evalpipe"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: Layer of each first-level package, lowest first (a package missing here ranks above everything, so a new
#: package is reported until it is placed).
LAYERS: dict[str, int] = {
    # core: leaves every layer may use
    "errors": 0,
    "hashing": 0,
    "clock": 0,
    "progress": 0,
    "processes": 0,
    "registry": 0,
    "tokenizer": 0,
    # the run configuration as plain data (names of plugins are strings), and pure statistics
    "config": 1,
    "stats": 1,
    # versioned artifact models (they record config sections) and their one reader/writer
    "artifacts": 2,
    # plugins: data, execution back ends, servers, benchmarks
    "sources": 3,
    "sandbox": 3,
    "recording": 3,
    "server": 3,
    "speed": 3,
    "numerics": 3,
    "benchmarks": 3,
    "samplers": 3,
    "selftest": 3,
    "engines": 3,
    # the resolve step: a config's plugin names looked up
    "resolve": 4,
    # stages a run goes through; the words every renderer and the audit's findings use
    "evalscope_bridge": 5,
    "words": 5,
    # analysis of finished runs
    "compare": 6,
    "audit": 6,
    "plan": 6,
    # presentation
    "report": 7,
    "explore": 7,
    # orchestration (a run; a recorded run served back and re-run; a published bundle) and the command line
    "run": 8,
    "replay": 8,
    "cli": 9,
}
UNPLACED = max(LAYERS.values()) + 1


@dataclass
class Edge:
    """``source → target`` with every place that makes it (``path:line``) and whether all are type-only."""

    source: str
    target: str
    sites: list[str] = field(default_factory=list)
    type_only: bool = True

    launch_only: bool = False

    @property
    def kind(self) -> str:
        if self.launch_only:
            return "process-launch"
        return "type-only" if self.type_only else "runtime"


def _package_of(dotted: str) -> str | None:
    """``evalpipe.a.b.c`` → ``a``; ``None`` outside evalpipe or for the root package itself."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE or len(parts) < 2 or not parts[1]:
        return None
    return parts[1]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """Every node of ``tree`` with whether it sits in the body of an ``if TYPE_CHECKING:``."""
    todo: list[tuple[ast.AST, bool]] = [(tree, False)]
    while todo:
        node, typing_only = todo.pop()
        yield node, typing_only
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.append((node.test, typing_only))
            todo.extend((n, True) for n in node.body)
            todo.extend((n, typing_only) for n in node.orelse)
            continue
        todo.extend((n, typing_only) for n in ast.iter_child_nodes(node))


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _targets(node: ast.AST, module: str, is_pkg: bool) -> list[str]:
    """The dotted names ``node`` imports (empty for a node that is no import)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.split(".") if is_pkg else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        return [f"{base}.{a.name}" for a in node.names]
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        arg = node.args[0]
        if name != "import_module":
            return []
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return [arg.value]
        if isinstance(arg, ast.JoinedStr) and arg.values:
            head = arg.values[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                return [head.value]
    return []


_DOTTED = re.compile(r"evalpipe(?:\.[A-Za-z_]\w*)+\.?")
_DASH_M = re.compile(r"-m\s+(evalpipe(?:\.[A-Za-z_]\w*)+)")


def _words(tree: ast.AST) -> set[int]:
    """The ids of string constants that name no dependency: docstrings and other bare string statements,
    and logger names (the first argument of ``getLogger``)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        _add_word(node, out)
    return out


def _add_word(node: ast.AST, out: set[int]) -> None:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        out.add(id(node.value))
    elif isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "getLogger":
            out.add(id(node.args[0]))


def _exists(dotted: str, root: Path) -> bool:
    """Whether ``dotted`` (``evalpipe.a.b``, or ``evalpipe.a.`` for a package prefix) is a module or package
    of the package at ``root``."""
    parts = dotted.rstrip(".").split(".")[1:]
    base = root.joinpath(*parts)
    if dotted.endswith("."):
        return (base / "__init__.py").is_file()
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _string_names(node: ast.AST) -> list[str]:
    """The dotted names a string constant could name to launch or look up (whether they exist aside)."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return []
    text = node.value
    return [text] if _DOTTED.fullmatch(text) else _DASH_M.findall(text)


def named_modules(tree: ast.AST, root: Path) -> Iterator[tuple[ast.Constant, str]]:
    """Every module of ``root``'s package that a string literal of ``tree`` names to launch or to look up
    (see the module docstring), with the literal that names it."""
    words = _words(tree)
    candidates = [(n, _string_names(n)) for n in ast.walk(tree) if id(n) not in words]
    yield from _existing(candidates, root)


def _existing(candidates: list[tuple[ast.AST, list[str]]], root: Path) -> Iterator[tuple[ast.Constant, str]]:
    for node, names in candidates:
        for name in names:
            if _exists(name, root):
                assert isinstance(node, ast.Constant)
                yield node, name.rstrip(".")


@dataclass(frozen=True)
class _Scan:
    """What the graph and the face check read of one file, found in one traversal: the nodes that may import
    (``_targets`` reads them; with whether each sits under ``if TYPE_CHECKING:``) and the string literals
    that may name a module (``named_modules``, before asking whether the module exists)."""

    imports: list[tuple[ast.AST, bool]]
    strings: list[tuple[ast.AST, list[str]]]


def _scan(path: Path) -> _Scan:
    """``path``'s ``_Scan``, remembered per process while the file is unchanged (size and mtime): the graph,
    the face check and ``main`` read every file of the package, and a test process asks for them again."""
    stat = path.stat()
    return _scan_unchanged(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _scan_unchanged(path: Path, size: int, mtime_ns: int) -> _Scan:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    imports: list[tuple[ast.AST, bool]] = []
    words: set[int] = set()
    strings: list[tuple[ast.AST, list[str]]] = []
    for node, typing_only in _walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Call):
            imports.append((node, typing_only))
        _add_word(node, words)
        names = _string_names(node)
        if names:
            strings.append((node, names))
    return _Scan(imports, [(n, names) for n, names in strings if id(n) not in words])


def _add_launch_edges(
    edges: dict[tuple[str, str], Edge], scan: _Scan, path: Path, root: Path, packages: list[str]
) -> None:
    """Add the process-launch edges of one module (``path``) to ``edges``; an edge imports make as well
    keeps their kind."""
    source = _package_of(_module_name(path, root))
    for node, target in _existing(scan.strings, root):
        dest = _package_of(target)
        if source is None or dest is None or dest == source or dest not in packages:
            continue
        edge = edges.get((source, dest))
        if edge is None:
            edge = edges[(source, dest)] = Edge(source, dest, type_only=False, launch_only=True)
        site = f"{path.relative_to(root.parent).as_posix()}:{node.lineno}"
        if site not in edge.sites:
            edge.sites.append(site)
        edge.type_only = False


def strongly_connected(nodes: Iterable[str], successors: Callable[[str], Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan 1972), each sorted, in discovery order
    over ``nodes`` sorted: the cycles of an import graph (packages here, modules in
    ``tests/repo/test_import_graph.py``)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    ordered = sorted(nodes)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(successors(v)):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(ordered) + 100))
    try:
        for v in ordered:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


@dataclass
class PackageGraph:
    packages: list[str]
    edges: dict[tuple[str, str], Edge]

    def successors(self, package: str) -> list[str]:
        return sorted(t for (s, t) in self.edges if s == package)

    def cycles(self) -> list[list[str]]:
        """Strongly connected components of more than one package, each sorted, biggest first."""
        return sorted(strongly_connected(self.packages, self.successors), key=lambda c: (-len(c), c))

    def closing_edges(self) -> list[Edge]:
        """The edges inside a cycle that do not go down the layer order: the ones to remove."""
        out: list[Edge] = []
        for component in self.cycles():
            members = set(component)
            for (s, t), edge in sorted(self.edges.items()):
                if s in members and t in members and rank(s) <= rank(t):
                    out.append(edge)
        return out

    def climbing_edges(self) -> list[Edge]:
        """Every edge from a lower layer to a higher one, in a cycle or not."""
        return [e for (s, t), e in sorted(self.edges.items()) if rank(s) < rank(t)]


def rank(package: str) -> int:
    return LAYERS.get(package, UNPLACED)


def package_graph(root: Path = ROOT) -> PackageGraph:
    """The package graph of the package at ``root`` (a directory named ``evalpipe``)."""
    packages = sorted(
        p.stem if p.is_file() else p.name
        for p in root.iterdir()
        if (p.is_file() and p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    )
    edges: dict[tuple[str, str], Edge] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        source = _package_of(module)
        if source is None:
            continue
        scan = _scan(path)
        for node, typing_only in scan.imports:
            for target in _targets(node, module, path.name == "__init__.py"):
                dest = _package_of(target)
                if dest is None or dest == source or dest not in packages:
                    continue
                edge = edges.setdefault((source, dest), Edge(source, dest))
                site = f"{path.relative_to(root.parent).as_posix()}:{getattr(node, 'lineno', 0)}"
                if site not in edge.sites:
                    edge.sites.append(site)
                edge.type_only = edge.type_only and typing_only
                edge.launch_only = False
        _add_launch_edges(edges, scan, path, root, packages)
    for edge in edges.values():
        edge.sites.sort(key=lambda s: (s.rpartition(":")[0], int(s.rpartition(":")[2])))
    return PackageGraph(packages, dict(sorted(edges.items())))


#: Where plugins with a folder of their own live: each ``<home>/<name>/`` holding an ``__init__.py`` is one
#: plugin, and its ``__init__`` is its face — the only module of it imported from outside the folder.
PLUGIN_HOMES: tuple[str, ...] = ("server/kinds", "benchmarks")


@dataclass(frozen=True)
class FaceBreach:
    """An import of a plugin folder's internals (``target``) from outside that folder (``site``)."""

    site: str
    target: str
    folder: str


def plugin_folders(root: Path = ROOT) -> list[str]:
    """Every plugin folder as a dotted package name (``evalpipe.server.kinds.sglang``), sorted."""
    out = []
    for home in PLUGIN_HOMES:
        base = root / home
        if base.is_dir():
            out += [_module_name(d / "__init__.py", root) for d in base.iterdir() if (d / "__init__.py").is_file()]
    return sorted(out)


def _internal(target: str, folders: list[str], root: Path) -> str | None:
    """The plugin folder whose internals ``target`` names (a module below its face), else None.  A name
    imported from the face (``from <face> import X``) is internal only when ``X`` is a module of the folder."""
    for folder in folders:
        if not target.startswith(folder + "."):
            continue
        first = target[len(folder) + 1 :].split(".")[0]
        where = root.parent.joinpath(*folder.split("."))
        if (where / f"{first}.py").is_file() or (where / first / "__init__.py").is_file():
            return folder
    return None


def face_breaches(root: Path = ROOT) -> list[FaceBreach]:
    """Imports (of every kind ``package_graph`` counts) of a plugin folder's internals from outside it."""
    folders = plugin_folders(root)
    out: list[FaceBreach] = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        for node, _ in _scan(path).imports:
            for target in _targets(node, module, path.name == "__init__.py"):
                folder = _internal(target, folders, root)
                if folder is None or module == folder or module.startswith(folder + "."):
                    continue
                site = f"{path.relative_to(root.parent).as_posix()}:{getattr(node, 'lineno', 0)}"
                out.append(FaceBreach(site, target, folder))
    return out


def describe(graph: PackageGraph) -> str:
    cycles = graph.cycles()
    lines = [
        f"packages: {len(graph.packages)}",
        f"edges: {len(graph.edges)} ({sum(not e.type_only for e in graph.edges.values())} runtime, "
        f"{sum(e.launch_only for e in graph.edges.values())} process-launch only)",
        f"cycles (SCCs > 1): {len(cycles)}",
        f"biggest SCC: {max((len(c) for c in cycles), default=0)}",
        "",
        "graph (package [layer] → imports):",
    ]
    for p in graph.packages:
        lines.append(f"  {p} [{rank(p)}] → {', '.join(graph.successors(p)) or '-'}")
    for c in cycles:
        lines.append("")
        lines.append(f"cycle of {len(c)}: {', '.join(c)}")
    closing = graph.closing_edges()
    if closing:
        lines.append("")
        lines.append("edges closing them (not going down the layers):")
        for e in closing:
            lines.append(f"  {e.source} → {e.target} ({e.kind}): {', '.join(e.sites)}")
    unplaced = [p for p in graph.packages if p not in LAYERS]
    if unplaced:
        lines.append("")
        lines.append(f"packages without a layer: {', '.join(unplaced)}")
    return "\n".join(lines)


def describe_faces(breaches: list[FaceBreach]) -> str:
    lines = [f"plugin folders imported past their face: {len(breaches)}"]
    lines += [f"  {b.site}: {b.target} (import {b.folder} instead)" for b in breaches]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    print(describe(package_graph()))
    print()
    print(describe_faces(face_breaches()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
