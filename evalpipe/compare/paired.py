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
from dataclasses import dataclass, replace
from pathlib import Path

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import (
    CompareResult,
    PairedBenchmark,
    PlacementCell,
)
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.sequential import SequentialStops
from evalpipe.artifacts.schema.sources import GeneratedItem
from evalpipe.benchmarks import length_buckets
from evalpipe.compare.block import aa_only_block, block_of_pairs, left_out, with_fields
from evalpipe.compare.design import design_check
from evalpipe.compare.paired_design import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    AAPair,
    Arms,
    Bootstrap,
    GatePolicy,
    PairedDesign,
)
from evalpipe.compare.seeds import run_temperature, with_temperature
from evalpipe.compare.sequential import sequential_fields
from evalpipe.compare.units import BlockGate, CompareRefused, PairedOutcomes, drop_reasons, run_label
from evalpipe.compare.versions import paired_versions
from evalpipe.config.gates import DesignAssumption
from evalpipe.config.loader import load_config
from evalpipe.config.models import SequentialConfig
from evalpipe.errors import EvalpipeError
from evalpipe.hashing import block_order, generation_sizes, sha256_hex
from evalpipe.samplers.extend import entry_generations

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "AAPair",
    "Arms",
    "Bootstrap",
    "CompareRefused",
    "GatePolicy",
    "PairedDesign",
    "compare_noise",
    "compare_runs",
    "comparison_beside",
    "placement_grid",
    "sequential_fields",
]

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


def compare_runs(design: PairedDesign) -> CompareResult:
    """Paired comparison of A (under test) with B (control), and — ``design.aa`` — the A/A noise of a repeat
    run (``repeat_of``) beside it.

    ``gate.sequential``: every block with a margin (not the length buckets) is also judged unit by unit
    (``sequential_fields``).  ``gate.pools``: name → member benchmarks, each judged as one block over the
    members' samples (``pools`` of compare.json).  ``gate.assumed``: what each block's design assumes (config
    ``design:``; default: run A's own config copy's), checked against the discordance measured here
    (``design_check``)."""
    arms = design.arms
    ra, rb = RunDir(arms.test), RunDir(arms.control)
    ma = _paired_manifest(ra, rb)
    oa, ob = _outcomes(ra), _outcomes(rb)
    pair, rc, label_aa = PairedOutcomes(oa, ob), None, None
    compared = [ra, rb]
    if design.aa is not None:
        rc = RunDir(design.aa.repeat)
        rd = RunDir(design.aa.of) if design.aa.of is not None else rb
        _paired_manifest(rd, rc)
        compared += [rc, rd]
        pair = PairedOutcomes(oa, ob, repeat=_outcomes(rc), repeated=_outcomes(rd))
        label_aa = design.aa.label or run_label(rc, "B'")
    versions = paired_versions(compared, [b.benchmark for b in ma.benchmarks])
    comparison = _Comparison.of(ra, rb, rc, ma, pair, design.gate, design.bootstrap, design.gate.sequential)
    blocks, pooled, overall = comparison.blocks()
    la, lb = arms.test_label or run_label(ra, "A"), arms.control_label or run_label(rb, "B")
    return CompareResult(
        run_a=str(ra.root),
        run_b=str(rb.root),
        label_a=la,
        label_b=lb,
        run_aa=str(rc.root) if rc is not None else None,
        label_aa=label_aa,
        aa_only=False,
        manifest_sha256=sha256_hex(ra.manifest.read_bytes()),
        benchmark_versions=versions,
        bootstrap_resamples=design.bootstrap.resamples,
        bootstrap_seed=design.bootstrap.seed,
        confidence=design.bootstrap.confidence,
        scoring="paired rule",
        benchmarks=blocks,
        pools=pooled,
        overall=overall,
    )


def compare_noise(arms: Arms, gate: GatePolicy | None = None, bootstrap: Bootstrap | None = None) -> CompareResult:
    """The record of the server's own noise: B is A's repeat and there is no A/B control — the A/A
    discordance, the responses that differed, the MDE an A/B of this size would have; no A/B fields.  Both
    arms are scored by the summary's rule (no arm under test) and no block is judged unit by unit
    (``gate.sequential`` is not used)."""
    gate = gate if gate is not None else GatePolicy()
    bootstrap = bootstrap if bootstrap is not None else Bootstrap()
    ra, rb = RunDir(arms.test), RunDir(arms.control)
    ma = _paired_manifest(ra, rb)
    versions = paired_versions([ra, rb], [b.benchmark for b in ma.benchmarks])
    oa, ob = _outcomes(ra), _outcomes(rb)
    pair = PairedOutcomes(oa, ob, repeat=ob, repeated=oa, scoring="summary rule")
    blocks, pooled, overall = _Comparison.of(ra, rb, None, ma, pair, gate, bootstrap, None).blocks()
    lb = arms.control_label or run_label(rb, "B")
    return CompareResult(
        run_a=str(ra.root),
        run_b=str(rb.root),
        label_a=arms.test_label or run_label(ra, "A"),
        label_b=lb,
        run_aa=str(rb.root),
        label_aa=lb,
        aa_only=True,
        manifest_sha256=sha256_hex(ra.manifest.read_bytes()),
        benchmark_versions=versions,
        bootstrap_resamples=bootstrap.resamples,
        bootstrap_seed=bootstrap.seed,
        confidence=bootstrap.confidence,
        scoring="summary rule",
        # the pair IS the noise: no A/B discordance, nothing to hold against it
        benchmarks=[aa_only_block(b) for b in blocks],
        pools=[aa_only_block(b) for b in pooled],
        overall=aa_only_block(overall) if overall is not None else None,
    )


Key = tuple[str, str, str]


@dataclass(frozen=True)
class _Comparison:
    """One comparison's inputs, read once, and the blocks built from them: run A's directory and manifest, the
    paired outcomes, the units every compared arm sent (``sent``) and where the rule crossed inside the run
    (``crossed``), each unit's generation after ``--extend``, the gate policy, the bootstrap and the sequential
    rule (None: no block is judged unit by unit)."""

    run_a: RunDir
    manifest: Manifest
    pair: PairedOutcomes
    sent: dict[str, int]
    crossed: dict[str, int | None]
    gate: GatePolicy
    bootstrap: Bootstrap
    sequential: SequentialConfig | None

    @classmethod
    def of(
        cls,
        ra: RunDir,
        rb: RunDir,
        rc: RunDir | None,
        manifest: Manifest,
        pair: PairedOutcomes,
        gate: GatePolicy,
        bootstrap: Bootstrap,
        sequential: SequentialConfig | None,
    ) -> _Comparison:
        """The comparison of A and B (and the A/A repeat ``rc``): the rule stopped sending inside the run, so
        every block pairs only the units every compared arm sent; after ``--extend`` earlier generations come
        first, in their own order (the in-run stop's order too)."""
        sent, crossed = _units_sent([ra, rb, *([rc] if rc is not None else [])])
        drops = {**drop_reasons(rb), **drop_reasons(ra)}
        pair = replace(pair, drops=drops, generations=entry_generations(ra.root))
        return cls(ra, manifest, pair, sent, crossed, gate, bootstrap, sequential)

    def in_order(self, keys: list[Key]) -> list[Key]:
        by_unit = {k[:2]: k for k in keys}
        return [by_unit[u] for u in block_order(self.manifest.seed, by_unit, self.pair.generations)]

    def only_sent(self, keys: list[Key], *, prefix: bool = False) -> list[Key]:
        """Each benchmark's units sent: the first ``units_sent_prefix`` of its manifest entries in the block
        order — the stop counts them in that order, an entry dropped before sending (context fit) holding
        its place (``SequentialStopper``), so the cut keeps exactly the units the stop counted; ``prefix`` (a
        pool the rule gated): the longest prefix of the block's own order whose units were all sent, the
        units the rule judged inside the run."""
        if not self.sent:
            return keys
        kept: set[tuple[str, str]] = set()
        for bench in dict.fromkeys(k[0] for k in keys):
            mine = self.in_order([k for k in keys if k[0] == bench])
            kept.update(k[:2] for k in mine[: self.sent.get(bench, len(mine))])
        if prefix:
            ordered = self.in_order(keys)
            cut = next((i for i, k in enumerate(ordered) if k[:2] not in kept), len(ordered))
            kept = {k[:2] for k in ordered[:cut]}
        return [k for k in keys if k[:2] in kept]

    def block(self, name: str, keys: list[Key], margin: float | None) -> PairedBenchmark:
        """The paired block ``name`` over ``keys``, judged against ``margin`` (None: not gated).  Units dropped
        before generation in both arms are no units: the plan is the units that remain, and every one of them
        is counted in the block's dropped (those past the stop too)."""
        gone = left_out(keys, self.pair.test, self.pair.control)
        planned = len(keys) - len(gone) if any(k[0] in self.sent for k in keys) else None
        plan_sizes = generation_sizes((k[:2] for k in keys if k[:2] not in gone), self.pair.generations)
        judged = self.only_sent(keys, prefix=name in self.crossed and len({k[0] for k in keys}) > 1)
        cut = {k[:2] for k in judged}
        keys = [k for k in keys if k[:2] in cut or k[:2] in gone]
        confidence = self.bootstrap.confidence
        gate = BlockGate(
            margin_pts=margin,
            must_catch_pts=self.gate.must_catch(name) if margin is not None else None,
            fixed_alpha=self.gate.alpha if self.gate.alpha is not None else (1.0 - confidence) / 2.0,
            sequential=(self.sequential, self.manifest.seed) if self.sequential is not None else None,
            planned=planned,
            stop_unit=self.crossed.get(name),
            plan_sizes=plan_sizes,
        )
        return block_of_pairs(name, keys, self.pair, self.bootstrap, gate)

    def benchmark_block(self, bench: str, stratify_by: str) -> PairedBenchmark:
        """One benchmark's block, with its length buckets and (a generated benchmark) its placement grid."""
        ma = self.manifest
        keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries if e.benchmark == bench]
        paired = self.block(bench, keys, self.gate.margins(bench))
        buckets = length_buckets(bench, stratify_by, [k[2] for k in keys])
        if buckets:
            paired.by_length = [
                with_fields(
                    self.block(
                        f"{bench} {length}", self.only_sent([k for k in keys if bucket_of[k[2]] == length]), None
                    ),
                    {"length": length},
                )
                for length, bucket_of in buckets
            ]
        generated = {(e.benchmark, e.source_id): e.generated for e in ma.entries if e.benchmark == bench}
        if keys and all(g is not None for g in generated.values()):
            paired.by_placement = placement_grid(
                keys, generated, lambda name, cell: self.block(name, self.only_sent(cell), None)
            )
        return paired

    def blocks(self) -> tuple[list[PairedBenchmark], list[PairedBenchmark], PairedBenchmark | None]:
        """Every benchmark's block, every pool's and the overall one (two benchmarks or more), each with its
        design check and, with repeats, the temperature its seeds' check names."""
        ma = self.manifest
        blocks = [self.benchmark_block(b.benchmark, b.plan.stratify_by) for b in ma.benchmarks]
        pooled = []
        for pool, members in self.gate.pools.items():
            keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries if e.benchmark in members]
            pooled.append(with_fields(self.block(pool, keys, self.gate.margins(pool)), {"members": list(members)}))
        all_keys = [(e.benchmark, e.source_id, e.stratum) for e in ma.entries]
        overall = self.block("all", all_keys, self.gate.margins("all")) if len(blocks) > 1 else None
        assumed = self.gate.assumed if self.gate.assumed is not None else _design_of(self.run_a)
        blocks = [with_fields(b, {"design_check": design_check(b, assumed.get(b.benchmark))}) for b in blocks]
        pooled = [with_fields(b, {"design_check": design_check(b, assumed.get(b.benchmark))}) for b in pooled]
        if any(b.attempt_seeds is not None for b in blocks):  # repeats: the seeds' check names the temperature
            temperature = run_temperature(self.run_a)
            blocks = [with_temperature(b, temperature) for b in blocks]
            pooled = [with_temperature(b, temperature) for b in pooled]
            overall = with_temperature(overall, temperature) if overall is not None else None
        return blocks, pooled, overall


def _design_of(rundir: RunDir) -> Mapping[str, DesignAssumption]:
    """The ``design:`` of the run's own config copy; empty without a readable one."""
    if not rundir.config_copy.is_file():
        return {}
    try:
        return load_config(rundir.config_copy, check_sampling=False).design
    except EvalpipeError:
        return {}


def _units_sent(arms: list[RunDir]) -> tuple[dict[str, int], dict[str, int | None]]:
    """Benchmark → units sent by every arm (``sequential_stop.json``'s leading units of the sequence order),
    for the benchmarks whose sending the sequential rule stopped inside the run (empty when none did), and
    block (a benchmark, or the pool that gated it) → the unit at which it crossed there (the first arm's
    record that names one)."""
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


def _paired_manifest(ra: RunDir, rb: RunDir) -> Manifest:
    """A's manifest, once ``_check_paired`` found both runs paired."""
    ma, mb = read_model(ra.manifest, Manifest), read_model(rb.manifest, Manifest)
    _check_paired(ra, rb, ma, mb)
    return ma


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
