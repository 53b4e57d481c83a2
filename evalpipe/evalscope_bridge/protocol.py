"""The line protocol between the EvalScope worker (``worker``) and its parent (``runner``, read by ``stage``).

One JSON object per line, each a model below; the names of events and commands are the enums ``Event`` and
``Action``, so a typo fails type-checking instead of being a line nobody answers.

* parent → worker (stdin), line 1: ``WorkerSpec`` — the benchmarks that run, in the order they start.  The
  worker may be started before the parent knows them (``runner.WorkerProcess.spawn``): it imports EvalScope,
  then waits for this line; end of input instead (the run ended before its EvalScope stage) ends it at once.
* worker → parent (the channel, a pipe of its own), every event naming its ``benchmark``:
  ``Rendered`` — every sample as the adapter built it and the worker's ``pid``, before any request is sent;
  then, once told to run, ``CacheIdentity`` (resume only), ``Start``, one ``Sample`` per finished sample,
  ``Finished``; ``Failed`` (naming the benchmark whose ``run_task`` raised) before a non-zero exit.
* parent → worker (stdin), after the spec: per benchmark, once it was rendered, ``RunCommand`` (the same task)
  or ``ExitCommand`` (do not run it), in any order across benchmarks.  A benchmark with a ``sequence``
  (``generation.sequential``) then sends no request until ``ReleaseCommand`` releases its position in that
  order, and none after ``HaltCommand`` (the rule stopped); rows refused so are ``Sample`` events with
  ``sent`` false.

The worker's sending end (``Channel``) is here too; its receiving end reads stdin in ``worker``.
"""

from __future__ import annotations

import os
import threading
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from evalpipe.artifacts.schema.evalscope import ErrorPhase
from evalpipe.artifacts.schema.sandbox import SandboxRecord


class Event(StrEnum):
    """What the worker tells the parent about one benchmark."""

    RENDERED = "rendered"
    CACHE_IDENTITY = "cache_identity"
    START = "start"
    SAMPLE = "sample"
    FINISHED = "finished"
    FAILED = "failed"


class Action(StrEnum):
    """What the parent tells the worker to do with one rendered benchmark."""

    RUN = "run"
    EXIT = "exit"
    RELEASE = "release"
    HALT = "halt"


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------------------------------------- the spec
class BenchmarkTask(_Line):
    """One benchmark the worker runs, with its EvalScope ``TaskConfig`` arguments."""

    benchmark: str
    task: dict[str, Any]
    #: Rows ``(subset, index)`` in the order the sequential rule consumes them: requests go in this order and
    #: only as far as the parent releases (``scheduling.SequenceGate``); None: every row at once.
    sequence: list[tuple[str, int]] | None = None
    #: Per row of ``sequence``: how many of its attempts may be sent (an internal pilot's decision, the rest never
    #: sent); None: every attempt.
    attempts: list[int] | None = None
    #: Subset → EvalScope sample index (position × repeats + attempt) → the ``seed`` that attempt's request
    #: carries (``evalpipe.hashing.attempt_seed``); None: every request carries ``generation_config``'s own
    #: (none when the run sets no seed).
    request_seeds: dict[str, dict[int, int]] | None = None


class WorkerHome(_Line):
    """Where a worker started before its run directory existed (``runner.prestart``) moves once it gets its
    tasks: its import output (``early_log``) is appended to ``log``, which then takes its stdout and stderr,
    and ``cwd`` becomes its working directory."""

    cwd: str
    log: str
    early_log: str


class WorkerSpec(_Line):
    #: In the order they start (the parent lists the largest expected cost first).
    benchmarks: list[BenchmarkTask]
    #: Requests of every benchmark at once (the ``pipelined`` schedule); else one benchmark's requests at a
    #: time, in the spec's order (``scheduling.GenerationTurns``).
    together: bool = False
    errors_log: str
    channel_fd: int
    #: The run's code sandbox (``code_sandbox.json``): required when a benchmark executes model code.
    code_sandbox: SandboxRecord | None = None
    #: Set for a worker started before the run directory existed; ``None`` when it started in it.
    home: WorkerHome | None = None


# ---------------------------------------------------------------------------------------------- events
class RenderedSample(_Line):
    """One sample as the adapter built it (one per row: attempt copies of ``repeats`` are left out)."""

    subset: str
    index: int
    prompt_sha256: str
    n_messages: int
    #: The final user message's text (the parent checks it contains the entry's question).
    user_text: str | None


class Rendered(_Line):
    event: Literal[Event.RENDERED] = Event.RENDERED
    benchmark: str
    evalscope_version: str
    pid: int
    samples: list[RenderedSample]


class CacheIdentity(_Line):
    """On a resume: whether EvalScope refused its own cache (then every cached prediction is re-reviewed)."""

    event: Literal[Event.CACHE_IDENTITY] = Event.CACHE_IDENTITY
    benchmark: str
    rerun_review: bool
    reason: str | None


class Start(_Line):
    event: Literal[Event.START] = Event.START
    benchmark: str
    total: int
    cached: int


class Sample(_Line):
    event: Literal[Event.SAMPLE] = Event.SAMPLE
    benchmark: str
    subset: str
    index: int
    ok: bool
    #: Where a failed sample failed (None when ``ok``).
    phase: ErrorPhase | None = None
    #: Correct by the summary's rule (review score 1 and not stopped by the output budget; an unanswered
    #: attempt 0), for the sequential rule's looks; None when no review score came back with the sample.
    correct: float | None = None
    #: False: the sequential rule stopped before this row's request (``HaltCommand``); nothing was sent.
    sent: bool = True
    #: Scored from EvalScope's cache before the run (a resume or an extension): no request was sent now.
    cached: bool = False


class Finished(_Line):
    event: Literal[Event.FINISHED] = Event.FINISHED
    benchmark: str
    #: False: the parent answered the rendering with ``ExitCommand``.
    ran: bool
    rerun_review: bool = False


class Failed(_Line):
    """A benchmark's ``run_task`` (or the worker's start) raised; the worker exits non-zero next."""

    event: Literal[Event.FAILED] = Event.FAILED
    #: Empty when the failure is the worker's, not one benchmark's (every waiting benchmark gets it).
    benchmark: str
    error: str
    #: A write the file system refused (ENOSPC, EDQUOT, EROFS): the file and the errno.
    refused_path: str | None = None
    refused_errno: int | None = None


WorkerEvent = Annotated[
    Rendered | CacheIdentity | Start | Sample | Finished | Failed, Field(discriminator="event")
]
_EVENT: TypeAdapter[WorkerEvent] = TypeAdapter(WorkerEvent)


def parse_event(line: str) -> WorkerEvent:
    """One channel line; raises ``pydantic.ValidationError`` (a ``ValueError``) for anything else."""
    return _EVENT.validate_json(line)


# ---------------------------------------------------------------------------------------------- commands
class RunCommand(_Line):
    action: Literal[Action.RUN] = Action.RUN
    benchmark: str
    #: Must be the task of the spec (the worker refuses another).
    task: dict[str, Any]


class ExitCommand(_Line):
    action: Literal[Action.EXIT] = Action.EXIT
    benchmark: str


class ReleaseCommand(_Line):
    """Rows at positions below ``units`` of the benchmark's ``sequence`` may be sent."""

    action: Literal[Action.RELEASE] = Action.RELEASE
    benchmark: str
    units: int


class HaltCommand(_Line):
    """The sequential rule stopped: no further row of the benchmark is sent (in-flight ones finish)."""

    action: Literal[Action.HALT] = Action.HALT
    benchmark: str


Command = Annotated[RunCommand | ExitCommand | ReleaseCommand | HaltCommand, Field(discriminator="action")]
_COMMAND: TypeAdapter[Command] = TypeAdapter(Command)


def parse_command(line: str) -> Command:
    """One command line; raises ``pydantic.ValidationError`` (a ``ValueError``) for anything else."""
    return _COMMAND.validate_json(line)


def encode(line: _Line) -> str:
    """A model as one protocol line (no newline; non-ASCII text kept as it is)."""
    return line.model_dump_json()


# ---------------------------------------------------------------------------------------------- sending end
class Channel:
    """The worker's events to the parent, one line each (thread-safe: EvalScope reports from worker threads)."""

    def __init__(self, fd: int) -> None:
        self._fh = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
        self._lock = threading.Lock()

    def emit(self, event: WorkerEvent) -> None:
        line = encode(event)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()
