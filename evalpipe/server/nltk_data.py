"""NLTK data checks that never download anything.

IFEval's sentence counting needs NLTK's ``punkt_tab`` tokenizer tables.  EvalScope tries to download them
on first use, which on an air-gapped GPU node fails in the middle of scoring; evalpipe checks up front
and tells the operator how to install them instead.
"""

from __future__ import annotations

from collections.abc import Sequence

PUNKT_TAB_RESOURCE = "tokenizers/punkt_tab/english/"
PUNKT_TAB_FIX = (
    "install it once with `python -m nltk.downloader punkt_tab` (or copy an nltk_data directory containing "
    "tokenizers/punkt_tab and point NLTK_DATA at it)"
)


def punkt_tab_available(search_paths: Sequence[str] | None = None) -> bool:
    """True when NLTK can find the English ``punkt_tab`` tables on ``search_paths``.

    ``search_paths`` defaults to ``nltk.data.path`` (which honours ``NLTK_DATA``).  Uses
    ``nltk.data.find`` only — a lookup, never a download.  False when NLTK itself is not installed.
    """
    try:
        # import cost: nltk, only on this path
        import nltk.data
    except ImportError:
        return False
    paths = list(search_paths) if search_paths is not None else list(nltk.data.path)
    try:
        nltk.data.find(PUNKT_TAB_RESOURCE, paths=paths)
    except LookupError:
        return False
    return True
