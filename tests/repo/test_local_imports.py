"""Imports inside functions in ``evalpipe/`` say why, and their number only falls.

An import inside a function hides a dependency from a reader of the module's head and runs on every call
path that reaches it.  It is kept only for a reason a comment names, on the import's line or on the line
above its group of consecutive imports:

* ``import cost`` — a heavy module (EvalScope, transformers, pyarrow, rich's progress, the pipeline behind a
  command) that most callers never need: ``evalpipe --help`` and the light commands stay instant;
* ``optional dependency`` — a package of an extra (``model-demo``, ``speed``, ``sglang``) that may not be
  installed: the module imports without it and the one function that needs it says which extra.

Breaking an import cycle is no reason: the module graph (``test_import_graph.py``) and the package layers
(``tools/layers.py``) count an import inside a function like one at the top, so it hides no cycle from them.
An import that adds no module to what its module already imports (or only light ones) sits at the top.

``LOCAL_IMPORTS`` is a ratchet: a change that adds one fails here; one that removes some lowers the number in
the same commit.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.source_trees import parsed

ROOT = Path(__file__).resolve().parents[2] / "evalpipe"
REASON = re.compile(r"#.*\b(import cost|optional dependency)\b")
#: Function-local import statements in evalpipe/ (the ratchet: it may only fall; 374 before they said why).
LOCAL_IMPORTS = 252


@dataclass(frozen=True)
class LocalImport:
    site: str
    reason: str | None


def _comments(text: str) -> dict[int, str]:
    return {
        tok.start[0]: tok.string
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT
    }


def _reason(body: list[ast.stmt], i: int, comments: dict[int, str]) -> str | None:
    """The reason named for ``body[i]`` (an import): on its own lines, else on the line above the first import of
    its group (the imports right before it); an inline reason on another import of the group is that one's."""
    node = body[i]
    for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        found = REASON.search(comments.get(line, ""))
        if found:
            return found.group(1)
    first = i
    while first > 0 and isinstance(body[first - 1], ast.Import | ast.ImportFrom):
        first -= 1
    found = REASON.search(comments.get(body[first].lineno - 1, ""))
    return found.group(1) if found else None


def _walk(node: ast.AST, in_function: bool, out: list[tuple[list[ast.stmt], int]]) -> None:
    """Every import statement inside a function, as (its block, its index there)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if in_function and isinstance(block, list):
            for i, child in enumerate(block):
                if isinstance(child, ast.Import | ast.ImportFrom):
                    out.append((block, i))
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):  # no statement sits inside an expression (a lambda's body is one)
            continue
        _walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef), out)


def local_imports(root: Path = ROOT) -> list[LocalImport]:
    """Every ``import`` statement inside a function under ``root``, with the reason its comment names."""
    out: list[LocalImport] = []
    for path in sorted(root.rglob("*.py")):
        found: list[tuple[list[ast.stmt], int]] = []
        _walk(parsed(path), False, found)
        if not found:  # the comments are read only where an import needs its reason (tokenizing is slow)
            continue
        site = path.relative_to(root.parent).as_posix()
        comments = _comments(path.read_text(encoding="utf-8"))
        out += [LocalImport(f"{site}:{block[i].lineno}", _reason(block, i, comments)) for block, i in found]
    return out


@pytest.fixture(scope="module")
def found() -> list[LocalImport]:
    """``evalpipe/``'s function-local imports, walked once for the module's tests (every file parsed)."""
    return local_imports()


def test_function_local_imports_only_fall(found: list[LocalImport]) -> None:
    assert len(found) <= LOCAL_IMPORTS, (
        f"{len(found)} function-local imports (at most {LOCAL_IMPORTS}): import at the module's head, or name "
        "the reason (import cost, optional dependency) in a comment"
    )
    assert len(found) == LOCAL_IMPORTS, f"{len(found)} function-local imports now: lower LOCAL_IMPORTS to it"


def test_function_local_imports_say_why(found: list[LocalImport]) -> None:
    unexplained = [f.site for f in found if f.reason is None]
    assert not unexplained, (
        "function-local imports without a reason (import cost, optional dependency) in a comment on the line or "
        "above the group — or import at the module's head:\n" + "\n".join(unexplained)
    )


def test_the_walk_reads_reasons_on_the_line_and_above_the_group(tmp_path: Path) -> None:
    root = tmp_path / "evalpipe"
    root.mkdir()
    (root / "m.py").write_text(
        "import json\n"
        "def f():\n"
        "    # import cost: EvalScope\n"
        "    import evalscope\n"
        "    from evalscope import x\n"
        "    y = 1\n"
        "    import os\n"
        "    if y:\n"
        "        import numpy  # optional dependency: the stats extra\n"
        "class C:\n"
        "    def g(self):\n"
        "        try:\n"
        "            import a  # a reason that names none\n"
        "        except ImportError:\n"
        "            pass\n",
        encoding="utf-8",
    )
    found = local_imports(root)
    assert [(f.site, f.reason) for f in found] == [
        ("evalpipe/m.py:4", "import cost"),
        ("evalpipe/m.py:5", "import cost"),
        ("evalpipe/m.py:7", None),
        ("evalpipe/m.py:9", "optional dependency"),
        ("evalpipe/m.py:13", None),
    ]
