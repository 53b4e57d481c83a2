"""NLTK data checks that never download anything.

IFEval's sentence counting needs NLTK's ``punkt_tab`` tokenizer tables.  EvalScope tries to download them
on first use, which on an air-gapped GPU node fails in the middle of scoring; evalpipe checks up front
and tells the operator how to install them instead.

Every ``evalpipe run`` asks (its EvalScope stage records the answer), and ``import nltk`` costs ~1.3 s of CPU
(its package imports scipy.stats), most of a run's own start-up.  So when NLTK is not imported yet and no
directory NLTK would search holds a ``tokenizers/punkt_tab`` folder or zip, the answer is "missing" without
importing it: ``nltk.data.find`` cannot find what is not on disk.  Whenever a candidate exists, NLTK itself
decides (its own checks, such as refusing a data root other accounts can write to, stay in force).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

PUNKT_TAB_RESOURCE = "tokenizers/punkt_tab/english/"
PUNKT_TAB_FIX = (
    "install it once with `python -m nltk.downloader punkt_tab` (or copy an nltk_data directory containing "
    "tokenizers/punkt_tab and point NLTK_DATA at it)"
)


def default_search_paths() -> list[str]:
    """The directories ``nltk.data.path`` starts with on a POSIX host, computed as ``nltk/data.py`` computes
    them (``NLTK_DATA``, then the user's and the prefix's and the system's ``nltk_data``), without importing
    NLTK.  ``tests/server/test_nltk_data.py`` checks that NLTK's own list is contained in it."""
    paths = [os.path.expanduser(d) for d in os.environ.get("NLTK_DATA", "").split(os.pathsep) if d]
    if "APPENGINE_RUNTIME" not in os.environ and os.path.expanduser("~/") != "~/":
        paths.append(os.path.expanduser("~/nltk_data"))
    paths += [
        os.path.join(sys.prefix, "nltk_data"),
        os.path.join(sys.prefix, "share", "nltk_data"),
        os.path.join(sys.prefix, "lib", "nltk_data"),
        "/usr/share/nltk_data",
        "/usr/local/share/nltk_data",
        "/usr/lib/nltk_data",
        "/usr/local/lib/nltk_data",
    ]
    return paths


def may_hold_punkt_tab(paths: Sequence[str]) -> bool:
    """False only when none of ``paths`` can hold punkt_tab for ``nltk.data.find``: no ``tokenizers/punkt_tab``
    folder or ``tokenizers/punkt_tab.zip`` below any of them, and none is itself a file (a zip NLTK would
    search inside)."""
    for entry in paths:
        root = Path(entry)
        if root.is_file() or (root / "tokenizers" / "punkt_tab").exists():
            return True
        if (root / "tokenizers" / "punkt_tab.zip").exists():
            return True
    return False


def _nltk_finds(paths: Sequence[str] | None) -> bool:
    """NLTK's own lookup (``nltk.data.find``): on ``paths``, or on ``nltk.data.path`` when None."""
    try:
        # import cost: nltk (~1.3 s of CPU), only when punkt_tab may be there or NLTK is imported already
        import nltk.data
    except ImportError:
        return False
    try:
        nltk.data.find(PUNKT_TAB_RESOURCE, paths=list(paths) if paths is not None else list(nltk.data.path))
    except LookupError:
        return False
    return True


def punkt_tab_available(search_paths: Sequence[str] | None = None) -> bool:
    """True when NLTK can find the English ``punkt_tab`` tables on ``search_paths``.

    ``search_paths`` defaults to ``nltk.data.path`` (which honours ``NLTK_DATA``).  Uses
    ``nltk.data.find`` only — a lookup, never a download — unless nothing on disk could hold the tables (see
    the module's docstring).  False when NLTK itself is not installed.
    """
    if "nltk.data" not in sys.modules:
        if importlib.util.find_spec("nltk") is None:
            return False
        candidates = list(search_paths) if search_paths is not None else default_search_paths()
        if sys.platform != "win32" and not may_hold_punkt_tab(candidates):
            return False
    return _nltk_finds(search_paths)
