"""The sequential rule stopping inside a paired run (``generation.sequential`` with ``in_run``).

Each arm (variant) of the run sends a gated benchmark's rows in the seeded sequence order
(``evalpipe.hashing.sequence_key``, the order ``compare`` judges in) and only as far as released
(``evalscope_bridge.scheduling.SequenceGate`` in the worker).  After every completed sample the arm appends it
to its exchange file (``RUN/sequential/<benchmark>/<variant>.jsonl``, ``artifacts.schema.sequential``) and, at
every look of the stage's wait loop (:meth:`SequentialStopper.poll`), reads every arm's file and:

1. judges the longest prefix of units complete in both the test and the control arm with the rule of
   ``evalpipe.stats.sequential`` (the planned bet tuned to the benchmark's n, as compare.json judges);
   the first crossing ``t*`` of ``1/α`` is a function of the units' values only, so every arm finds the same
   ``t*`` whenever it looks.  An entry dropped before generation (context fit, the served context: never
   sent) keeps its place in the order but is no unit (``evalpipe.stats.unit_scores.dropped_in_both``): the
   rule judges the units that remain, its bet tuned to their number, so a drop is evidence of nothing;
2. before a crossing, releases ``batch_units`` units beyond the prefix complete in every live arm
   (``together``: parallel_variants — the arms advance together, none more than a batch ahead of the slowest),
   or beyond its own (one after another: the arms that ran before are complete or ended);
3. after it, releases up to ``t*`` (an arm that has not reached it yet — the A/A arm of variants run in
   turn — completes the verdict's units, so every arm holds the same pairs) and halts once its own prefix
   reaches ``t*``: rows not yet sent are never sent; in-flight ones finish and are recorded.

A block is one benchmark with a margin of its own, or a pool with a margin (``gated_blocks``): the pool's
units are its members' in the pool's own sequence order (each member's order is that order filtered), each
member — a separate EvalScope task — is released its share of the pool's prefix, and a crossing halts every
member.  Waste beyond the stop is bounded by the batch (released but not yet judged) per arm.  Variants run one after
another: the control runs first (``variants._run_in_turn``) and, the test having no units yet, runs its whole
plan (its spend is bounded by the plan, the fixed design); the test then stops on the control's units; an
A/A arm after them sends exactly the units up to ``t*``.  An arm whose run ended (``<variant>.end.json``:
finished, stopped or failed) is waited for no longer.

Statistics stay in ``evalpipe.stats``; this module only orders, counts and exchanges.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from evalpipe.artifacts import JsonlAppender, RunDir, read_jsonl, write_model
from evalpipe.artifacts.schema.sequential import (
    ArmEnded,
    BenchmarkStop,
    InRunStopReason,
    SequenceRecord,
    SequentialStops,
)
from evalpipe.clock import utc_now
from evalpipe.errors import ArtifactError
from evalpipe.hashing import block_order, generation_sizes
from evalpipe.stats.pilot_rule import PilotCounts, PilotRule, chance_discordance
from evalpipe.stats.unit_scores import AttemptState, PairedState, dropped_in_both, unit_difference

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.evalscope import IndexMap
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.artifacts.schema.pilot import PilotDecision
    from evalpipe.config.models import RunConfig
    from evalpipe.evalscope_bridge.protocol import Sample

Verdict = Literal["non-inferior", "inferior", "inconclusive"]


class Releases(Protocol):
    """What the stopper asks of the worker (``evalscope_bridge.runner.WorkerProcess`` implements it)."""

    def release(self, benchmark: str, units: int) -> None: ...

    def halt(self, benchmark: str) -> None: ...


@dataclass(frozen=True)
class SequentialArm:
    """This run's place in a paired run whose sequential rule stops inside it."""

    exchange: Path
    variant: str
    test: str
    control: str
    variants: tuple[str, ...]
    together: bool

    def ended_marker(self, variant: str) -> Path:
        return self.exchange / f"{variant}.end.json"

    def begin(self) -> None:
        """A (re)started arm is not ended."""
        self.ended_marker(self.variant).unlink(missing_ok=True)

    def end(self) -> None:
        """This arm's run is over (in any way): no arm waits for it any longer."""
        self.exchange.mkdir(parents=True, exist_ok=True)
        write_model(self.ended_marker(self.variant), ArmEnded(variant=self.variant, ended_at=utc_now()))

    def ended(self, variant: str) -> bool:
        return self.ended_marker(variant).is_file()


def arm_for(cfg: RunConfig, variant: str | None, root: Path, *, together: bool) -> SequentialArm | None:
    """The arm of ``variant`` in a run rooted at ``root``, or None when nothing stops inside the run (no
    ``generation.sequential`` / ``in_run`` off, no variants, no control)."""
    seq = cfg.generation.sequential
    if seq is None or not seq.in_run or variant is None or not cfg.variants:
        return None
    controls = [v.name for v in cfg.variants[1:] if v.repeat_of is None]
    if not controls:
        return None
    names = tuple(v.name for v in cfg.variants)
    return SequentialArm(RunDir(root).sequential_exchange, variant, names[0], controls[0], names, together)


def gated_blocks(cfg: RunConfig) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Block → (margin in points, member benchmarks) of every block the rule judges inside the run.

    A pool with a margin (``pools:``; its units interleave its members, which run side by side as separate
    EvalScope tasks, so only under the ``pipelined`` schedule — one benchmark at a time could never advance
    the pool's prefix), its members then gated by it (a member of an earlier gated pool is not taken twice);
    then every other benchmark with a margin of its own.  A pool under the ``sequential`` schedule is judged
    after the run, on the units its members sent."""
    out: dict[str, tuple[float, tuple[str, ...]]] = {}
    taken: set[str] = set()
    configured = {b.name for b in cfg.benchmarks}
    if cfg.generation.schedule == "pipelined":
        for pool, members in cfg.pools.items():
            margin = cfg.gates.points_for("non_inferiority_margin_pts", pool)
            if margin is None or taken & set(members) or not set(members) <= configured:
                continue
            out[pool] = (margin, tuple(members))
            taken |= set(members)
    for bench in cfg.benchmarks:
        margin = cfg.gates.points_for("non_inferiority_margin_pts", bench.name)
        if margin is not None and bench.name not in taken and bench.name not in out:
            out[bench.name] = (margin, (bench.name,))
    return out


def dropped_entries(manifest: Manifest, index_map: IndexMap) -> list[tuple[str, str, str]]:
    """Manifest entries ``(benchmark, subset, source_id)`` not materialised: dropped before generation (the
    context fit, the served context) — units of the order without an answer in any arm."""
    materialised = {(e.benchmark, e.source_id) for e in index_map.entries}
    return [
        (e.benchmark, e.subset, e.source_id)
        for e in manifest.entries
        if (e.benchmark, e.source_id) not in materialised
    ]


def in_run_order(
    seed: int,
    benchmark: str,
    rows: Iterable[tuple[str, int, str]],
    generations: Mapping[tuple[str, str], int] | None = None,
) -> list[tuple[str, int]]:
    """Rows ``(subset, index, source_id)`` as ``(subset, index)`` in the block order
    (``evalpipe.hashing.block_order``: generations first, then the seeded sequence order)."""
    by_id = {sid: (subset, index) for subset, index, sid in rows}
    return [by_id[sid] for _, sid in block_order(seed, ((benchmark, sid) for sid in by_id), generations)]


#: An exchange record's key: EvalScope's subset and sample index (row x repeats + attempt).
RowKey = tuple[str, int]


@dataclass
class _Member:
    """One gated benchmark of this arm: its rows in sequence order, its records, what it was released."""

    benchmark: str
    order: list[tuple[str, int]]
    own: dict[tuple[str, int], SequenceRecord] = field(default_factory=dict)
    released: int = 0
    halted: bool = False
    dropped: frozenset[tuple[str, int]] = frozenset()
    #: EvalScope's attempts per row of the task (``RunConfig.task_attempts``): its index is row × repeats + attempt
    repeats: int = 1
    #: Row → the attempts of it asked (an internal pilot's decision); a row not in it is asked ``repeats``.
    asked: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.order)

    def attempts_asked(self, row: tuple[str, int]) -> int:
        return self.asked.get(row, self.repeats)

    @cached_property
    def rows(self) -> frozenset[tuple[str, int]]:
        return frozenset(self.order)

    def checked(self, path: Path, records: dict[RowKey, SequenceRecord]) -> dict[RowKey, SequenceRecord]:
        """``records`` (an exchange file's), refused naming the file when one is no attempt of this run's rows
        (an edited or foreign file would judge units on answers this run never had)."""
        for subset, index in records:
            if index < 0 or (subset, index // self.repeats) not in self.rows:
                raise ArtifactError(
                    f"{path}: field index: {subset}/{index} is no attempt of a {self.benchmark} row of this run "
                    f"(index_map.json, {self.repeats} attempt(s) per row); nothing was rewritten"
                )
        return records


@dataclass
class _Block:
    """A block the rule judges: one benchmark, or a pool whose units are its members' in the pool's sequence
    order (``(member, position in the member's order)``: the members' orders are this order filtered)."""

    name: str
    margin_pts: float
    batch: int
    members: tuple[str, ...]
    order: list[tuple[str, int]]
    generations: list[int] = field(default_factory=list)
    dropped: int = 0
    stop_unit: int | None = None
    stop_position: int | None = None
    verdict: Verdict = "inconclusive"
    partner_ended: bool = False
    #: With an internal pilot: the block's first order positions that hold its pilot units (its first K units
    #: that are not dropped, and the drops among them); None: no pilot.
    pilot_position: int | None = None
    pilot_units: int = 0
    #: The pilot units asked twice in every arm (``(member, source_id)``, in the block's order): the first
    #: ``PilotRule.agreement_units`` of them.
    agreement: list[tuple[str, str]] = field(default_factory=list)

    @property
    def planned_n(self) -> int | list[int]:
        """The planned bet's n: the block's units that remain after the drops decided before generation, or
        per unit when ``--extend`` grew it (old units keep the n of the plan they were drawn for:
        ``evalpipe.stats.sequential.planned_n_per_unit``; ``generations`` counts the remaining units)."""
        # import cost: numpy (stats.sequential), only for a sequential rule
        from evalpipe.stats.sequential import planned_n_per_unit

        return planned_n_per_unit(self.generations) if len(self.generations) > 1 else self.n - self.dropped

    @property
    def n(self) -> int:
        return len(self.order)

    def member_units(self, units: int) -> dict[str, int]:
        """How many of each member's units the block's first ``units`` hold."""
        out = dict.fromkeys(self.members, 0)
        for bench, _ in self.order[:units]:
            out[bench] += 1
        return out


def _unit_states(
    records: Mapping[tuple[str, int], SequenceRecord], member: _Member, subset: str, row: int
) -> list[PairedState] | None:
    """A unit's attempt states (the attempts it is asked), or None while one is pending (no record yet, or
    not sent: beyond the stop).  A row dropped before sending (context fit, the served context) is
    ``dropped`` in every attempt."""
    asked = member.attempts_asked((subset, row))
    if (subset, row) in member.dropped:
        return ["dropped"] * asked
    states: list[PairedState] = []
    for attempt in range(asked):
        rec = records.get((subset, row * member.repeats + attempt))
        state = rec.attempt_state() if rec is not None else None
        if state is None:
            return None
        states.append(state)
    return states


def read_records(path: Path) -> dict[tuple[str, int], SequenceRecord]:
    """An arm's exchange file, the last record of each attempt winning (a resume re-sends what it lost)."""
    out: dict[tuple[str, int], SequenceRecord] = {}
    if not path.is_file():
        return out
    for rec in read_jsonl(path, SequenceRecord):
        if rec.cached and (rec.subset, rec.index) in out:
            continue  # a cached score never overrides the record made when the sample was sent
        out[(rec.subset, rec.index)] = rec
    return out


class SequentialStopper:
    """This arm's side of the rule inside the EvalScope stage (module docstring)."""

    def __init__(
        self,
        arm: SequentialArm,
        cfg: RunConfig,
        seed: int,
        index_map: IndexMap,
        *,
        generations: Mapping[tuple[str, str], int] | None = None,
        dropped: Iterable[tuple[str, str, str]] = (),
        pilot: PilotDecision | None = None,
    ) -> None:
        """``generations``: the run's entries of earlier generations (``--extend``:
        ``ExtensionRecord.generation_of``), which come first in the block's order, in their old order;
        ``dropped``: manifest entries ``(benchmark, subset, source_id)`` not materialised (context fit, the
        served context) — they keep their place in the order, so the order is the manifest's, and are no unit
        of the rule (dropped before generation in every arm: the rule judges the units that remain).

        With ``generation.sequential.pilot`` every block's first ``K`` units (``evalpipe.stats.pilot``) are its
        pilot: before ``pilot`` (the decision, ``pilot.json``) exists this arm sends only them, one attempt
        each, and ends there; once it exists the remaining units go at the attempts it chose."""
        seq = cfg.generation.sequential
        assert seq is not None
        self.arm = arm
        self.alpha = seq.eprocess_alpha
        self.repeats = cfg.generation.repeats
        self.pilot_rule = seq.pilot
        self.decision = pilot
        self._lock = threading.Lock()
        self._logs: dict[str, JsonlAppender] = {}
        self.members: dict[str, _Member] = {}
        self.blocks: dict[str, _Block] = {}
        self._source_ids: dict[str, dict[tuple[str, int], str]] = {}  # member → row → source id
        batch = seq.batch_units or max(1, cfg.generation.concurrency // self.repeats)
        not_materialised: dict[str, list[tuple[str, str]]] = {}
        for bench, subset, source_id in dropped:
            not_materialised.setdefault(bench, []).append((subset, source_id))
        for name, (margin, members) in gated_blocks(cfg).items():
            rows: dict[tuple[str, str], tuple[str, int]] = {}  # (member, source_id) → (subset, row)
            placeholders: dict[str, set[tuple[str, int]]] = {}
            never_sent: set[tuple[str, str]] = set()
            for member in members:
                for e in index_map.for_benchmark(member):
                    rows[(member, e.source_id)] = (e.subset, e.index)
                    self._source_ids.setdefault(member, {})[(e.subset, e.index)] = e.source_id
                for k, (subset, source_id) in enumerate(sorted(not_materialised.get(member, []))):
                    rows[(member, source_id)] = (subset, -1 - k)  # a row EvalScope never holds
                    self._source_ids.setdefault(member, {})[(subset, -1 - k)] = source_id
                    placeholders.setdefault(member, set()).add((subset, -1 - k))
                    never_sent.add((member, source_id))
            if not rows:
                continue
            units = block_order(seed, rows, generations)
            present = list(
                dict.fromkeys(member for member, _ in units)
            )  # a benchmark not sampled is not gated
            position: dict[tuple[str, str], int] = {}
            for member in present:
                mine = [u for u in units if u[0] == member]
                position.update((u, i) for i, u in enumerate(mine))
                self.members[member] = _Member(
                    member, [rows[u] for u in mine], dropped=frozenset(placeholders.get(member, set()))
                )
            order = [(member, position[(member, sid)]) for member, sid in units]
            sizes = generation_sizes((u for u in units if u not in never_sent), generations)
            dropped_units = sum(1 for u in units if u in never_sent)
            block = _Block(name, margin, batch, tuple(present), order, sizes, dropped_units)
            for member in present:
                self.members[member].repeats = cfg.task_attempts(member)
            if self.pilot_rule is not None:
                self._size_pilot(block, units, never_sent, rows)
            self.blocks[name] = block

    def _size_pilot(
        self,
        block: _Block,
        units: list[tuple[str, str]],
        never_sent: set[tuple[str, str]],
        rows: Mapping[tuple[str, str], tuple[str, int]],
    ) -> None:
        """The block's pilot (its first ``K`` units that remain, and the drops among them) and every row's
        asked attempts: one until the decision, then the decision's (``PilotDecision.attempts_for``: one in the
        pilot, its choice after it)."""
        assert self.pilot_rule is not None
        rule = PilotRule(**self.pilot_rule.model_dump())
        remaining = len(units) - len(never_sent & set(units))
        k = rule.pilot_units(remaining) if remaining else 0
        twice = rule.agreement_units(k)
        seen = position = 0
        agreement: set[tuple[str, str]] = set()
        while position < len(units) and seen < k:
            if units[position] not in never_sent:
                if seen < twice:
                    agreement.add(units[position])
                seen += 1
            position += 1
        block.pilot_position, block.pilot_units = position, k
        block.agreement = [u for u in units[:position] if u in agreement]
        for member, source_id in units:  # the decision's own rule (pilot.json), the one the outcomes read
            if self.decision is not None:
                asked = self.decision.attempts_for(member, source_id)
            else:
                asked = 2 if (member, source_id) in agreement else 1
            self.members[member].asked[rows[(member, source_id)]] = asked

    def agreement_entries(self, block: str) -> list[str]:
        """The block's pilot entries asked twice, ``<benchmark>/<source_id>`` in its order (``pilot.json``)."""
        return [f"{bench}/{source_id}" for bench, source_id in self.blocks[block].agreement]

    def pilot_entries(self, block: str) -> list[str]:
        """The block's pilot entries, ``<benchmark>/<source_id>`` in its order (``pilot.json``)."""
        b = self.blocks[block]
        out = []
        for bench, position in b.order[: b.pilot_position or 0]:
            out.append(f"{bench}/{self._source_ids[bench][self.members[bench].order[position]]}")
        return out

    def path(self, benchmark: str, variant: str) -> Path:
        return self.arm.exchange / benchmark / f"{variant}.jsonl"

    def sequence(self, benchmark: str) -> list[tuple[str, int]] | None:
        """The rows in the order the worker sends them, or None for a benchmark the rule does not gate."""
        member = self.members.get(benchmark)
        return list(member.order) if member is not None else None

    def asked_total(self, benchmark: str) -> int | None:
        """The attempts of ``benchmark`` this pass may send at all: while piloting, one for each of its pilot
        units and a second for its agreement units; after the decision, the sum of every row's; None for a
        benchmark no pilot sizes."""
        member = self.members.get(benchmark)
        if member is None or self.pilot_rule is None:
            return None
        if self.piloting():
            pilot = sum(
                1
                for block in self.blocks.values()
                for bench, _ in block.order[: block.pilot_position or 0]
                if bench == benchmark
            )
            twice = sum(
                1 for block in self.blocks.values() for bench, _ in block.agreement if bench == benchmark
            )
            return pilot + twice
        return sum(member.attempts_asked(row) for row in member.order)

    def attempts(self, benchmark: str) -> list[int] | None:
        """Per row of ``sequence``, the attempts of it that may be sent; None: every attempt (no pilot)."""
        member = self.members.get(benchmark)
        if member is None or self.pilot_rule is None:
            return None
        return [member.attempts_asked(row) for row in member.order]

    def begin(self, benchmark: str) -> None:
        """The benchmark starts (or resumes): what this arm recorded before counts."""
        member = self.members[benchmark]
        path = self.path(benchmark, self.arm.variant)
        own = member.checked(path, read_records(path))
        log = JsonlAppender(self.path(benchmark, self.arm.variant))
        with self._lock:  # the worker's events (the stage's reader threads) and the looks see both at once
            member.own = {**own, **member.own}
            self._logs[benchmark] = log

    def observe(self, benchmark: str, event: Sample) -> None:
        """One finished (or refused) sample of this arm, from the worker's events."""
        member = self.members.get(benchmark)
        if member is None or (event.cached and (event.subset, event.index) in member.own):
            return
        rec = sequence_record(event)
        with self._lock:
            member.own[(rec.subset, rec.index)] = rec
            log = self._logs.get(benchmark)
            if log is not None:
                log.append(rec)

    def _values(self, block: _Block, variant: str) -> list[list[PairedState]]:
        """The block's leading units complete in ``variant``'s arm, in the block's order, as attempt states."""
        records: dict[str, Mapping[tuple[str, int], SequenceRecord]] = {}
        for name in block.members:
            if variant == self.arm.variant:
                with self._lock:
                    records[name] = dict(self.members[name].own)
            else:
                path = self.path(name, variant)
                records[name] = self.members[name].checked(path, read_records(path))
        out: list[list[PairedState]] = []
        for bench, position in block.order:
            member = self.members[bench]
            subset, row = member.order[position]
            states = _unit_states(records[bench], member, subset, row)
            if states is None:
                break
            out.append(states)
        return out

    def _judged(
        self, block: _Block, seen: dict[str, list[list[PairedState]]] | None = None
    ) -> tuple[list[int], list[float]]:
        """The block's leading units complete in both the test and the control arm, less those dropped in both
        (no units): their order positions and their paired differences.  ``seen``: the arms' units as read
        at this look (an arm read already is not read again; the ones read here are added)."""
        seen = {} if seen is None else seen
        for variant in (self.arm.test, self.arm.control):
            if variant not in seen:
                seen[variant] = self._values(block, variant)
        test, control = seen[self.arm.test], seen[self.arm.control]
        positions = [
            i for i, (t, c) in enumerate(zip(test, control, strict=False)) if not dropped_in_both(t, c)
        ]
        return positions, [unit_difference(test[i], control[i]) for i in positions]

    def _judge(self, block: _Block, seen: dict[str, list[list[PairedState]]] | None = None) -> None:
        """Look for the rule's first crossing on the units judged so far; record it on the block."""
        # import cost: numpy (stats.sequential), only for a sequential rule
        from evalpipe.stats.sequential import sequential_decision

        positions, diffs = self._judged(block, seen)
        if not diffs:
            return
        decision = sequential_decision(diffs, block.margin_pts, self.alpha, planned_n=block.planned_n)
        if decision.stop_reason == "crossing":
            block.stop_unit, block.verdict = decision.units_used, decision.verdict
            block.stop_position = positions[decision.units_used - 1] + 1

    def piloting(self) -> bool:
        """An internal pilot is configured and not decided yet: every arm sends only the pilot units."""
        return self.pilot_rule is not None and self.decision is None

    def poll(self, worker: Releases) -> None:
        """One look at every gated block still sending: judge, then release or halt (module docstring); while
        piloting, nothing beyond the pilot is released and the block halts once this arm holds its pilot."""
        for block in self.blocks.values():
            with self._lock:
                begun = [m for m in block.members if m in self._logs and not self.members[m].halted]
            if not begun:
                continue
            own = self._values(block, self.arm.variant)
            # one read of each arm per look: the release below is bounded by what the judge saw, never by
            # units an arm completed after it looked (they could lie past the crossing it has not judged)
            seen = {self.arm.variant: own}
            if block.stop_unit is None:
                self._judge(block, seen)
            if block.stop_position is not None:
                self._release(block, block.stop_position, begun, worker)
                if len(own) >= block.stop_position:
                    self._halt(begun, worker)
                continue
            limit = block.n
            if self.piloting():  # nothing beyond the pilot before the decision
                limit = block.pilot_position or 0
                if len(own) >= limit:
                    self._halt(begun, worker)
                    continue
            live = [len(own)]
            if self.arm.together:
                for variant in self.arm.variants:
                    if variant == self.arm.variant:
                        continue
                    if self.arm.ended(variant):
                        block.partner_ended = True
                        continue
                    live.append(len(seen[variant] if variant in seen else self._values(block, variant)))
            self._release(block, min(limit, min(live) + block.batch), begun, worker)

    def _halt(self, members: list[str], worker: Releases) -> None:
        for name in members:
            self.members[name].halted = True
            worker.halt(name)

    def pilot_counts(self, block_name: str, accuracy: float) -> tuple[PilotCounts, Verdict | None]:
        """The block's pilot as the test and control arms answered it (``evalpipe.stats.pilot_rule.PilotCounts``):
        judged units (complete in both, not dropped in both, before a crossing inside the pilot), how many of
        them differ in their first attempts, and over the judged units asked twice the within-unit sums of
        ``(d₁ − d₂)²/2``; the chance level at the block's design ``accuracy``; and the crossing's verdict when the
        e-processes crossed inside the pilot."""
        block = self.blocks[block_name]
        if block.stop_unit is None:
            self._judge(block)
        end = block.pilot_position or 0
        crossed = block.stop_position is not None and block.stop_position <= end
        if crossed:
            assert block.stop_position is not None
            end = block.stop_position
        seen: dict[str, list[list[PairedState]]] = {}
        positions, _ = self._judged(block, seen)
        test, control = seen[self.arm.test], seen[self.arm.control]
        judged = discordant = paired = 0
        within = squares = 0.0
        for i in positions:
            if i >= end:
                break
            judged += 1
            first = unit_difference(test[i][:1], control[i][:1])
            discordant += first != 0.0
            if len(test[i]) >= 2 and len(control[i]) >= 2:
                second = unit_difference(test[i][1:2], control[i][1:2])
                x = (first - second) ** 2 / 2.0
                paired, within, squares = paired + 1, within + x, squares + x * x
        counts = PilotCounts(
            judged, discordant, judged * chance_discordance(accuracy), paired, within, squares
        )
        return counts, block.verdict if crossed else None

    def _release(self, block: _Block, units: int, members: list[str], worker: Releases) -> None:
        """Release the block's first ``units`` to every member that has begun (each its share of them)."""
        for name, count in block.member_units(units).items():
            member = self.members[name]
            if name in members and count > member.released:
                member.released = count
                worker.release(name, count)

    def finish(self, benchmark: str) -> None:
        """The benchmark's run is over: no more looks at it."""
        with self._lock:
            log = self._logs.pop(benchmark, None)
        if log is not None:
            log.fsync()
            log.close()

    def stops(self) -> SequentialStops:
        """This arm's stop record (``sequential_stop.json``): one line per gated benchmark."""
        out = []
        for block in self.blocks.values():
            reason: InRunStopReason
            if block.stop_unit is not None:
                reason = "crossing"
            elif block.partner_ended:
                reason = "partner ended"
            else:
                reason = "units exhausted"
            for name in block.members:
                member = self.members[name]
                rows: dict[tuple[str, int], list[SequenceRecord]] = {}
                for (subset, index), rec in member.own.items():
                    if index % member.repeats < member.attempts_asked((subset, index // member.repeats)):
                        rows.setdefault((subset, index // member.repeats), []).append(rec)
                sent = sum(1 for recs in rows.values() if any(r.sent for r in recs))
                complete = sum(
                    1
                    for row, recs in rows.items()
                    if len(recs) == member.attempts_asked(row)
                    and all(r.sent and r.correct is not None for r in recs)
                )
                prefix = 0
                for subset, row in member.order:
                    if (subset, row) in member.dropped:  # never sent, but done: no answer (_unit_states)
                        prefix += 1
                        continue
                    recs = [
                        member.own.get((subset, row * member.repeats + a))
                        for a in range(member.attempts_asked((subset, row)))
                    ]
                    if not all(r is not None and r.sent for r in recs):
                        break
                    prefix += 1
                out.append(
                    BenchmarkStop(
                        benchmark=name,
                        block=block.name if block.members != (name,) else None,
                        planned_units=member.n,
                        batch_units=block.batch,
                        test=self.arm.test,
                        control=self.arm.control,
                        together=self.arm.together,
                        units_sent=sent,
                        units_sent_prefix=prefix,
                        units_complete=complete,
                        stop_unit=block.stop_unit,
                        verdict=block.verdict,
                        stop_reason=reason,
                        units_not_sent=member.n - sent,
                    )
                )
        return SequentialStops(variant=self.arm.variant, benchmarks=out)

    def write(self, rundir: RunDir) -> None:
        if self.blocks:
            write_model(rundir.sequential_stop, self.stops())


def sequence_record(event: Sample) -> SequenceRecord:
    """The exchange record of one worker event: its final state (``event_state``) and the legacy ``correct``."""
    correct = None if not event.sent else (event.correct if event.correct is not None else 0.0)
    return SequenceRecord(
        subset=event.subset,
        index=event.index,
        correct=correct,
        sent=event.sent,
        cached=event.cached,
        state=event_state(event),
    )


def event_state(event: Sample) -> AttemptState | None:
    """The final state of the attempt an event reports: None when not sent (beyond the stop); no_answer when
    it failed (EvalScope retried inside the worker: the event is final); else correct/wrong by the summary's
    rule as the worker applied it (``patches._correct``: a budget-exhausted answer is wrong, cached ones too)."""
    if not event.sent:
        return None
    if not event.ok:
        return "no_answer"
    return "correct" if event.correct == 1.0 else "wrong"
