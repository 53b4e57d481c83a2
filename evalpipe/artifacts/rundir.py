"""Names of the files in a run directory — the only place that spells them.

Stages talk through these files, so each stage can be re-run alone against an existing run directory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServerFiles:
    """The files of one server process: the run's own (``server/``), or one worker of a fleet behind a
    router (``server/workers/<n>/``), each with its own log, launch record and verified ``/server_info``."""

    dir: Path

    @property
    def log(self) -> Path:
        return self.dir / "server.log"

    @property
    def launch(self) -> Path:
        return self.dir / "launch.json"

    @property
    def server_info(self) -> Path:
        return self.dir / "server_info.json"

    @property
    def model_info(self) -> Path:
        return self.dir / "model_info.json"

    @property
    def verification(self) -> Path:
        return self.dir / "verification.json"

    @property
    def fleet(self) -> Path:
        """A router's workers at the start and the end of the run (``evalpipe.artifacts.schema.fleet``)."""
        return self.dir / "fleet.json"


@dataclass(frozen=True)
class RunDir:
    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    # --- sample: the spine every stage keys on
    @property
    def run_record(self) -> Path:
        return self.root / "run.json"

    @property
    def config_copy(self) -> Path:
        return self.root / "config.yaml"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def sampled_ids(self) -> Path:
        return self.root / "sampled_ids.csv"

    @property
    def sources(self) -> Path:
        return self.root / "sources.json"

    # --- materialize: the sampled records as EvalScope datasets
    @property
    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    @property
    def index_map(self) -> Path:
        return self.root / "index_map.json"

    @property
    def code_sandbox(self) -> Path:
        """The sandbox that runs model-written code in this run (resolved at preflight)."""
        return self.root / "code_sandbox.json"

    @property
    def context_fit(self) -> Path:
        return self.root / "context_fit.json"

    # --- preflight and component tests
    @property
    def server_preflight(self) -> Path:
        return self.server_dir / "preflight.json"

    @property
    def component_tests_dir(self) -> Path:
        """junit XML and logs of ``component_tests`` (``<name>.xml``, ``<name>.log``)."""
        return self.root / "component_tests"

    # --- server: launch, logs, resolved configuration and its verification
    @property
    def server_dir(self) -> Path:
        return self.root / "server"

    @property
    def server_log(self) -> Path:
        return self.server_dir / "server.log"

    @property
    def server_launch(self) -> Path:
        return self.server_dir / "launch.json"

    @property
    def server_info(self) -> Path:
        return self.server_dir / "server_info.json"

    @property
    def model_info(self) -> Path:
        return self.server_dir / "model_info.json"

    @property
    def server_verification(self) -> Path:
        return self.server_dir / "verification.json"

    # --- proxy: every request attempt and response
    @property
    def server_files(self) -> ServerFiles:
        """``server/``: the launched (or attached) server's log, launch record and verification."""
        return ServerFiles(self.server_dir)

    @property
    def workers_dir(self) -> Path:
        """``server/workers/``: one folder per worker of a fleet behind a router."""
        return self.server_dir / "workers"

    def worker_files(self, name: str) -> ServerFiles:
        """``server/workers/<name>/``: one worker of a fleet behind a router."""
        return ServerFiles(self.workers_dir / name)

    def workers(self) -> list[ServerFiles]:
        """The files of every worker folder present under ``server/workers/``, by name."""
        if not self.workers_dir.is_dir():
            return []
        return [ServerFiles(p) for p in sorted(self.workers_dir.iterdir()) if p.is_dir()]

    @property
    def fleet_json(self) -> Path:
        """Every worker behind a router, at the start and the end of the run (``evalpipe.artifacts.schema.fleet``)."""
        return self.server_files.fleet

    @property
    def requests_log(self) -> Path:
        return self.root / "requests.jsonl"

    @property
    def responses_log(self) -> Path:
        return self.root / "responses.jsonl.gz"

    @property
    def recorder_log(self) -> Path:
        """stderr of the proxy's recorder process (empty unless an attempt could not be recorded)."""
        return self.logs_dir / "recorder.log"

    # --- EvalScope: task configs, predictions and reviews, rendered-prompt hashes, resume repairs
    @property
    def evalscope_dir(self) -> Path:
        return self.root / "evalscope"

    def evalscope_work_dir(self, benchmark: str) -> Path:
        return self.evalscope_dir / benchmark

    @property
    def evalscope_log(self) -> Path:
        return self.root / "logs" / "evalscope.log"

    @property
    def evalscope_tasks(self) -> Path:
        return self.root / "evalscope_tasks.json"

    @property
    def evalscope_errors(self) -> Path:
        return self.root / "evalscope_errors.jsonl"

    @property
    def prompt_hashes(self) -> Path:
        return self.root / "prompt_hashes.jsonl"

    @property
    def cache_repairs(self) -> Path:
        return self.root / "cache_repairs.jsonl"

    @property
    def sequential_stop(self) -> Path:
        """What the sequential rule sent and where it stopped inside this run (``run.sequential_stop``)."""
        return self.root / "sequential_stop.json"

    @property
    def pilot(self) -> Path:
        """The internal pilot's measurement and the attempts it chose (``evalpipe.run.pilot``)."""
        return self.root / "pilot.json"

    @property
    def lock(self) -> Path:
        """Held (``flock``) by the process that runs in this directory, its PID inside
        (``evalpipe.artifacts.lock``): a second run or a resume refuses to start while it is held."""
        return self.root / "run.lock"

    @property
    def torn_repairs(self) -> Path:
        """What a resume cut from the torn tail of a log file (``run.torn_files``)."""
        return self.logs_dir / "torn_repairs.jsonl"

    @property
    def extension(self) -> Path:
        """``evalpipe run --extend``: which run this one grew from and what it reused."""
        return self.root / "extension.json"

    @property
    def hf_cache_dir(self) -> Path:
        """Parent of the per-invocation HF ``datasets`` caches (each removed when EvalScope exits)."""
        return self.root / ".cache" / "hf-datasets"

    # --- outcomes and provenance
    @property
    def outcomes(self) -> Path:
        return self.root / "outcomes.jsonl"

    @property
    def provenance(self) -> Path:
        return self.root / "provenance.json"

    # --- audit: the sign-off
    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def report_md(self) -> Path:
        return self.root / "report.md"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def explorer_html(self) -> Path:
        """Every sample (flips first at a paired root), one offline page (``evalpipe.explore``)."""
        return self.root / "explorer.html"

    @property
    def reviews(self) -> Path:
        """A reviewer's verdicts on the flips, kept by ``evalpipe audit --reviews`` (``schema/reviews.py``)."""
        return self.root / "reviews.json"

    @property
    def compare_json(self) -> Path:
        """A paired comparison written here (the variants' root, or ``compare --out``)."""
        return self.root / "compare.json"

    @property
    def compare_md(self) -> Path:
        """The paired comparison in words, beside ``compare.json``."""
        return self.root / "compare.md"

    @property
    def sequential_exchange(self) -> Path:
        """At the variants' root: each arm's completed units and its end, exchanged while the sequential rule
        stops inside a paired run (``sequential/<benchmark>/<variant>.jsonl``, ``run.sequential_stop``)."""
        return self.root / "sequential"

    # --- serving speed
    @property
    def speed_json(self) -> Path:
        """One variant's serving benchmark, round by round (``evalpipe.artifacts.schema.speed``)."""
        return self.root / "speed.json"

    @property
    def speed_dir(self) -> Path:
        """The benchmark client's raw files, ``speed/<workload>/round-<nn>/``."""
        return self.root / "speed"

    @property
    def speed_error(self) -> Path:
        """One line: why the serving benchmark could not run in this variant."""
        return self.root / "speed_error.txt"

    @property
    def speed_compare(self) -> Path:
        """The paired speed comparison, at the variants' root (``evalpipe.artifacts.schema.speed_compare``)."""
        return self.root / "speed_compare.json"

    @property
    def speed_barrier(self) -> Path:
        """At the variants' root: where parallel variants meet before their alternating speed rounds
        (``speed.barrier``: its release and each variant's arrival; emptied when a barrier starts)."""
        return self.root / "speed_barrier"

    # --- the numerics probe
    @property
    def numerics_json(self) -> Path:
        """One variant's next-token log-probabilities on the probe's prompts (``artifacts.schema.numerics``)."""
        return self.root / "numerics.json"

    @property
    def numerics_dir(self) -> Path:
        """The probe's own recording: ``numerics/requests.jsonl``, ``numerics/responses.jsonl.gz``."""
        return self.root / "numerics"

    # --- replay
    @property
    def replay_misses(self) -> Path:
        """Requests the replay server had no recorded answer for (``evalpipe replay``)."""
        return self.root / "replay_misses.jsonl"

    # --- the run as a whole: stage timings and event logs
    @property
    def timings(self) -> Path:
        """Wall time per stage of the last ``evalpipe run`` invocation."""
        return self.root / "timings.json"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"


def recorded_run(recorded: str, beside: Path, manifest_sha256: str | None = None) -> Path:
    """The run directory a file recorded by path (``compare.json``'s ``run_a``/``run_b``/``run_aa``), for a
    reader of that file in ``beside`` (the directory holding it).

    The recorded path is where the run was when the file was written; a paired root copied, moved, unpacked
    from an archive or opened on another machine holds its arms beside ``compare.json`` under the same names.
    So the directory of that name in ``beside`` comes first, the recorded path second; with
    ``manifest_sha256`` a candidate counts only when its ``manifest.json`` has that hash (the pair's manifest).
    Neither: the recorded path, for the caller to report missing."""
    for candidate in (Path(beside) / Path(recorded).name, Path(recorded)):
        manifest = RunDir(candidate).manifest
        if not manifest.is_file():
            continue
        if manifest_sha256 is None or hashlib.sha256(manifest.read_bytes()).hexdigest() == manifest_sha256:
            return candidate
    return Path(recorded)
