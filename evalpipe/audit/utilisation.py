"""How full the server was during the evaluation, from ``requests.jsonl``.

Each attempt occupies one of the run's ``generation.concurrency`` slots from the moment the proxy sends it
to the server (``admitted_at``; ``started_at`` in logs written before admission control) until its last
byte (``ended_at``).  Over the evaluation window — first attempt's arrival to last attempt's end — the
time-weighted mean of in-flight attempts divided by the concurrency is the utilisation; the slot-seconds
left unused are the idle slot-seconds, split by where they fell:

* ``between_benchmarks``: no benchmark had traffic (one finished, the next had not sent its first request);
* ``tails``: every attempt some running benchmark will ever send had been sent, so its in-flight count can
  only fall (its last, longest generations) — and no other benchmark filled the freed slots;
* ``other``: benchmarks were sending but the client kept fewer than ``concurrency`` open (ramp-up, retry
  intervals, client-side work between requests).

A benchmark's traffic is attributed through the prompt hashes recorded before it ran
(``prompt_hashes.jsonl``); attempts that match no recorded prompt count as busy time but belong to no
benchmark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.evalscope import PromptHashRecord
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.timings import ServerUtilisation
from evalpipe.audit.linkage import parse_time


@dataclass(frozen=True)
class _Interval:
    benchmark: str | None
    arrived: float
    start: float  # sent to the server
    end: float


def _intervals(attempts: Iterable[RequestAttempt], benchmark_of: Mapping[str, str]) -> list[_Interval]:
    out: list[_Interval] = []
    for a in attempts:
        if a.messages_sha256 is None:  # health, info: no generation slot
            continue
        arrived = parse_time(a.started_at)
        start = parse_time(a.admitted_at) or arrived
        end = parse_time(a.ended_at)
        if arrived is None or start is None or end is None:
            continue
        bench = benchmark_of.get(a.messages_sha256)
        out.append(_Interval(bench, arrived.timestamp(), start.timestamp(), max(end, start).timestamp()))
    return out


def server_utilisation(
    attempts: Iterable[RequestAttempt], benchmark_of: Mapping[str, str], concurrency: int
) -> ServerUtilisation | None:
    """Utilisation of ``concurrency`` slots over the evaluation window (None without timed attempts).

    ``benchmark_of`` maps a prompt hash (``messages_sha256``) to its benchmark.
    """
    attempts = list(attempts)
    spans = _intervals(attempts, benchmark_of)
    if not spans or concurrency <= 0:
        return None
    window_start = min(s.arrived for s in spans)
    window_end = max(s.end for s in spans)
    window = window_end - window_start
    # per benchmark: active from its first arrival to its last end; in its tail from its last arrival on
    active: dict[str, tuple[float, float]] = {}
    tail_from: dict[str, float] = {}
    for s in spans:
        if s.benchmark is None:
            continue
        lo, hi = active.get(s.benchmark, (s.arrived, s.end))
        active[s.benchmark] = (min(lo, s.arrived), max(hi, s.end))
        tail_from[s.benchmark] = max(tail_from.get(s.benchmark, s.arrived), s.arrived)
    points = {window_start, window_end}
    for s in spans:
        points.update((s.start, s.end))
    for lo, hi in active.values():
        points.update((lo, hi))
    points.update(tail_from.values())
    cuts = sorted(points)
    # in-flight between consecutive cuts: a difference array over the sorted cut positions
    index = {t: i for i, t in enumerate(cuts)}
    delta = [0] * (len(cuts) + 1)
    for s in spans:
        delta[index[s.start]] += 1
        delta[index[s.end]] -= 1
    busy = idle_between = idle_tails = idle_other = 0.0
    peak = level = 0
    for i in range(len(cuts) - 1):
        level += delta[i]
        lo, hi = cuts[i], cuts[i + 1]
        width = hi - lo
        if width <= 0:
            continue
        peak = max(peak, level)
        used = min(level, concurrency)
        busy += used * width
        free = (concurrency - used) * width
        if free <= 0:
            continue
        mid = (lo + hi) / 2
        running = [b for b, (a, z) in active.items() if a <= mid < z]
        if not running:
            idle_between += free
        elif any(tail_from[b] <= mid for b in running):
            idle_tails += free
        else:
            idle_other += free
    capacity = concurrency * window
    return ServerUtilisation(
        concurrency=concurrency,
        window_s=round(window, 3),
        mean_in_flight=round(busy / window, 4) if window > 0 else 0.0,
        utilisation=round(busy / capacity, 4) if capacity > 0 else 0.0,
        max_in_flight=peak,
        busy_slot_s=round(busy, 3),
        idle_slot_s=round(idle_between + idle_tails + idle_other, 3),
        idle_between_benchmarks_slot_s=round(idle_between, 3),
        idle_in_tails_slot_s=round(idle_tails, 3),
        idle_other_slot_s=round(idle_other, 3),
        mean_queue_wait_s=_mean([a.queue_wait_s for a in attempts if a.queue_wait_s is not None]),
    )


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def utilisation_of_run(rundir: RunDir, concurrency: int) -> ServerUtilisation | None:
    """``server_utilisation`` of a run directory's ``requests.jsonl`` (None when it has none)."""
    if not rundir.requests_log.is_file():
        return None
    benchmark_of = {r.prompt_sha256: r.benchmark for r in read_jsonl(rundir.prompt_hashes, PromptHashRecord)}
    return server_utilisation(read_jsonl(rundir.requests_log, RequestAttempt), benchmark_of, concurrency)
