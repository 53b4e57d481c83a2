"""The speed stage of ``evalpipe run``: the serving benchmark on a variant's server after its evaluation.

:func:`check_before_launch` runs in preflight (client installed, tokenizer found) so that a run refuses a
speed section it cannot honour before any GPU time is spent.  :func:`run_speed_stage` runs inside the server's
launch, after the recording proxy has closed — the same server, its own URL, no proxy in the latency path.
What goes wrong there must not cost the accuracy results of the run: a :class:`SpeedSetupError` found only
now (a workload longer than the server's context, a server that stopped answering) is written to
``speed_error.txt`` as one line, the run goes on to outcomes and the audit, and the audit turns that file
into an error finding (``speed_setup``).  A failed request mid-benchmark is not an error of the stage: the
round is recorded incomplete in ``speed.json`` and the audit reports it (``speed_incomplete``).

On ``--resume``, a ``speed.json`` whose every workload already has ``rounds`` complete rounds is kept;
otherwise the whole benchmark runs again (its old round directories are renamed aside, never overwritten).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalpipe.artifacts import RunDir, atomic_write_text, read_model, write_model
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.config.speed import SpeedConfig
from evalpipe.errors import ArtifactError, SpeedSetupError
from evalpipe.speed import run as speed_run
from evalpipe.speed.compare import compare_speed
from evalpipe.speed.run import SpeedRequest, SpeedTarget, read_speed, run_speed

#: What a refusal in ``evalpipe run``'s preflight adds: the way to run the accuracy evaluation without it.
NO_SPEED_HINT = "; to run the accuracy evaluation without the speed benchmark: evalpipe run ... --no-speed"


def check_before_launch(
    cfg: SpeedConfig, base_dir: Path | None, client_env: Mapping[str, str] | None = None
) -> None:
    """The checks that need no server: the client is installed, the tokenizer exists (raises
    :class:`SpeedSetupError`, one line naming ``--no-speed``: a host without the client — a laptop, a CI
    box re-checking accuracy against an endpoint — can still run the evaluation)."""
    try:
        client = speed_run.make_client(
            cfg, client_env=client_env
        )  # looked up when called: the same client the benchmark will use
        client.version()
        tokenizer = speed_run.resolve_tokenizer(cfg.tokenizer, base_dir)
        client.check(cfg, tokenizer.directory if tokenizer else None)
    except SpeedSetupError as exc:
        raise SpeedSetupError(exc.message + NO_SPEED_HINT, details=exc.details) from None


def already_measured(run_dir: Path, cfg: SpeedConfig) -> bool:
    """``speed.json`` holds, for every configured workload, ``rounds`` complete rounds of this config."""
    path = RunDir(run_dir).speed_json
    if not path.is_file():
        return False
    try:
        artifact = read_speed(path)
    except ArtifactError:
        return False
    if artifact.config != cfg:
        return False
    return all(sum(1 for r in artifact.rounds_for(w.name) if r.complete) >= cfg.rounds for w in cfg.workloads)


def run_speed_stage(target: SpeedTarget, request: SpeedRequest) -> bool:
    """Benchmark ``target`` into ``target.out_dir/speed.json``; False when it could not run (``speed_error.txt``
    says why; ``request.progress`` hears it too).  A stale ``speed_error.txt`` of an earlier attempt is removed
    once the benchmark ran."""
    say, variant = request.progress, target.variant
    error_path = RunDir(target.out_dir).speed_error
    if already_measured(target.out_dir, request.config):
        if say is not None:
            say(f"{variant}: speed.json already holds every round (kept)")
        return True
    try:
        run_speed(target, request)
    except SpeedSetupError as exc:
        atomic_write_text(error_path, exc.message + "\n")
        if say is not None:
            say(f"{variant}: speed benchmark not run: {exc.message}")
        return False
    error_path.unlink(missing_ok=True)
    return True


def compare_variant_dirs(
    test_dir: Path, control_dir: Path, out_dir: Path, *, min_output_throughput_ratio: float | None
) -> SpeedComparison | None:
    """``out_dir/speed_compare.json`` from two variants' ``speed.json`` (None when either has none, as when
    the benchmark could not run; the audit reports that from ``speed_error.txt``)."""
    paths = [RunDir(test_dir).speed_json, RunDir(control_dir).speed_json]
    if not all(p.is_file() for p in paths):
        return None
    test, control = (read_speed(p) for p in paths)
    comparison = compare_speed(control, test, min_output_throughput_ratio=min_output_throughput_ratio)
    write_model(RunDir(out_dir).speed_compare, comparison)
    return comparison


def speed_comparison_beside(run_dir: Path) -> SpeedComparison | None:
    """The speed comparison ``evalpipe run`` wrote beside a variant directory (``RUN/speed_compare.json`` for
    ``RUN/<variant>``), or None when there is none or it cannot be read."""
    path = RunDir(Path(run_dir).parent).speed_compare
    if not path.is_file():
        return None
    try:
        return read_model(path, SpeedComparison)
    except ArtifactError:
        return None
