"""Which sandboxes work on this host, what ``auto`` resolves to, and the preflight line.

A sandbox is available when it actually runs this interpreter with the full policy (a trivial program:
``python -c pass`` under the view, the namespaces and the limits) — not when a binary merely exists: a
container without user namespaces has ``unshare`` and ``bwrap`` and neither works.  Results are cached
for the process (one probe costs tens of milliseconds).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from dataclasses import dataclass

from evalpipe.config.code_execution import CodeExecutionConfig, SandboxKind, SandboxLimits
from evalpipe.errors import PreflightError
from evalpipe.sandbox.run import SandboxPolicy, process_limit_mechanism, run_sandboxed

#: ``auto`` takes the first available, strongest first.
PREFERENCE: tuple[SandboxKind, ...] = ("bwrap", "unshare")
_REQUIRED_BINARIES: dict[SandboxKind, tuple[str, ...]] = {
    "bwrap": ("bwrap", "prlimit"),
    "unshare": ("unshare",),
    "none": (),
}
_INSTALL_HINT = {
    "bwrap": "install it with `apt-get install -y bubblewrap` (Debian/Ubuntu)",
    "unshare": "util-linux's unshare and unprivileged user namespaces are needed",
}


class SandboxUnavailable(PreflightError):
    """The config asks for a sandbox this host cannot provide (exit code 2, one line)."""


@dataclass(frozen=True)
class Availability:
    kind: SandboxKind
    available: bool
    #: Why not (one line), or the version string when available.
    detail: str


def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return binary
    return out.strip().splitlines()[0] if out.strip() else binary


@functools.cache
def probe(kind: SandboxKind) -> Availability:
    """Run a trivial program of this interpreter under ``kind`` with the default policy."""
    missing = [b for b in _REQUIRED_BINARIES[kind] if shutil.which(b) is None]
    if missing:
        hint = _INSTALL_HINT.get(kind, "")
        return Availability(kind, False, f"{', '.join(missing)} not found on PATH; {hint}".rstrip("; "))
    limits = SandboxLimits(wall_s=60.0)
    try:
        result = run_sandboxed([sys.executable, "-I", "-c", "print('ok')"], SandboxPolicy(kind, limits))
    except OSError as exc:
        return Availability(kind, False, f"could not start: {exc}")
    if not result.ok or result.stdout.strip() != "ok":
        last = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
        return Availability(kind, False, f"a trivial program failed under it: {last[:200]}")
    binary = _REQUIRED_BINARIES[kind][0] if _REQUIRED_BINARIES[kind] else sys.executable
    return Availability(kind, True, _version(binary) if kind != "none" else "no sandbox")


UNLIMITED_PROCESSES = (
    "code_execution: evalpipe runs as root and no pids cgroup is writable, so the sandbox cannot limit "
    "the number of processes (root is exempt from RLIMIT_NPROC: a fork bomb would reach the host); run "
    "evalpipe as a non-root user or with a writable pids cgroup, or set "
    "code_execution.allow_unlimited_processes: true to accept it"
)


def resolve(config: CodeExecutionConfig) -> SandboxKind:
    """The sandbox a run with ``config`` uses; ``SandboxUnavailable`` (one line) when it cannot be had.

    Policy for root without a writable pids cgroup: refused (every kind but ``none``, whose consent
    already covers it) unless ``allow_unlimited_processes`` — a sandbox that a fork bomb gets through is
    not the sandbox the config asked for.
    """
    if config.sandbox == "none":
        return "none"  # the config's validator has already required allow_unsandboxed
    if process_limit_mechanism() == "not_enforced" and not config.allow_unlimited_processes:
        raise SandboxUnavailable(UNLIMITED_PROCESSES)
    if config.sandbox != "auto":
        found = probe(config.sandbox)
        if not found.available:
            raise SandboxUnavailable(
                f"code_execution.sandbox: {config.sandbox} is not available on this host: {found.detail}"
            )
        return config.sandbox
    tried = []
    for kind in PREFERENCE:
        found = probe(kind)
        if found.available:
            return kind
        tried.append(f"{kind}: {found.detail}")
    raise SandboxUnavailable(
        "code_execution.sandbox: auto found no working sandbox ("
        + "; ".join(tried)
        + "); install bubblewrap, or set sandbox: none with allow_unsandboxed: true"
    )


def preflight_line(config: CodeExecutionConfig) -> str:
    """What the preflight prints: the sandbox model code will run in, and how processes are limited."""
    sandbox = resolve(config)
    limits = config.limits
    processes = {
        "rlimit": f"RLIMIT_NPROC {limits.processes}",
        "cgroup": f"pids cgroup {limits.processes}",
        "not_enforced": "process count NOT limited (root without a writable pids cgroup)",
    }[process_limit_mechanism()]
    if sandbox == "none":
        return (
            "model-written code runs UNSANDBOXED on this host (code_execution.sandbox: none, "
            f"allow_unsandboxed: true); {processes}"
        )
    detail = probe(sandbox).detail
    return (
        f"model-written code runs in {sandbox} ({detail}): no network, read-only interpreter view, private "
        f"tmp; {limits.address_space_mb} MiB address space, {processes}, {limits.cpu_s} s CPU, "
        f"{limits.wall_s:g} s wall"
    )
