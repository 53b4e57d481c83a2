"""The size of every function in ``evalpipe/``: its parameters and its lines, against the house limits.

A function over :data:`MAX_PARAMS` parameters or :data:`MAX_LINES` lines is hard to call correctly and hard to
read in one sitting: a long signature wants a parameter object (a design, a request), a long body wants its
steps named as functions.  The few that stay over a limit are declared, each with its reason and the size it
may not grow past, in ``tools/function_limits.toml`` — the one list; ``tests/repo/test_function_limits.py``
fails on any other breach, on an entry that grew past its size and on an entry no longer needed.

How a function is measured (from the source's syntax tree, nothing imported):

* *parameters*: positional-only, ordinary and keyword-only parameters plus ``*args`` and ``**kwargs``, less
  a leading ``self`` or ``cls``;
* *lines*: ``end_lineno - lineno + 1`` of the ``def`` (decorators excluded, docstring included);
* *name*: ``module:qualname`` with ``<locals>`` left out, e.g. ``evalpipe.compare.paired:compare_runs`` or
  ``evalpipe.run.variants:VariantRunner.run``.

    python tools/function_limits.py            # the totals, the largest functions and modules, the breaches
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "evalpipe"
EXCEPTIONS = REPO / "tools" / "function_limits.toml"

#: The most parameters a function may take (``self``/``cls`` not counted).
MAX_PARAMS = 8
#: The most lines a function may span.
MAX_LINES = 80


@dataclass(frozen=True)
class Function:
    """One ``def`` (or ``async def``) with its measured size."""

    name: str  # module:qualname
    path: str  # relative to the repository
    lineno: int
    params: int
    lines: int


    def size(self, limit: str) -> int:
        """The function's size in ``limit``'s unit ("params" or "lines")."""
        return self.params if limit == "params" else self.lines


@dataclass(frozen=True)
class Exception_:
    """One declared exception from the list: the function, which limit it may exceed, the size it may not grow
    past, and why it stays over."""

    name: str
    limit: str  # "params" or "lines"
    at_most: int
    reason: str


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _count_params(node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    count = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    if in_class and names and names[0] in ("self", "cls"):
        count -= 1
    return count


Def = ast.FunctionDef | ast.AsyncFunctionDef


def _walk(node: ast.AST, prefix: str, in_class: bool) -> Iterator[tuple[str, Def, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = f"{prefix}{child.name}"
            yield qual, child, in_class
            yield from _walk(child, qual + ".", False)
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, f"{prefix}{child.name}.", True)
        else:
            yield from _walk(child, prefix, in_class)


def functions(root: Path = PACKAGE) -> list[Function]:
    """Every function under ``root`` (a package directory), in file order; names and paths relative to the
    directory holding it."""
    base = root.parent
    found: list[Function] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = _module_name(path, base)
        for qual, node, in_class in _walk(tree, "", False):
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            found.append(
                Function(
                    name=f"{module}:{qual}",
                    path=str(path.relative_to(base)),
                    lineno=node.lineno,
                    params=_count_params(node, in_class),
                    lines=end - node.lineno + 1,
                )
            )
    return found


def module_lines(root: Path = PACKAGE) -> dict[str, int]:
    """Lines per module under ``root``."""
    return {
        str(p.relative_to(root.parent)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(root.rglob("*.py"))
    }


def exceptions(path: Path = EXCEPTIONS) -> list[Exception_]:
    """The declared exceptions; each entry must name a function, a limit, the size it may not grow past and a
    reason (a ``ValueError`` naming the entry otherwise)."""
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    found: list[Exception_] = []
    for entry in data.get("exception", []):
        name = entry.get("function", "?")
        if set(entry) != {"function", "limit", "at_most", "reason"}:
            raise ValueError(f"{path}: {name}: an entry has exactly function, limit, at_most and reason")
        limit = entry["limit"]
        if limit not in ("params", "lines"):
            raise ValueError(f"{path}: {name}: limit must be 'params' or 'lines', not {limit!r}")
        reason = str(entry["reason"]).strip()
        if not reason:
            raise ValueError(f"{path}: {name}: an exception needs its reason")
        found.append(Exception_(name=name, limit=limit, at_most=int(entry["at_most"]), reason=reason))
    return found


def breaches(funcs: list[Function]) -> list[tuple[Function, str]]:
    """Every (function, limit) pair where the function exceeds that limit."""
    out: list[tuple[Function, str]] = []
    for f in funcs:
        if f.params > MAX_PARAMS:
            out.append((f, "params"))
        if f.lines > MAX_LINES:
            out.append((f, "lines"))
    return out


def problems(funcs: list[Function], declared: list[Exception_]) -> list[str]:
    """One line per breach the list does not declare, per declared function that grew past its ``at_most``,
    and per entry no longer needed (the function is gone or back within the limit: remove the entry)."""
    by_name: dict[str, Function] = {}
    for f in funcs:
        by_name.setdefault(f.name, f)
    allowed = {(e.name, e.limit): e for e in declared}
    out: list[str] = []
    for f, limit in breaches(funcs):
        entry = allowed.get((f.name, limit))
        if entry is None:
            out.append(f"{f.name}: {f.size(limit)} {limit} ({f.path}:{f.lineno}), over the limit and not declared")
        elif f.size(limit) > entry.at_most:
            out.append(f"{f.name}: {f.size(limit)} {limit}, grown past its declared {entry.at_most}")
    cap = {"params": MAX_PARAMS, "lines": MAX_LINES}
    for e in declared:
        found = by_name.get(e.name)
        if found is None:
            out.append(f"{e.name}: declared over its {e.limit} limit but no such function (remove the entry)")
        elif found.size(e.limit) <= cap[e.limit]:
            out.append(f"{e.name}: {found.size(e.limit)} {e.limit}, within the limit now (remove the entry)")
    return out


def main() -> int:
    funcs = functions()
    mods = module_lines()
    declared = exceptions()
    print(f"{len(funcs)} functions in {len(mods)} modules")
    print(f"  > {MAX_PARAMS} parameters: {sum(f.params > MAX_PARAMS for f in funcs)}")
    print(f"  > {MAX_LINES} lines: {sum(f.lines > MAX_LINES for f in funcs)}")
    print(f"  > 100 lines: {sum(f.lines > 100 for f in funcs)}")
    print("largest functions (lines):")
    for f in sorted(funcs, key=lambda f: -f.lines)[:10]:
        print(f"  {f.lines:4d}  {f.name}  ({f.path}:{f.lineno})")
    print("most parameters:")
    for f in sorted(funcs, key=lambda f: -f.params)[:10]:
        print(f"  {f.params:4d}  {f.name}  ({f.path}:{f.lineno})")
    print("largest modules (lines):")
    for path, n in sorted(mods.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {n:5d}  {path}")
    print(f"declared exceptions (tools/function_limits.toml): {len(declared)}")
    found = problems(funcs, exceptions())
    print(f"problems: {len(found)}")
    for line in found:
        print(f"  {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
