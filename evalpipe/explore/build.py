"""Build ``explorer.html``: pair the arms, order the queue, keep the file under its size limit.

A paired page (at the variants' root, beside ``compare.json``) shows the control and the arm under test side
by side, the flips first: regressions (control right, test wrong), improvements, answers that differ with
the same score, then the rest.  A run's own page shows its one arm, failures first.

Size tiers: every text of a flagged sample (a flip; a failure on a one-arm page) is kept whole; when the
file would pass ``limit_bytes``, the other samples' long texts are cut to head and tail, shorter at each
tier, each cut with a pointer to the whole (its line in ``responses.jsonl.gz`` and the body's sha256).
"""

from __future__ import annotations

import base64
import gzip
import shlex
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, atomic_write_text, read_model, recorded_run
from evalpipe.artifacts.schema.compare import CompareResult, PairedBenchmark
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.explorer import (
    ArmInfo,
    BlockStats,
    ExplorerData,
    ExplorerRecord,
    NumericsView,
    PromptMessage,
    SampleCard,
    SampleIndex,
)
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.reviews import FlipKind
from evalpipe.benchmarks import benchmark as benchmark_of
from evalpipe.errors import ArtifactError
from evalpipe.explore.collect import Arm, Key, arm_card, evidence_cut, load_arm
from evalpipe.explore.numerics import numerics_view
from evalpipe.explore.page import render_page
from evalpipe.hashing import prompt_sha256, sha256_hex
from evalpipe.words.compare import design_check_sentence, dropped_sentence, paired_line, verdict_sentence
from evalpipe.words.sentences import aa_sentence, operating_sentence, verdict_cell

DEFAULT_LIMIT_BYTES = 20_000_000
#: characters of head and tail an unflagged sample's long text keeps, tier by tier (None: whole)
TIERS: tuple[int | None, ...] = (None, 4000, 1000, 200)
SEARCH_HEAD = 2000
FLIP_ORDER: dict[FlipKind | None, int] = {
    "regression": 0,
    "improvement": 1,
    "answers_differ": 2,
    "same": 3,
    None: 3,
}


@dataclass(frozen=True)
class Built:
    path: Path
    record: ExplorerRecord


def build_run_explorer(
    run_dir: Path, *, limit_bytes: int = DEFAULT_LIMIT_BYTES, page: Path | None = None
) -> Built:
    """``RUN/explorer.html`` (or ``page``: then nothing is written into RUN) for one run directory: its
    samples, failures first."""
    arm = load_arm(run_dir)
    rd = RunDir(Path(run_dir))
    title = f"Samples of {arm.label}"
    return _write(page or rd.explorer_html, title, [arm], None, [], limit_bytes, rd.root)


def build_paired_explorer(
    comparison: CompareResult,
    out_dir: Path,
    *,
    limit_bytes: int = DEFAULT_LIMIT_BYTES,
    page: Path | None = None,
) -> Built:
    """``OUT/explorer.html`` (or ``page``: then nothing is written into OUT) for a paired comparison (A under
    test, B the control), flips first; the arms are read beside ``OUT``'s compare.json when they are there (a
    moved or unpacked root), else where compare.json recorded them (``recorded_run``)."""

    def arm(recorded: str) -> Path:
        return recorded_run(recorded, Path(out_dir), comparison.manifest_sha256)

    run_a = arm(comparison.run_a)
    control = load_arm(arm(comparison.run_b), comparison.label_b)
    test = load_arm(run_a, comparison.label_a)
    aa: tuple[Arm, Arm] | None = None
    if comparison.run_aa is not None and not comparison.aa_only:
        aa = (control, load_arm(arm(comparison.run_aa), comparison.label_aa))
    blocks = [
        *comparison.benchmarks,
        *comparison.pools,
        *([comparison.overall] if comparison.overall else []),
    ]
    stats = [_stats(b, comparison.label_a, comparison.label_b) for b in blocks]
    title = f"{comparison.label_a} vs {comparison.label_b}: every sample, flips first"
    out = RunDir(Path(out_dir))
    aa_dir = arm(comparison.run_aa) if comparison.run_aa is not None and not comparison.aa_only else None
    numerics = numerics_view(comparison, arm(comparison.run_b), run_a, aa_dir)
    return _write(page or out.explorer_html, title, [control, test], aa, stats, limit_bytes, run_a, numerics)


def flip_kind(control: Arm, test: Arm, key: Key) -> FlipKind:
    mc, mt = control.mean(key), test.mean(key)
    if mt < mc:
        return "regression"
    if mt > mc:
        return "improvement"
    rc, rt = control.outcomes.get(key), test.outcomes.get(key)
    if (rc.response_sha256 if rc else None) != (rt.response_sha256 if rt else None):
        return "answers_differ"
    return "same"


def _stats(b: PairedBenchmark, label_a: str, label_b: str) -> BlockStats:
    """The block's numbers and sentences for the statistics panel (``label_a`` under test)."""
    low = b.paired_ci_low if b.paired_ci_low is not None else b.diff_ci_low
    high = b.paired_ci_high if b.paired_ci_high is not None else b.diff_ci_high
    return BlockStats(
        block=b.benchmark,
        n_pairs=b.n_pairs,
        regressions=b.b_only,
        improvements=b.a_only,
        p_value=b.paired_p if b.paired_p is not None else b.mcnemar_p,
        test=b.paired_test,
        ci_low_pts=None if low is None else round(100 * low, 2),
        ci_high_pts=None if high is None else round(100 * high, 2),
        ci_label=f"{'Bonett–Price' if b.paired_ci_low is not None else 'bootstrap'} 95 %, descriptive",
        mde_pts=b.mde_pts,
        non_inferiority=verdict_sentence(b.non_inferiority) if b.non_inferiority is not None else None,
        verdict=verdict_cell(b.non_inferiority) if b.non_inferiority is not None else None,
        operating=operating_sentence(b.operating) if b.operating is not None else None,
        design=design_check_sentence(b.design_check, b.operating) if b.design_check is not None else None,
        dropped=dropped_sentence(b),
        aa=aa_sentence(b.aa_discordant) if b.aa_discordant is not None else None,
        aa_flips=b.aa_discordant.discordant if b.aa_discordant is not None else None,
        line=paired_line(b, label_a, label_b),
        placement_grid=b.by_placement,
    )


def _ranks(manifest: Manifest) -> dict[Key, int]:
    by_stratum: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for e in manifest.entries:
        by_stratum[(e.benchmark, e.stratum)].append((e.rank_key, e.source_id))
    out: dict[Key, int] = {}
    for (benchmark, _), ranked in by_stratum.items():
        for i, (_, source_id) in enumerate(sorted(ranked), start=1):
            out[(benchmark, source_id)] = i
    return out


@dataclass
class _Sample:
    index: SampleIndex
    flagged: bool
    order: tuple[int, int]


def _card(
    arms: list[Arm], key: Key, keep: int | None, rank: int, record_sha: str, rank_key: str,
    needles: tuple[str, ...] = (), question: str | None = None,
) -> SampleCard:  # fmt: skip
    first = arms[-1]  # the arm under test (paired) or the one arm
    prompt = next((a.prompts[key] for a in reversed(arms) if key in a.prompts), None)
    expected = next(
        (
            h
            for a in reversed(arms)
            if (r := a.outcomes.get(key)) and (h := r.expected_prompt_sha256 or r.prompt_sha256)
        ),
        None,
    )
    verified: bool | None = None
    messages: list[PromptMessage] = []
    prompt_cut = None
    if prompt is not None:
        whole = [{"role": role, "content": text} for role, text in prompt]
        sent = {r.prompt_sha256 for a in arms if (r := a.outcomes.get(key)) and r.prompt_sha256}
        verified = expected is not None and prompt_sha256(whole) == expected and sent <= {expected}
        for role, text in prompt:
            kept, c, spans = evidence_cut(text, keep, needles if role == "user" else ())
            prompt_cut = prompt_cut or c
            messages.append(PromptMessage(role=role, content=kept, evidence=spans))
    row = first.outcomes.get(key)
    return SampleCard(
        prompt=messages,
        prompt_cut=prompt_cut,
        question=question if not messages else None,
        prompt_sha256=expected,
        prompt_verified=verified,
        gold=row.gold_answer if row else None,
        record_sha256=record_sha,
        rank_key=rank_key,
        rank=rank,
        arms=[arm_card(a, key, keep) for a in arms],
    )


def _pack(card: SampleCard) -> str:
    data = card.model_dump_json(exclude_none=True).encode("utf-8")
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def _samples(arms: list[Arm], aa: tuple[Arm, Arm] | None, keep: int | None, only: set[Key] | None,
             cache: dict[Key, _Sample]) -> dict[Key, _Sample]:  # fmt: skip
    """Every manifest entry as an index row with its packed card; rows in ``cache`` outside ``only`` are reused."""
    manifest = arms[-1].manifest
    ranks = _ranks(manifest)
    questions = _materialised_questions(arms)
    paired = len(arms) == 2
    out: dict[Key, _Sample] = {}
    for position, e in enumerate(manifest.entries):
        key = (e.benchmark, e.source_id)
        if key in cache and (only is None or key not in only):
            out[key] = cache[key]
            continue
        flip = flip_kind(arms[0], arms[1], key) if paired else None
        rows = [a.outcomes.get(key) for a in arms]
        flagged = (
            flip in ("regression", "improvement")
            if paired
            else not (rows[0] and rows[0].failure_class == "ok")
        )
        needles = (
            benchmark_of(e.benchmark).evidence(e.generated, e.source_id) if e.generated is not None else ()
        )
        card = _card(arms, key, None if flagged else keep, ranks[key], e.record_sha256, e.rank_key, needles,
                     questions.get(key))  # fmt: skip
        asked = [m.content for m in card.prompt if m.role == "user"][-1:] or [card.question or ""]
        texts = asked + [a.answer or "" for a in card.arms]
        partial = any(len(t) > SEARCH_HEAD for t in texts) or card.prompt_cut is not None
        index = SampleIndex(
            key=f"{e.benchmark}/{e.source_id}",
            benchmark=e.benchmark,
            stratum=e.stratum,
            source_id=e.source_id,
            flip=flip,
            aa_flip=aa is not None and aa[0].mean(key) != aa[1].mean(key),
            correct=[a.correct for a in card.arms],
            failure=[a.failure_class for a in card.arms],
            output_tokens=[a.output_tokens for a in card.arms],
            budget_cut=[a.budget_cut for a in card.arms],
            search="\n".join(t[:SEARCH_HEAD] for t in texts),
            search_partial=partial,
            truncated=any(x is not None for x in [card.prompt_cut, *(c for a in card.arms for c in (a.answer_cut, a.reasoning_cut))]),
            card=_pack(card),
        )  # fmt: skip
        if paired:
            order = (FLIP_ORDER[flip], position)
        else:
            order = (0 if flagged else 1, position)
        out[key] = _Sample(index, flagged, order)
    return out


def _materialised_questions(arms: list[Arm]) -> dict[Key, str]:
    """Each entry's question as materialised for EvalScope (``index_map.json``; the arm under test's first):
    what a card shows when the run no longer holds the messages as sent."""
    out: dict[Key, str] = {}
    for arm in reversed(arms):
        path = arm.rundir.index_map
        if not path.is_file():
            continue
        try:
            entries = read_model(path, IndexMap).entries
        except ArtifactError:
            continue
        for e in entries:
            out.setdefault((e.benchmark, e.source_id), e.question)
    return out


def _raw_size(arms: list[Arm]) -> int:
    """Characters of every recorded body and prompt: a bound on what a whole tier would have to compress."""
    return sum(len(b.text) for a in arms for b in a.bodies.values()) + sum(
        len(t) for a in arms for msgs in a.prompts.values() for _, t in msgs
    )


def _write(path: Path, title: str, arms: list[Arm], aa: tuple[Arm, Arm] | None, stats: list[BlockStats],
           limit_bytes: int, run_a: Path, numerics: NumericsView | None = None) -> Built:  # fmt: skip

    manifest = arms[-1].manifest
    manifest_sha = sha256_hex(arms[-1].rundir.manifest.read_bytes())
    tiers = list(TIERS)
    if _raw_size(arms) > 4 * limit_bytes:  # no gzip keeps that under the limit whole: skip compressing it
        tiers = tiers[1:]
    cache: dict[Key, _Sample] = {}
    html = ""
    tier_name = ""
    data: ExplorerData | None = None
    for keep in tiers:
        unflagged = {k for k, s in cache.items() if not s.flagged}
        samples = _samples(arms, aa, keep, unflagged if cache else None, cache)
        cache = samples
        ordered = sorted(samples.values(), key=lambda s: s.order)
        tier_name = (
            "every text whole"
            if keep is None
            else f"unflagged samples' long texts cut to {keep:,} characters of head and tail"
        )
        data = ExplorerData(
            title=title,
            mode="paired" if len(arms) == 2 else "single",
            arms=[ArmInfo(label=a.label, run_dir=str(a.rundir.root), run_id=a.run_id) for a in arms],
            manifest_sha256=manifest_sha,
            seed=manifest.seed,
            limit_bytes=limit_bytes,
            tier=tier_name,
            verify_command=f"evalpipe verify-sample {shlex.quote(str(run_a))} --sample",
            replay_command=f"evalpipe replay {shlex.quote(str(run_a))}",
            stats=stats,
            samples=[s.index for s in ordered],
            numerics=numerics,
        )  # fmt: skip
        html = render_page(data)
        if len(html.encode("utf-8")) <= limit_bytes:
            break
    assert data is not None
    atomic_write_text(path, html)
    truncated = [s.key for s in data.samples if s.truncated]
    record = ExplorerRecord(
        file=path.name,
        samples=len(data.samples),
        truncated=len(truncated),
        truncated_ids=truncated[:50],
        tier=tier_name,
        bytes=len(html.encode("utf-8")),
        limit_bytes=limit_bytes,
    )
    return Built(path, record)
