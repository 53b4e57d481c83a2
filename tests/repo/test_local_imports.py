"""The number of imports inside functions in ``evalpipe/`` only falls.

An import inside a function hides a dependency from a reader of the module's head and runs on every call
path that reaches it.  It is worth its place for a heavy module most callers never need (EvalScope,
transformers, pyarrow, the pipeline behind a command: ``evalpipe --help`` stays instant) or a package of an
optional extra; breaking an import cycle is no reason, since the module graph (``test_import_graph.py``) and
the package layers (``tools/layers.py``) count an import inside a function like one at the top.

``LOCAL_IMPORTS`` is a ratchet: a change that adds one fails here; one that removes some lowers the number in
the same commit.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "evalpipe"
#: Function-local import statements in evalpipe/ (the ratchet: it may only fall).
LOCAL_IMPORTS = 374


def _count(node: ast.AST, in_function: bool) -> int:
    here = int(in_function and isinstance(node, ast.Import | ast.ImportFrom))
    return here + sum(
        _count(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))
        for child in ast.iter_child_nodes(node)
    )


def local_imports(root: Path = ROOT) -> dict[str, int]:
    """``file → number of import statements inside its functions`` under ``root`` (files with none left out)."""
    counts = {
        path.relative_to(root.parent).as_posix(): _count(ast.parse(path.read_text(encoding="utf-8")), False)
        for path in sorted(root.rglob("*.py"))
    }
    return {site: n for site, n in counts.items() if n}


def test_function_local_imports_only_fall() -> None:
    counts = local_imports()
    total = sum(counts.values())
    worst = ", ".join(f"{site} {n}" for site, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
    assert total <= LOCAL_IMPORTS, (
        f"{total} function-local imports (at most {LOCAL_IMPORTS}; most in {worst}): import at the module's head "
        "unless the module is heavy or belongs to an optional extra"
    )
    assert total == LOCAL_IMPORTS, f"{total} function-local imports now: lower LOCAL_IMPORTS to it"


def test_the_count_sees_every_function_and_nothing_at_module_level(tmp_path: Path) -> None:
    root = tmp_path / "evalpipe"
    (root / "sub").mkdir(parents=True)
    (root / "m.py").write_text(
        "import json\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import os\n"
        "def f():\n"
        "    import evalscope\n"
        "    if True:\n"
        "        from evalscope import x\n"
        "class C:\n"
        "    import re\n"
        "    async def g(self):\n"
        "        try:\n"
        "            import a\n"
        "        except ImportError:\n"
        "            def h():\n"
        "                import b\n",
        encoding="utf-8",
    )
    (root / "sub" / "n.py").write_text("import sys\n", encoding="utf-8")
    assert local_imports(root) == {"evalpipe/m.py": 4}
