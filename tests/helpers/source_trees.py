"""One parse per source file per test process, shared by the tests that read the repository's syntax trees.

The tier scan (``helpers.tiers``, at collection, in every worker) parses the test modules; the import graph,
the model homes, the local imports and the run-file names parse ``evalpipe/`` and more.  Each used to parse
on its own: the same ~550 files, about a second of CPU per full pass.  A tree is remembered while its file is
unchanged (size and mtime), so a test that writes a file of the same path gets the new one.  The trees are
shared: a reader must not change them.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path


def parsed(path: Path | str) -> ast.Module:
    """``ast.parse`` of the file at ``path`` (UTF-8), the same tree while the file is unchanged."""
    stat = Path(path).stat()
    return _parsed(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4096)
def _parsed(path: str, size: int, mtime_ns: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
