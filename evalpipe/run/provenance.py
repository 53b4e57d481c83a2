"""``provenance.json``: which software and hardware produced a run, and the component tests it passed.

The sign-off names a "runtime base + validation patch": the SGLang release or source commit the server ran
and a hash of any uncommitted change on top of it.  Everything is captured by looking (package metadata,
``git``, ``nvidia-smi``) — never by importing SGLang or torch — and secrets are stripped at capture.
"""

from __future__ import annotations

import hashlib
import platform
import re
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.redact import redact_argv
from evalpipe.artifacts.schema.provenance import ComponentTestResult, GitInfo, PackageVersion, Provenance
from evalpipe.clock import utc_now
from evalpipe.config.models import ComponentTest, RunConfig, ServerConfig
from evalpipe.errors import PreflightError


def _git(args: list[str], cwd: Path, *, binary: bool = False) -> bytes | str | None:
    try:
        proc = subprocess.run(
            ["git", "-c", "safe.directory=*", *args],
            cwd=cwd,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout if binary else proc.stdout.decode("utf-8", errors="replace").strip()


def git_info(path: Path) -> GitInfo | None:
    """Commit, dirtiness and a hash of the uncommitted change of the git work tree containing ``path``.

    The hash covers ``git diff HEAD --binary`` plus the path and content of every untracked, non-ignored
    file (a validation patch often adds files), so two trees with the same hash run the same code.
    """
    path = Path(path)
    start = path if path.is_dir() else path.parent
    top = _git(["rev-parse", "--show-toplevel"], start)
    if not isinstance(top, str) or not top:
        return None
    root = Path(top)
    commit = _git(["rev-parse", "HEAD"], root)
    diff = _git(["diff", "HEAD", "--binary"], root, binary=True)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root, binary=True)
    files = sorted(f for f in (untracked or b"").split(b"\0") if f) if isinstance(untracked, bytes) else []
    dirty = bool(diff) or bool(files)
    digest = None
    if dirty:
        h = hashlib.sha256()
        h.update(diff if isinstance(diff, bytes) else b"")
        for name in files:
            h.update(b"\0untracked\0" + name + b"\0")
            try:
                h.update((root / name.decode("utf-8", errors="surrogateescape")).read_bytes())
            except OSError:
                h.update(b"<unreadable>")
        digest = h.hexdigest()
    return GitInfo(
        path=str(root),
        commit=commit if isinstance(commit, str) and commit else None,
        dirty=dirty,
        diff_sha256=digest,
        source="git",
    )


def sglang_source(location: str | None, direct_url: dict[str, Any] | None) -> GitInfo | None:
    """SGLang's source commit: its git work tree when run from a checkout, else pip's PEP 610 record."""
    if location:
        info = git_info(Path(location))
        if info is not None:
            return info
    if isinstance(direct_url, dict):
        url = str(direct_url.get("url", ""))
        vcs = direct_url.get("vcs_info") or {}
        if url.startswith("file://") and (direct_url.get("dir_info") or {}).get("editable"):
            info = git_info(Path(unquote(urlparse(url).path)))
            if info is not None:
                return info
        if vcs.get("commit_id"):
            return GitInfo(path=url, commit=vcs["commit_id"], dirty=None, source="direct_url")
    return None


def collect_provenance(
    *,
    server: ServerConfig | None = None,
    env: Mapping[str, str] | None = None,
    started_at: str | None = None,
    component_tests: list[ComponentTestResult] | None = None,
) -> Provenance:
    """Versions, source commits, GPUs and host — as seen by the server's environment (``server.env``
    can put a different SGLang checkout on PYTHONPATH)."""
    import evalpipe
    from evalpipe.server import gpus
    from evalpipe.server.kinds.sglang.env import DEFAULT_PACKAGES, probe_sglang
    from evalpipe.server.launch_env import server_env

    if env is None:
        env = server_env(server) if server is not None else None
    probe = probe_sglang(env, packages=DEFAULT_PACKAGES)
    packages = [PackageVersion(name="evalpipe", version=evalpipe.__version__)]
    for name in DEFAULT_PACKAGES:
        version = probe.packages.get(name)
        if name == "sglang" and version is None:
            version = probe.version  # a plain checkout on PYTHONPATH has no metadata, only version.py
        packages.append(PackageVersion(name=name, version=version))
    gpu_list = gpus.query_gpus(env) or []
    return Provenance(
        evalpipe_version=evalpipe.__version__,
        evalpipe_git=git_info(Path(evalpipe.__file__).resolve().parent),
        packages=packages,
        sglang_git=sglang_source(probe.location, probe.direct_url) if probe.importable else None,
        gpus=gpu_list,
        cuda_version=gpus.cuda_version(env) if gpu_list else None,
        host=socket.gethostname(),
        python=sys.version.split()[0],
        platform=platform.platform(),
        started_at=started_at or utc_now(),
        component_tests=list(component_tests or []),
    )


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
    from evalpipe.server.launch_env import server_env

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
