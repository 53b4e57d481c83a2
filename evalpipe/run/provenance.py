"""``provenance.json``: which software and hardware produced a run, and the component tests it passed.

The sign-off names a "runtime base + validation patch": the serving engine's release or source commit and a
hash of any uncommitted change on top of it — what the server kind finds (``Kind.provenance``; nothing for
evalpipe's own self-test server, so its runs probe no engine).  Everything is captured by looking (package
metadata, ``git``, ``nvidia-smi``) — never by importing the engine or torch — and secrets are stripped at
capture.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import evalpipe
from evalpipe.artifacts import RunDir
from evalpipe.artifacts.redact import redact_argv
from evalpipe.artifacts.schema.provenance import ComponentTestResult, PackageVersion, Provenance
from evalpipe.artifacts.source_git import git_info
from evalpipe.clock import utc_now
from evalpipe.config.models import ComponentTest, RunConfig, ServerConfig
from evalpipe.errors import PreflightError
from evalpipe.server.kinds.base import Kind
from evalpipe.server.launch_env import server_env

#: evalpipe's own runtime packages (EvalScope runs the benchmarks, NLTK scores IFEval), read from this process.
OWN_PACKAGES = ("evalscope", "nltk")


def collect_provenance(
    *,
    server: ServerConfig | None = None,
    kind: Kind | None = None,
    env: Mapping[str, str] | None = None,
    started_at: str | None = None,
    component_tests: list[ComponentTestResult] | None = None,
) -> Provenance:
    """Versions, source commits, GPUs and host.  The serving engine's packages and source are its kind's
    (``Kind.provenance``, as the server's environment sees them: ``server.env`` can put another checkout on
    ``PYTHONPATH``); evalpipe's own packages are read from this process.  ``kind``: the server's kind as the
    run resolved it, given with ``server``."""
    # import cost: kept out of the pipeline's import (server.gpus), loaded on this path only
    from evalpipe.server import gpus

    if env is None:
        env = server_env(server) if server is not None else None
    if (server is None) != (kind is None):
        raise ValueError("collect_provenance: a server comes with its kind")
    engine = kind.provenance(server, env or {}) if server is not None and kind is not None else None
    packages = [PackageVersion(name="evalpipe", version=evalpipe.__version__, environment="evalpipe")]
    packages += engine.packages if engine is not None else ()
    packages += [
        PackageVersion(name=name, version=_installed(name), environment="evalpipe") for name in OWN_PACKAGES
    ]
    gpu_list = gpus.query_gpus(env) or []
    return Provenance(
        evalpipe_version=evalpipe.__version__,
        evalpipe_git=git_info(Path(evalpipe.__file__).resolve().parent),
        packages=packages,
        sglang_git=engine.source if engine is not None else None,  # the field's name predates other engines
        gpus=gpu_list,
        cuda_version=gpus.cuda_version(env) if gpu_list else None,
        host=socket.gethostname(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        started_at=started_at or utc_now(),
        component_tests=list(component_tests or []),
    )


def _installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def parse_junit(path: Path) -> dict[str, int]:
    """tests/failures/errors/skipped/passed summed over every ``<testsuite>`` of a junit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0") or 0)
    totals["passed"] = max(0, totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"])
    return totals


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "component"


def run_component_test(
    test: ComponentTest,
    rundir: RunDir,
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> ComponentTestResult:
    """Run one ``component_tests`` entry under pytest; counts come from its junit XML."""
    out_dir = rundir.component_tests_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = _safe_name(test.name)
    junit = out_dir / f"{stem}.xml"
    log_path = out_dir / f"{stem}.log"
    junit.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", *test.pytest_args, f"--junitxml={junit}", "-p", "no:cacheprovider"]
    t0 = time.monotonic()
    with open(log_path, "wb") as logfh:
        try:
            proc = subprocess.run(
                cmd,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=logfh,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
            exit_code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            exit_code = None
    counts = (
        parse_junit(junit) if junit.is_file() else {"passed": 0, "failures": 0, "skipped": 0, "errors": 0}
    )
    return ComponentTestResult(
        name=test.name,
        command=redact_argv(cmd),
        exit_code=exit_code,
        passed=counts["passed"],
        failed=counts["failures"],
        skipped=counts["skipped"],
        errors=counts["errors"],
        junit_path=str(junit.relative_to(rundir.root)) if junit.is_file() else None,
        required=test.required,
        log_path=str(log_path.relative_to(rundir.root)),
        duration_s=round(time.monotonic() - t0, 3),
    )


def component_test_failed(r: ComponentTestResult) -> bool:
    """Failed for gating: a non-zero exit, any failure/error, or nothing ran at all."""
    return r.exit_code != 0 or r.failed > 0 or r.errors > 0 or (r.passed + r.skipped) == 0


class ComponentTestFailed(PreflightError):
    """A ``required: true`` component test failed before the launch; ``results`` holds every entry's outcome
    (the run directory records them too)."""

    def __init__(self, message: str, *, details: list[str], results: list[ComponentTestResult]) -> None:
        super().__init__(message, details=details)
        self.results = results


def run_component_tests(
    cfg: RunConfig,
    rundir: RunDir,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> list[ComponentTestResult]:
    """Run every ``cfg.component_tests`` entry (before the evaluation).

    All entries run; then a failed ``required: true`` entry raises ComponentTestFailed (a PreflightError:
    exit 2) naming it, with every entry's result as ``exc.results``.  Non-required failures are only recorded.
    """

    if env is None:
        env = server_env(cfg.server)
    results: list[ComponentTestResult] = []
    for test in cfg.component_tests:
        cwd = cfg.resolve_path(test.cwd) if test.cwd else cfg.base_dir()
        results.append(run_component_test(test, rundir, cwd=cwd, env=env, timeout=timeout))
    bad = [r for r in results if r.required and component_test_failed(r)]
    if bad:
        details = [
            f"{r.name}: exit {r.exit_code}, {r.passed} passed, {r.failed} failed, {r.errors} errors, "
            f"{r.skipped} skipped (log: {rundir.root / (r.log_path or '')})"
            for r in bad
        ]
        raise ComponentTestFailed(
            f"required component test failed: {bad[0].name}", details=details, results=results
        )
    return results
