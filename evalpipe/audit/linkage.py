"""Request ↔ sample linkage and the response-selection rule.

An attempt belongs to the sample whose prompt hash equals the attempt's ``messages_sha256`` (the
same ``evalpipe.hashing.prompt_sha256`` is applied by the proxy and to EvalScope's prediction).  If
a dataset holds the same prompt twice, its samples form one *prompt group* sharing their attempts;
counts and the selection rule are then judged per group.

Declared response-selection rule: the response EvalScope used for a sample must be the **last
completed successful attempt** of its prompt (completion time, then proxy sequence); for a group of
k samples, the k used responses must be the group's last k completed successful attempts (with
``generation.repeats: r``, k counts every attempt: r per sample).  Attempts that carry their seed are counted
by seed: an attempt asked again with the same seed (a resume re-asks the attempts EvalScope had not saved) is
that attempt again, and its latest answer is the one to use.  Any other choice could have been
correctness-based, so it is flagged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise

from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt

SELECTION_RULE = "the response used is the last completed successful attempt for the sample's prompt that reached the client"

SampleKey = tuple[str, str]  # (benchmark, source_id)


def parse_time(value: str | None) -> datetime | None:
    """UTC-aware datetime of an ISO-8601 string; naive times are taken as UTC; junk is None."""
    if not value:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def attempt_ok(a: RequestAttempt) -> bool:
    """A response came back with HTTP < 400 and no transport error."""
    return a.transport_error is None and a.status is not None and a.status < 400


def attempt_failure(a: RequestAttempt) -> str:
    if a.transport_error:
        return a.transport_error
    if a.status is None:
        return "no response recorded"
    return f"HTTP {a.status}"


def _completion_key(a: RequestAttempt) -> tuple[datetime, int]:
    t = parse_time(a.ended_at) or datetime.min.replace(tzinfo=UTC)
    return (t, a.seq)


@dataclass
class PromptGroup:
    prompt_sha256: str
    samples: list[OutcomeRow] = field(default_factory=list)
    attempts: list[RequestAttempt] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return self.samples[0].benchmark

    @property
    def successes(self) -> list[RequestAttempt]:
        """Completed successful attempts, in completion order (the server did the work for each)."""
        ok = [a for a in self.attempts if attempt_ok(a) and a.ended_at is not None]
        return sorted(ok, key=_completion_key)

    @property
    def delivered(self) -> list[RequestAttempt]:
        """Successful attempts whose response reached the client, in completion order."""
        return [a for a in self.successes if not a.client_disconnected]

    @property
    def failures(self) -> list[RequestAttempt]:
        return [a for a in self.attempts if not attempt_ok(a)]

    @property
    def responses_wanted(self) -> int:
        """Responses the samples used: one per sample, or one per attempt with ``generation.repeats`` (the
        k attempts at one prompt are intended, not duplicates)."""
        return sum(max(1, len(s.attempts)) for s in self.samples)

    @property
    def duplicates(self) -> int:
        return max(0, len(self.successes) - self.responses_wanted)

    @property
    def retries(self) -> int:
        """Attempts whose predecessor (proxy order) for the same prompt failed."""
        return len(self.retry_causes)

    @property
    def retry_causes(self) -> list[str]:
        """For each retry, how the attempt before it failed (``HTTP 500``, a transport error, …)."""
        ordered = sorted(self.attempts, key=lambda a: a.seq)
        return [attempt_failure(prev) for prev, _ in pairwise(ordered) if not attempt_ok(prev)]

    def expected_ids(self) -> set[str]:
        """Attempt ids the rule allows as used responses: the last k successes delivered to the client — counted
        by attempt (its seed) when every one carries one: an attempt asked again with its own seed (a resume
        after an interruption re-asks what EvalScope had not saved) is that attempt again, not another one, and
        either delivery of it may be the one EvalScope kept."""
        k = self.responses_wanted
        if not k:
            return set()
        delivered = self.delivered
        if delivered and all(a.seed is not None for a in delivered):
            order: dict[int | None, None] = {}
            for a in delivered:  # completion order: each seed in the order of its latest attempt
                order.pop(a.seed, None)
                order[a.seed] = None
            # the last k attempts by seed; any delivery of one of them may be the one used: the seed fixes the
            # attempt, so which of its re-asks EvalScope kept is no choice among attempts
            seeds = set(list(order)[-k:])
            return {a.attempt_id for a in delivered if a.seed in seeds}
        return {a.attempt_id for a in delivered[-k:]}

    @property
    def reasked(self) -> int:
        """Successful attempts asked again with the seed of an earlier successful one (a resume's re-ask)."""
        seeds = [a.seed for a in self.successes if a.seed is not None]
        return len(seeds) - len(set(seeds))


@dataclass
class Linkage:
    groups: dict[str, PromptGroup]
    group_of: dict[SampleKey, PromptGroup]
    unlinked: list[RequestAttempt]
    other: list[RequestAttempt]
    by_id: dict[str, RequestAttempt]

    def attempts_for_benchmark(self, benchmark: str) -> list[RequestAttempt]:
        return [a for g in self.groups.values() if g.benchmark == benchmark for a in g.attempts]

    def groups_for_benchmark(self, benchmark: str) -> list[PromptGroup]:
        return [g for g in self.groups.values() if g.benchmark == benchmark]


def sample_prompt_hash(row: OutcomeRow) -> str | None:
    """The prompt a sample was sent with: its prediction's hash, else the hash recorded at render."""
    return row.prompt_sha256 or row.expected_prompt_sha256


def link(outcomes: Iterable[OutcomeRow], attempts: Iterable[RequestAttempt]) -> Linkage:
    groups: dict[str, PromptGroup] = {}
    group_of: dict[SampleKey, PromptGroup] = {}
    for row in outcomes:
        h = sample_prompt_hash(row)
        if h is None:
            continue
        g = groups.setdefault(h, PromptGroup(h))
        g.samples.append(row)
        group_of[(row.benchmark, row.source_id)] = g
    unlinked: list[RequestAttempt] = []
    other: list[RequestAttempt] = []
    by_id: dict[str, RequestAttempt] = {}
    for a in sorted(attempts, key=lambda a: a.seq):
        by_id.setdefault(a.attempt_id, a)
        if a.response_id:
            by_id.setdefault(a.response_id, a)
        if a.messages_sha256 is None:
            other.append(a)
        elif a.messages_sha256 in groups:
            groups[a.messages_sha256].attempts.append(a)
        else:
            unlinked.append(a)
    return Linkage(groups=groups, group_of=group_of, unlinked=unlinked, other=other, by_id=by_id)
