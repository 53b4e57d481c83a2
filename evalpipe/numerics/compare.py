"""The paired numerics comparison: per prompt, how far the arm under test (A/B) and the relaunched control
(A/A) moved the control's next-token distributions, and per group whether A/B moved them more.

Per prompt (the control is the reference ``P`` of every KL):

- ``kl0`` — KL of the first generated token's top-k distribution (+ tail bucket; a lower bound of the full KL,
  ``evalpipe.stats.divergence.topk_kl``); ``dlp0`` — |Δ log p| of the control's first token (None when the
  other arm's top-k does not hold it);
- ``kl_pre``/``dlp_pre`` — their means over the generated steps ``0 … d`` where ``d`` is the first step whose
  greedy token differs (the contexts are identical up to and including it; all steps when none differs);
- ``kl_forced``/``dlp_forced`` — their means over the teacher-forced continuation (every position: the
  contexts are the same text whatever either arm would have generated).

The paired test (``shift_test``) runs on ``primary`` (``kl_pre`` for chat — the mean over the steps before a
divergence separated FP8 from a warm prefix cache with AUC 1.0 where the first token alone reached 0.83, on the
live SGLang measurement; ``kl_forced`` for teacher forcing), per prompt ``A/B − A/A``, over all prompts, per
length and per placement.  The gate reads the "all" group's bound only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.numerics import (
    DivergenceName,
    NumericsAnswer,
    NumericsComparison,
    NumericsGate,
    NumericsGroup,
    NumericsPair,
    NumericsProbe,
    NumericsShift,
    NumericsStep,
    PromptDivergence,
    SpreadOf,
)
from evalpipe.errors import DataError
from evalpipe.numerics.asks.registry import ask_for
from evalpipe.stats.divergence import shift_test, spread, topk_kl

DIVERGENCES: tuple[DivergenceName, ...] = ("kl0", "dlp0", "kl_pre", "dlp_pre", "kl_forced", "dlp_forced")


def _dlp(ref: NumericsStep, other: NumericsStep) -> float | None:
    if ref.logprob is None:
        return None
    if ref.token == other.token and other.logprob is not None:
        return abs(ref.logprob - other.logprob)
    theirs = other.top.get(ref.token)
    return None if theirs is None else abs(ref.logprob - theirs)


def _mean(values: Sequence[float | None]) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return math.fsum(finite) / len(finite) if finite else None  # exactly rounded: the same on every Python


def divergence(ref: NumericsAnswer, other: NumericsAnswer) -> PromptDivergence:
    """``other``'s divergences from ``ref`` on one prompt (module docstring)."""
    a, b = ref.generated, other.generated
    n = min(len(a), len(b))
    first = next((i for i in range(n) if a[i].token != b[i].token), None)
    if first is None and len(a) != len(b):
        first = n  # one answer ended where the other went on
    last = n - 1 if first is None else min(first, n - 1)
    pre = range(last + 1) if n else range(0)
    kl_pre = [topk_kl(a[i].top, b[i].top) for i in pre]
    dlp_pre = [_dlp(a[i], b[i]) for i in pre]
    forced_n = min(len(ref.forced), len(other.forced))
    kl_forced = [topk_kl(ref.forced[i].top, other.forced[i].top) for i in range(forced_n)]
    dlp_forced = [_dlp(ref.forced[i], other.forced[i]) for i in range(forced_n)]
    identical = a == b and ref.forced == other.forced
    return PromptDivergence(
        kl0=kl_pre[0] if kl_pre else None,
        dlp0=dlp_pre[0] if dlp_pre else None,
        kl_pre=_mean(kl_pre),
        dlp_pre=_mean(dlp_pre),
        kl_forced=_mean(kl_forced),
        dlp_forced=_mean(dlp_forced),
        first_divergence=first,
        steps_compared=len(kl_pre) + forced_n,
        identical=identical,
        same_text=(ref.text == other.text) if ref.text is not None and other.text is not None else None,
    )


def _spreads(rows: Sequence[PromptDivergence]) -> dict[str, SpreadOf]:
    out: dict[str, SpreadOf] = {}
    for name in DIVERGENCES:
        values = [v for r in rows if (v := r.value(name)) is not None]
        if values:
            s = spread(values)
            out[name] = SpreadOf(n=s.n, median=s.median, p90=s.p90)
    return out


def _shift(pairs: Sequence[NumericsPair], primary: DivergenceName, alpha: float) -> NumericsShift | None:
    if not pairs or any(p.aa is None for p in pairs):
        return None
    diffs = []
    for p in pairs:
        ab, aa = p.ab.value(primary), p.aa.value(primary) if p.aa is not None else None
        diffs.append(ab - aa if ab is not None and aa is not None else math.nan)
    t = shift_test(diffs, alpha)
    return NumericsShift(
        n=t.n, nonzero=t.nonzero, positive=t.positive, statistic=t.statistic, p_value=t.p_value, alpha=t.alpha,
        method=t.method, estimate=t.estimate, lower=t.lower, verdict=t.verdict,
    )  # fmt: skip


def _group(
    by: str, name: str, pairs: Sequence[NumericsPair], primary: DivergenceName, alpha: float
) -> NumericsGroup:
    aa_rows = [p.aa for p in pairs if p.aa is not None]
    return NumericsGroup.model_validate(
        {
            "by": by,
            "name": name,
            "n": len(pairs),
            "ab": _spreads([p.ab for p in pairs]),
            "aa": _spreads(aa_rows),
            "identical_ab": sum(p.ab.identical for p in pairs),
            "identical_aa": sum(r.identical for r in aa_rows) if aa_rows else None,
            "shift": _shift(pairs, primary, alpha),
        }
    )


def _placement_key(name: str) -> tuple[int, str, int]:
    """``interior`` first, then per edge one token before, on, after it (``chunk-1``, ``chunk+0``, ``chunk+1``)."""
    if name == "interior" or len(name) < 3 or name[-2] not in "+-" or not name[-1].isdigit():
        return (0 if name == "interior" else 2, name, 0)
    return (1, name[:-2], int(name[-2:]))


def compare_numerics(test: NumericsProbe, control: NumericsProbe, aa: NumericsProbe | None, *,
                     labels: tuple[str, str, str | None], fail_above: float | None = None) -> NumericsComparison:  # fmt: skip
    """The numerics block of ``compare.json`` (module docstring); ``labels`` = (test, control, A/A)."""
    if test.ask != control.ask or (aa is not None and aa.ask != control.ask):
        raise DataError("numerics: the arms asked in different ways (numerics.ask differs): not comparable")
    primary = ask_for(control.ask).primary
    alpha = control.config.alpha
    arms = [test, control] + ([aa] if aa is not None else [])
    answered = [arm.answered for arm in arms]
    every = {a.id for arm in arms for a in arm.answers}
    common = [a.id for a in control.answers if all(a.id in ans for ans in answered)]
    missing = sorted(every - set(common))
    mismatched = [pid for pid in common if len({ans[pid].prompt_sha256 for ans in answered}) > 1]
    pairs: list[NumericsPair] = []
    for pid in common:
        if pid in mismatched:
            continue
        ref = answered[1][pid]
        pairs.append(
            NumericsPair(
                id=pid,
                length=ref.length,
                placement=ref.placement,
                server_prompt_tokens=ref.server_prompt_tokens,
                ab=divergence(ref, answered[0][pid]),
                aa=divergence(ref, answered[2][pid]) if aa is not None else None,
            )
        )
    groups = [_group("all", "all", pairs, primary, alpha)]
    for length in sorted({p.length for p in pairs}):
        groups.append(_group("length", str(length), [p for p in pairs if p.length == length], primary, alpha))
    for placement in sorted({p.placement for p in pairs}, key=_placement_key):
        groups.append(
            _group("placement", placement, [p for p in pairs if p.placement == placement], primary, alpha)
        )
    gate = None
    if fail_above is not None:
        shift = groups[0].shift
        lower = shift.lower if shift is not None else None
        passed = shift is not None and (lower is None or lower <= fail_above)
        gate = NumericsGate(fail_above=fail_above, lower=lower, passed=passed, has_aa=shift is not None)
    seconds = {labels[0]: test.seconds, labels[1]: control.seconds}
    if aa is not None and labels[2] is not None:
        seconds[labels[2]] = aa.seconds
    return NumericsComparison(
        ask=control.ask,
        primary=primary,
        label_test=labels[0],
        label_control=labels[1],
        label_aa=labels[2] if aa is not None else None,
        alpha=alpha,
        prompts=len(pairs),
        missing=missing,
        mismatched=mismatched,
        prompt_tokens=control.prompt_tokens_sent,
        seconds=seconds,
        groups=groups,
        pairs=pairs,
        gate=gate,
    )


def numerics_for(result: CompareResult, *, fail_above: float | None) -> NumericsComparison | None:
    """The numerics block of a paired comparison, from its arms' ``numerics.json`` (run A under test, run B the
    control, the A/A arm unless the record is A/A-only); None when A or B has none (a run without ``numerics:``).
    ``evalpipe run`` and ``evalpipe compare`` both call this, so a comparison re-derived from the CLI holds the
    same block."""
    a, b = RunDir(Path(result.run_a)).numerics_json, RunDir(Path(result.run_b)).numerics_json
    if not (a.is_file() and b.is_file()):
        return None
    aa_path = RunDir(Path(result.run_aa)).numerics_json if result.run_aa and not result.aa_only else None
    aa = read_model(aa_path, NumericsProbe) if aa_path is not None and aa_path.is_file() else None
    labels = (result.label_a, result.label_b, result.label_aa if aa is not None else None)
    return compare_numerics(
        read_model(a, NumericsProbe), read_model(b, NumericsProbe), aa, labels=labels, fail_above=fail_above
    )
