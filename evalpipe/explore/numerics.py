"""The explorer's numerics panel: the prompts whose next-token distribution the arm under test moved most,
with the first step's top-k of the control, the arm under test and the A/A arm side by side (read from each
arm's ``numerics.json`` beside the comparison; ``compare.json``'s numerics block ranks them)."""

from __future__ import annotations

from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.explorer import NumericsPrompt, NumericsTop, NumericsView
from evalpipe.artifacts.schema.numerics import NumericsAnswer, NumericsProbe, NumericsStep
from evalpipe.errors import ArtifactError
from evalpipe.words.numerics import verdict_sentence

#: Prompts the panel shows (the largest A/B divergences) and rows of each top-k.
SHOWN = 12
TOP_ROWS = 10


def _answers(run_dir: Path | None) -> dict[str, NumericsAnswer]:
    if run_dir is None or not RunDir(run_dir).numerics_json.is_file():
        return {}
    try:
        return read_model(RunDir(run_dir).numerics_json, NumericsProbe).answered
    except ArtifactError:
        return {}


def _first(answer: NumericsAnswer | None) -> NumericsStep | None:
    if answer is None:
        return None
    steps = answer.generated or answer.forced
    return steps[0] if steps else None


def _top(
    control: NumericsStep | None, test: NumericsStep | None, aa: NumericsStep | None
) -> list[NumericsTop]:
    if control is None:
        return []
    ranked = sorted(control.top.items(), key=lambda kv: -kv[1])[:TOP_ROWS]
    tokens = [t for t, _ in ranked]
    if test is not None:
        tokens += [
            t for t, _ in sorted(test.top.items(), key=lambda kv: -kv[1])[:TOP_ROWS] if t not in tokens
        ]
    return [
        NumericsTop(
            token=t,
            control=control.top.get(t),
            test=test.top.get(t) if test is not None else None,
            aa=aa.top.get(t) if aa is not None else None,
        )
        for t in tokens
    ]


def numerics_view(
    comparison: CompareResult, control: Path, test: Path, aa: Path | None
) -> NumericsView | None:
    """The panel for ``comparison`` (None without a numerics block)."""
    block = comparison.numerics
    if block is None:
        return None
    arms = _answers(control), _answers(test), _answers(aa)
    ranked = sorted(block.pairs, key=lambda p: -(p.ab.value(block.primary) or 0.0))[:SHOWN]
    prompts = []
    for pair in ranked:
        c, t, a = (arm.get(pair.id) for arm in arms)
        prompts.append(
            NumericsPrompt(
                id=pair.id,
                length=pair.length,
                placement=pair.placement,
                prompt_tokens=pair.server_prompt_tokens,
                ab=pair.ab.value(block.primary),
                aa=pair.aa.value(block.primary) if pair.aa is not None else None,
                first_divergence=pair.ab.first_divergence,
                text_control=c.text if c is not None else None,
                text_test=t.text if t is not None else None,
                top=_top(_first(c), _first(t), _first(a)),
            )
        )
    return NumericsView(sentence=verdict_sentence(block), primary=block.primary, prompts=prompts)
