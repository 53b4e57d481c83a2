"""The files of a paired comparison: ``compare.json`` (the numbers, ``evalpipe.compare``) and the two pages
that render it beside it, ``explorer.html`` (``evalpipe.explore``) and ``compare.md`` (``evalpipe.report``).

Written here, above the three, because the analysis never imports its presentation: ``compare`` computes and
the renderers make the words, so a wording change touches a renderer and no artifact.
"""

from __future__ import annotations

from pathlib import Path

from evalpipe.artifacts import RunDir, atomic_write_text, write_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.explore import build_paired_explorer
from evalpipe.report.compare_markdown import compare_markdown


def write_compare(result: CompareResult, out_dir: Path) -> tuple[Path, Path]:
    """``OUT/compare.json``, then ``OUT/explorer.html`` (every sample of the pair, flips first) and
    ``OUT/compare.md``, which links it; returns the paths of compare.json and compare.md."""
    out_dir = Path(out_dir)
    json_path, md_path = RunDir(out_dir).compare_json, RunDir(out_dir).compare_md
    write_model(json_path, result)
    explorer = build_paired_explorer(result, out_dir).record
    atomic_write_text(md_path, compare_markdown(result, explorer=explorer))
    return json_path, md_path
