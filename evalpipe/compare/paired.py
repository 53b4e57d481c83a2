"""Load two runs of the same samples, pair them, and assemble ``compare.json`` from ``evalpipe.stats``.

Refuses unless both runs used the identical manifest (same fingerprints and entries) and the same
rendered prompt per sample: otherwise a difference could come from the inputs, not the server.
Per benchmark: both scores with Wilson intervals, the difference with a seeded paired-bootstrap
percentile interval, the exact McNemar test on the discordant pairs, and the flips (the statistics are
``evalpipe.stats.intervals`` and ``evalpipe.stats.paired``).  Numbers only: the words are made where they are
shown (``evalpipe.report``; ``evalpipe.run.compare_files`` writes compare.json with its pages).
Scores: one rule for every number of a comparison (``CompareResult.scoring``, ``evalpipe.compare.block``) —
the gate's paired rule (``evalpipe.stats.unit_scores``): a budget-exhausted answer is wrong even when EvalScope
scored the truncated text 1, an attempt without an answer (API or scoring error, missing row) counts wrong in
A (under test) and right in B, never for A; an A/A-only record, with no arm under test, scores both arms by the
summary's rule (``is_correct``).  A unit dropped before generation in both arms (context fit, the served
context: never sent) is left out of its block, counted with its reason (``dropped``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import (
    CompareResult,
    PairedBenchmark,
    PlacementCell,
)
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.sources import GeneratedItem
from evalpipe.benchmarks import length_buckets
from evalpipe.compare.block import aa_only_block, block_of_pairs, left_out, with_fields
from evalpipe.compare.design import design_check
from evalpipe.compare.seeds import run_temperature, with_temperature
from evalpipe.compare.sequential import sequential_fields
from evalpipe.compare.units import CompareRefused, Outcomes, drop_reasons, run_label
from evalpipe.compare.versions import paired_versions
from evalpipe.config.gates import DesignAssumption
from evalpipe.config.models import SequentialConfig
from evalpipe.errors import EvalpipeError
from evalpipe.hashing import block_order, generation_sizes, sha256_hex
from evalpipe.samplers.extend import entry_generations

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CompareRefused",
    "compare_runs",
    "comparison_beside",
    "placement_grid",
    "sequential_fields",
]

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261202


def _outcomes(rundir: RunDir) -> dict[tuple[str, str], OutcomeRow]:
    if not rundir.outcomes.is_file():
        raise CompareRefused(f"{rundir.outcomes}: missing (run the evaluation first)")
    rows = read_jsonl(rundir.outcomes, OutcomeRow)
    return {(r.benchmark, r.source_id): r for r in rows}


def placement_grid(
    keys: list[tuple[str, str, str]],
    generated: Mapping[tuple[str, str], GeneratedItem | None],
    block_of: Callable[[str, list[tuple[str, str, str]]], PairedBenchmark],
) -> list[PlacementCell]:
    """A generated benchmark's length × placement grid: each cell the paired block of its items (``block_of``,
    the same statistics as every block), reduced to its counts; lengths ascending, placements in manifest
    order."""
    cells: dict[tuple[int, str], list[tuple[str, str, str]]] = {}
    for key in keys:
        item = generated[key[:2]]
        assert item is not None
        cells.setdefault((item.length, item.placement), []).append(key)
    out = []
    for (length, placement), cell in sorted(cells.items(), key=lambda kv: kv[0][0]):
        block = block_of(f"{keys[0][0]} {length} {placement}", cell)
        out.append(
            PlacementCell(
                length=length,
                placement=placement,
                n_pairs=block.n_pairs,
                a_correct=block.a.correct,
                b_correct=block.b.correct,
                a_only=block.a_only,
                b_only=block.b_only,
            )
        )
    return out


def compare_runs(
    run_a: Path,
    run_b: Path,
    *,
    label_a: str | None = None,
    label_b: str | None = None,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = 0.95,
    run_aa: Path | None = None,
    label_aa: str | None = None,
    aa_control: Path | None = None,
    margins: Callable[[str], float | None] | None = None,
    must_catch: Callable[[str], float | None] | None = None,
    gate_alpha: float | None = None,
    aa_only: bool = False,
    sequential: SequentialConfig | None = None,
    pools: Mapping[str, list[str]] | None = None,
    design: Mapping[str, DesignAssumption] | None = None,
) -> CompareResult:
    """Paired comparison of A (under test) with B (control); ``run_aa`` is a repeat (``repeat_of``) of
    ``aa_control`` (default B), the A/A noise; ``margins(block)`` the non-inferiority margin of a block
    (``all`` for the overall one).

    ``aa_only``: B is A's repeat and there is no A/B control — the record of the server's own noise (A/A
    discordance, responses that differed, the MDE an A/B of this size would have); no A/B fields.

    ``sequential``: every block with a margin (not the length buckets, not an A/A-only record) is also
    judged unit by unit (``sequential_fields``).  ``pools``: name → member benchmarks, each judged as one
    block over the members' samples (``pools`` of compare.json).  ``design``: what each block's design assumes
    (config ``design:``; default: run A's own config copy's), checked against the discordance measured here
    (``design_check``)."""
    if aa_only and run_aa is not None:
        raise ValueError("aa_only compares A with its repeat B: no separate run_aa")
    ra, rb = RunDir(run_a), RunDir(run_b)
    ma, mb = read_model(ra.manifest, Manifest), read_model(rb.manifest, Manifest)
    _check_paired(ra, rb, ma, mb)
    arms = [ra, rb, *(RunDir(p) for p in (run_aa, aa_control) if p is not None)]
    versions = paired_versions(arms, [b.benchmark for b in ma.benchmarks])
    oa, ob = _outcomes(ra), _outcomes(rb)
    oc: Outcomes | None = None
    od: Outcomes | None = None
    if aa_only:
        oc, od = ob, oa
    elif run_aa is not None:
        rc, rd = RunDir(run_aa), RunDir(aa_control) if aa_control is not None else rb
        _check_paired(rd, rc, read_model(rd.manifest, Manifest), read_model(rc.manifest, Manifest))
        oc, od = _outcomes(rc), _outcomes(rd)
    margin_of = margins or (lambda _name: None)
    catch_of = must_catch or (lambda _name: None)

    la = label_a or run_label(ra, "A")
    lb = label_b or run_label(rb, "B")

    # the rule stopped sending inside the run: every block pairs only the units every compared arm sent
    sent, crossed = _units_sent([ra, rb, *([RunDir(run_aa)] if run_aa is not None else [])])
    # --extend: earlier generations first, in their own order (the in-run stop's order too)
    generations = entry_generations(ra.root)

    def in_order(keys: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        by_unit = {k[:2]: k for k in keys}
        return [by_unit[u] for u in block_order(ma.seed, by_unit, generations)]

    def only_sent(keys: list[tuple[str, str, str]], *, prefix: bool = False) -> list[tuple[str, str, str]]:
        """Each benchmark's units sent: the first ``units_sent_prefix`` of its manifest entries in the block
        order — the stop counts them in that order, an entry dropped before sending (context fit) holding
        its place (``SequentialStopper``), so the cut keeps exactly the units the stop counted; ``prefix`` (a
        pool the rule gated): the longest prefix of the block's own order whose units were all sent, the
        units the rule judged inside the run."""
        if not sent:
            return keys
        kept: set[tuple[str, str]] = set()
        for bench in dict.fromkeys(k[0] for k in keys):
            mine = in_order([k for k in keys if k[0] == bench])
            kept.update(k[:2] for k in mine[: sent.get(bench, len(mine))])
        if prefix:
            ordered = in_order(keys)
            cut = next((i for i, k in enumerate(ordered) if k[:2] not in kept), len(ordered))
            kept = {k[:2] for k in ordered[:cut]}
        return [k for k in keys if k[:2] in kept]

    def paired_block(name: str, keys: list[tuple[str, str, str]], margin: float | None) -> PairedBenchmark:
        # units dropped before generation in both arms are no units: the plan is the units that remain, and
        # every one of them is counted in the block's dropped (those past the stop too)
        gone = left_out(keys, oa, ob)
        planned = len(keys) - len(gone) if any(k[0] in sent for k in keys) else None
        plan_sizes = generation_sizes((k[:2] for k in keys if k[:2] not in gone), generations)
        judged = only_sent(keys, prefix=name in crossed and len({k[0] for k in keys}) > 1)
        cut = {k[:2] for k in judged}
        keys = [k for k in keys if k[:2] in cut or k[:2] in gone]
        return block_of_pairs(
            name,
            keys,
            oa,
            ob,
            resamples=resamples,
            seed=seed,
            confidence=confidence,
            oc=oc,
            od=od,
            margin_pts=margin,
            sequential=(sequential, ma.seed) if sequential is not None and not aa_only else None,
            planned=planned,
            stop_unit=crossed.get(name),
            must_catch_pts=catch_of(name) if margin is not None else None,
            fixed_alpha=gate_alpha,
            generations=generations,
            plan_sizes=plan_sizes,
            scoring="summary rule" if aa_only else "paired rule",
            drops=drops,
        )

    drops = {**drop_reasons(rb), **drop_reasons(ra)}
    blocks = []
    for block in ma.benchmarks:
        keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries if e.benchmark == block.benchmark]
        paired = paired_block(block.benchmark, keys, margin_of(block.benchmark))
        buckets = length_buckets(block.benchmark, block.plan.stratify_by, [k[2] for k in keys])
        if buckets:
            paired.by_length = [
                with_fields(
                    paired_block(
                        f"{block.benchmark} {length}",
                        only_sent([k for k in keys if bucket_of[k[2]] == length]),
                        None,
                    ),
                    {"length": length},
                )
                for length, bucket_of in buckets
            ]
        generated = {
            (e.benchmark, e.source_id): e.generated for e in ma.entries if e.benchmark == block.benchmark
        }
        if keys and all(g is not None for g in generated.values()):
            paired.by_placement = placement_grid(
                keys, generated, lambda name, cell: paired_block(name, only_sent(cell), None)
            )
        blocks.append(paired)
    pooled = []
    for pool, members in (pools or {}).items():
        keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries if e.benchmark in members]
        pooled.append(with_fields(paired_block(pool, keys, margin_of(pool)), {"members": list(members)}))
    all_keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries]
    overall = paired_block("all", all_keys, margin_of("all")) if len(blocks) > 1 else None
    assumed = design if design is not None else _design_of(ra)
    blocks = [with_fields(b, {"design_check": design_check(b, assumed.get(b.benchmark))}) for b in blocks]
    pooled = [with_fields(b, {"design_check": design_check(b, assumed.get(b.benchmark))}) for b in pooled]
    if any(b.attempt_seeds is not None for b in blocks):  # repeats: the seeds' check names the temperature
        temperature = run_temperature(ra)
        blocks = [with_temperature(b, temperature) for b in blocks]
        pooled = [with_temperature(b, temperature) for b in pooled]
        overall = with_temperature(overall, temperature) if overall is not None else None
    if aa_only:  # the pair IS the noise: no A/B discordance, nothing to hold against it
        blocks = [aa_only_block(b) for b in blocks]
        pooled = [aa_only_block(b) for b in pooled]
        overall = aa_only_block(overall) if overall is not None else None
    return CompareResult(
        run_a=str(ra.root),
        run_b=str(rb.root),
        label_a=la,
        label_b=lb,
        run_aa=str(RunDir(run_aa).root) if run_aa is not None else (str(rb.root) if aa_only else None),
        label_aa=(label_aa or run_label(RunDir(run_aa), "B'"))
        if run_aa is not None
        else (lb if aa_only else None),
        aa_only=aa_only,
        manifest_sha256=sha256_hex(ra.manifest.read_bytes()),
        benchmark_versions=versions,
        bootstrap_resamples=resamples,
        bootstrap_seed=seed,
        confidence=confidence,
        scoring="summary rule" if aa_only else "paired rule",
        benchmarks=blocks,
        pools=pooled,
        overall=overall,
    )


def _design_of(rundir: RunDir) -> Mapping[str, DesignAssumption]:
    """The ``design:`` of the run's own config copy; empty without a readable one."""
    from evalpipe.config.loader import load_config

    if not rundir.config_copy.is_file():
        return {}
    try:
        return load_config(rundir.config_copy, check_plans=False).design
    except EvalpipeError:
        return {}


def _units_sent(arms: list[RunDir]) -> tuple[dict[str, int], dict[str, int | None]]:
    """Benchmark → units sent by every arm (``sequential_stop.json``'s leading units of the sequence order),
    for the benchmarks whose sending the sequential rule stopped inside the run (empty when none did), and
    block (a benchmark, or the pool that gated it) → the unit at which it crossed there (the first arm's
    record that names one)."""
    from evalpipe.artifacts.schema.sequential import SequentialStops

    sent: dict[str, int] = {}
    crossed: dict[str, int | None] = {}
    for arm in arms:
        if not arm.sequential_stop.is_file():
            continue
        for stop in read_model(arm.sequential_stop, SequentialStops).benchmarks:
            sent[stop.benchmark] = min(
                sent.get(stop.benchmark, stop.units_sent_prefix), stop.units_sent_prefix
            )
            block = stop.block or stop.benchmark
            if crossed.get(block) is None:
                crossed[block] = stop.stop_unit
    return sent, crossed


def _check_paired(ra: RunDir, rb: RunDir, ma: Manifest, mb: Manifest) -> None:
    """Refuse unless both runs used the identical manifest and rendered the same prompts."""
    problems: list[str] = []
    fa = {b.benchmark: b.dataset.fingerprint for b in ma.benchmarks}
    fb = {b.benchmark: b.dataset.fingerprint for b in mb.benchmarks}
    if fa != fb:
        problems.append(f"dataset fingerprints differ: {fa} vs {fb}")
    if ma.seed != mb.seed:
        problems.append(f"sampling seeds differ: {ma.seed} vs {mb.seed}")
    ea = [(e.benchmark, e.source_id, e.record_sha256) for e in ma.entries]
    eb = [(e.benchmark, e.source_id, e.record_sha256) for e in mb.entries]
    if ea != eb:
        only_a = sorted(set(ea) - set(eb))[:5]
        only_b = sorted(set(eb) - set(ea))[:5]
        problems.append(f"manifest entries differ (only in A: {only_a}; only in B: {only_b})")
    if problems:
        raise CompareRefused("runs are not paired: refusing to compare", details=problems)

    oa, ob = _outcomes(ra), _outcomes(rb)
    mismatched = []
    for e in ma.entries:
        x, y = oa.get((e.benchmark, e.source_id)), ob.get((e.benchmark, e.source_id))
        hx = (x.prompt_sha256 or x.expected_prompt_sha256) if x else None
        hy = (y.prompt_sha256 or y.expected_prompt_sha256) if y else None
        if hx and hy and hx != hy:
            mismatched.append(f"{e.benchmark} {e.source_id}: prompt {hx[:12]} vs {hy[:12]}")
    if mismatched:
        raise CompareRefused(
            f"runs rendered different prompts for {len(mismatched)} sample(s): refusing to compare",
            details=mismatched[:20],
        )


def comparison_beside(run_dir: Path) -> CompareResult | None:
    """The paired comparison ``evalpipe run`` wrote beside a variant directory (``RUN/compare.json`` for
    ``RUN/<variant>``), or None when there is none or it cannot be read."""
    path = RunDir(Path(run_dir).parent).compare_json
    if not path.is_file():
        return None
    try:
        return read_model(path, CompareResult)
    except EvalpipeError:
        return None
