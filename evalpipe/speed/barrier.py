"""The speed benchmark of variants run at the same time (``parallel_variants``): a barrier, then alternating
rounds across the variants' live servers.

Each variant of a parallel run is a process of its own.  Were each to benchmark its server right after its
own evaluation (as a variant run in turn does), its speed rounds would overlap the other variant's evaluation
or speed rounds on the same host, and the two ``speed.json`` would not be comparable.  So, with a ``speed:``
section, a variant whose evaluation is done (its recording proxy closed) *arrives* at the barrier — it writes
``RUN/speed_barrier/<variant>.arrived.json`` with its server's own URL — and waits with that server up.  The
parent (``evalpipe run``, :class:`SpeedCoordinator`) waits until every variant has arrived, then runs the
rounds alternating across the live servers (:func:`evalpipe.speed.run.run_speed_alternating`: ABBA…, each on
the server's own URL, no proxy, no evaluation traffic left), each variant's ``speed.json`` in its own
directory, and *releases* them (``release.json``); each variant then stops its server and goes on to its
outcomes and audit.  The comparison is then the paired one (``schedule: alternating``).

Every wait ends without the other side's cooperation:

* the parent's wait ends when every variant has arrived, or when one ended without arriving (its evaluation
  failed, its server died): then the others are released at once, each variant's ``speed_error.txt`` says
  why (the audit's ``speed_setup`` finding) and the run stops with that variant's usual exit code, resumable;
* a variant's wait ends on ``release.json``, when its parent is gone, or — once the parent has started the
  rounds (``started.json``) — after the rounds' own bound (:func:`rounds_bound_s`: every client run is
  itself bounded by ``round_timeout_s``); a variant not released in time writes its own ``speed_error.txt``
  and goes on, its accuracy results untouched.

A resumed run whose every variant already holds a complete, alternating ``speed.json`` for this config
skips the barrier (:func:`needs_barrier`): nothing is measured again.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from evalpipe.artifacts import RunDir, atomic_write_text, read_model, write_model
from evalpipe.artifacts.schema.base import Artifact
from evalpipe.artifacts.schema.speed_barrier import Arrival, Release, ReleaseOutcome, RoundsStarted
from evalpipe.clock import utc_now
from evalpipe.config.speed import SpeedConfig
from evalpipe.errors import ArtifactError, SpeedSetupError
from evalpipe.speed import run as speed_run
from evalpipe.speed.process import GRACE_S
from evalpipe.speed.run import SpeedTarget, read_speed
from evalpipe.speed.stage import already_measured

#: The barrier folder's name at the variants' root (``RunDir.speed_barrier``).
BARRIER_DIR = RunDir(Path(".")).speed_barrier.name
RELEASE_JSON = "release.json"
STARTED_JSON = "started.json"
#: Seconds a variant polls the barrier's files (and its parent) while it waits.
POLL_S = 0.2
#: Beyond the client runs themselves: the checks before the first round (a few HTTP GETs per server, each
#: bounded at 10 s) and writing the files.
SETUP_MARGIN_S = 60.0
Say = Callable[[str], None]
A = TypeVar("A", bound=Artifact)


def rounds_bound_s(cfg: SpeedConfig, variants: int) -> float:
    """Upper bound of :func:`run_speed_alternating`'s wall time: every client run of every workload, round and
    variant at its ``round_timeout_s`` plus the grace of stopping it, and the checks before the first round."""
    runs = cfg.rounds * len(cfg.workloads) * variants
    return runs * (cfg.round_timeout_s + 2 * GRACE_S) + SETUP_MARGIN_S


def needs_barrier(cfg: SpeedConfig | None, variant_dirs: Sequence[Path]) -> bool:
    """A speed section whose paired rounds are not all in the run yet (a fresh run, or a resume that stopped
    before or during them).  A ``speed.json`` measured without the others (``single``) is measured again."""
    if cfg is None:
        return False
    for d in variant_dirs:
        if not already_measured(d, cfg):
            return True
        try:
            if read_speed(RunDir(d).speed_json).schedule != "alternating":
                return True
        except ArtifactError:
            return True
    return False


@dataclass(frozen=True)
class VariantBarrier:
    """A variant's side of the barrier (in its own process): arrive, then wait to be released."""

    directory: Path
    variant: str
    parent_pid: int
    poll_s: float = POLL_S

    def arrive(self, base_url: str) -> None:
        write_model(
            self.directory / f"{self.variant}.arrived.json",
            Arrival(variant=self.variant, base_url=base_url, arrived_at=utc_now()),
        )

    def wait(self, run_dir: Path, say: Say) -> tuple[float, float]:
        """Block until released; ``(seconds waiting for the other variants, seconds of the rounds)``.

        Not released in time (or the parent gone): ``run_dir/speed_error.txt`` says so and the variant goes
        on — its server is stopped, its accuracy results are kept."""
        arrived = time.monotonic()
        started: float | None = None
        bound: float | None = None
        while True:
            release = _read(self.directory / RELEASE_JSON, Release)
            if release is not None:
                end = time.monotonic()
                say(f"{self.variant}: speed rounds released ({release.outcome}: {release.message})")
                return _split(arrived, started, end)
            if started is None:
                began = _read(self.directory / STARTED_JSON, RoundsStarted)
                if began is not None:
                    started, bound = time.monotonic(), began.bound_s
            problem = None
            if os.getppid() != self.parent_pid:
                problem = "the run that coordinates the speed rounds has gone"
            elif started is not None and bound is not None and time.monotonic() - started > bound:
                problem = f"the speed rounds did not end within their bound of {bound:.0f} s"
            if problem is not None:
                atomic_write_text(RunDir(run_dir).speed_error, f"{problem}; this variant stopped waiting\n")
                say(f"{self.variant}: speed benchmark abandoned: {problem}")
                return _split(arrived, started, time.monotonic())
            time.sleep(self.poll_s)


def _split(arrived: float, started: float | None, end: float) -> tuple[float, float]:
    if started is None:
        return end - arrived, 0.0
    return started - arrived, end - started


def _read(path: Path, model: type[A]) -> A | None:
    """The barrier file, or None while it is not there (it is written atomically: present means whole)."""
    if not path.is_file():
        return None
    try:
        return read_model(path, model)
    except ArtifactError:
        return None


@dataclass
class SpeedCoordinator:
    """The parent's side: waits for every variant's arrival, runs the alternating rounds, releases them.

    ``targets``: per variant (in the config's order: the round order of round 1), the directory its
    ``speed.json`` goes to and its server's API key (never written to a barrier file).
    """

    directory: Path
    cfg: SpeedConfig
    out_dirs: Mapping[str, Path]
    api_keys: Mapping[str, str | None]
    served_model: str
    base_dir: Path | None
    say: Say
    released: ReleaseOutcome | None = None
    #: The servers' environment additions (``server.env``): the SGLang client runs with them.
    client_env: Mapping[str, str] | None = None

    def reset(self) -> None:
        """A fresh barrier (an interrupted run's files must not release or start anything)."""
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)

    def arrivals(self) -> dict[str, Arrival]:
        found = {name: _read(self.directory / f"{name}.arrived.json", Arrival) for name in self.out_dirs}
        return {name: a for name, a in found.items() if a is not None}

    def step(self, ended: Mapping[str, int]) -> None:
        """One look at the barrier (``ended``: variant → exit code of those whose process has ended): release
        everyone if a variant ended before the release, run the rounds once every variant has arrived."""
        if self.released is not None:
            return
        gone = [name for name in self.out_dirs if name in ended]
        if gone:
            name = gone[0]
            self._release(
                "abandoned",
                f"variant {name} ended (exit {ended[name]}) before every variant's evaluation had finished; "
                "the speed rounds need every variant's server up (resume the run to measure them)",
            )
            return
        arrivals = self.arrivals()
        if len(arrivals) == len(self.out_dirs):
            self._measure(arrivals)

    def _measure(self, arrivals: Mapping[str, Arrival]) -> None:
        targets = [
            SpeedTarget(name, arrivals[name].base_url, out_dir, api_key=self.api_keys.get(name))
            for name, out_dir in self.out_dirs.items()
        ]
        bound = rounds_bound_s(self.cfg, len(targets))
        write_model(self.directory / STARTED_JSON, RoundsStarted(started_at=utc_now(), bound_s=bound))
        order = " / ".join(t.variant for t in targets)
        self.say(f"speed: every variant's evaluation is done; rounds alternate across {order} (ABBA…)")
        try:
            request = speed_run.SpeedRequest(
                self.cfg, self.served_model, base_dir=self.base_dir, client_env=self.client_env, progress=self.say
            )
            speed_run.run_speed_alternating(targets, request)
        except (SpeedSetupError, OSError) as exc:
            message = exc.message if isinstance(exc, SpeedSetupError) else f"{type(exc).__name__}: {exc}"
            self._release("not_run", message)
            return
        except Exception as exc:  # a defect: the variants must not wait for a release that never comes
            self._release("abandoned", f"the speed rounds failed: {type(exc).__name__}: {exc}")
            raise
        for out_dir in self.out_dirs.values():
            RunDir(out_dir).speed_error.unlink(missing_ok=True)
        self._release("measured", f"{len(targets)} variants, rounds alternating")

    def _release(self, outcome: ReleaseOutcome, message: str) -> None:
        if outcome != "measured":
            for out_dir in self.out_dirs.values():
                atomic_write_text(RunDir(out_dir).speed_error, message + "\n")
            self.say(f"speed benchmark not run: {message}")
        write_model(
            self.directory / RELEASE_JSON, Release(outcome=outcome, message=message, released_at=utc_now())
        )
        self.released = outcome
