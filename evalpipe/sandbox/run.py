"""Run one model-written program (any argv) sandboxed, and say what the sandbox denied it.

Three kinds, the same policy:

* ``bwrap`` — bubblewrap creates user, network (loopback only), pid, ipc, uts and mount namespaces,
  shows the interpreter's paths read-only (``view``), a private tmpfs as ``/tmp`` = cwd = ``$HOME``, a
  minimal ``/dev``, its own ``/proc``; no nested user namespaces (``--disable-userns``: less kernel
  surface for a program to attack); ``--cap-drop ALL`` (measured: without it a program started by
  root keeps every capability inside its namespace and can remount a read-only bind writable);
  ``--die-with-parent``; ``--new-session``.  The rlimits are set inside by util-linux ``prlimit``, after
  the user namespace exists, so that RLIMIT_NPROC counts this sandbox's processes only.
* ``unshare`` — util-linux ``unshare`` creates the same namespaces and runs ``stage.py``, which builds
  the same view with ``mount``/``pivot_root`` and drops every capability before ``execve``.
* ``none`` — the program runs on the host, with the same environment allow-list, a fresh temporary
  directory as cwd and ``$HOME``, and the rlimits; nothing else is hidden.

Every launcher dies with the thread that started it (bwrap ``--die-with-parent``; unshare and none
through util-linux ``setpriv --pdeathsig KILL``, i.e. ``PR_SET_PDEATHSIG``), so a parent killed by
SIGKILL leaves no sandboxed tree behind.

In every kind the process tree is one unit: its own session (the whole group is killed at the wall
limit), a pid namespace whose init takes every process with it, and — when evalpipe runs as root, which
RLIMIT_NPROC does not bind — a ``pids`` cgroup (``cgroup``).  Output is captured in files bounded by
RLIMIT_FSIZE and read back up to ``OUTPUT_CAP`` bytes, so a program that prints without end costs nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict

from evalpipe.artifacts.schema.sandbox import Denial, DenialKind
from evalpipe.artifacts.schema.sandbox import ProcessLimit as ProcessLimit
from evalpipe.config.code_execution import MIB, SandboxKind, SandboxLimits
from evalpipe.sandbox.cgroup import PidsCgroup, pids_parent
from evalpipe.sandbox.view import SANDBOX_TMP, FilesystemView, interpreter_view, sandbox_environment

STAGE = Path(__file__).with_name("stage.py")
#: ``/proc`` entries made read-only inside the sandbox.  Measured: a program started by root (uid 0 in its
#: user namespace maps to host uid 0) can *write host kernel settings* through its own ``/proc/sys``
#: (``kernel.printk_ratelimit`` changed on the host from inside bwrap 0.8 and the unshare sandbox):
#: sysctl files check the owner bits for host uid 0, not a capability.  bwrap means to cover these
#: entries but skips ``/proc/sys`` because the directory itself reports "not writable".
PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus", "pressure")
#: Exit status of ``stage.py`` when the sandbox could not be built (the program never started).
STAGE_SETUP_FAILED = 125
#: Bytes of stdout/stderr kept in a result (the rest is counted as truncated).
OUTPUT_CAP = 1 * MIB


class SandboxResult(BaseModel):
    """How one sandboxed program ended."""

    model_config = ConfigDict(extra="forbid")

    sandbox: SandboxKind
    process_limit: ProcessLimit
    #: The program's exit status; None when it was ended by a signal (``signal``) or by the wall limit.
    returncode: int | None
    signal: str | None
    timed_out: bool
    wall_s: float
    cpu_s: float
    stdout: str
    stderr: str
    output_truncated: bool
    denied: list[Denial]

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


@dataclass(frozen=True)
class SandboxPolicy:
    """What a program may use: the sandbox kind, limits, extra read-only dirs and extra environment."""

    kind: SandboxKind
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    extra_dirs: tuple[str, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)


def process_limit_mechanism() -> ProcessLimit:
    if os.geteuid() != 0:
        return "rlimit"
    return "cgroup" if pids_parent() is not None else "not_enforced"


# ---------------------------------------------------------------- building the command


def _rlimits(limits: SandboxLimits) -> dict[str, tuple[int, int]]:
    return {
        "RLIMIT_AS": (limits.address_space_mb * MIB,) * 2,
        "RLIMIT_NPROC": (limits.processes,) * 2,
        "RLIMIT_NOFILE": (limits.open_files,) * 2,
        "RLIMIT_FSIZE": (limits.file_size_mb * MIB,) * 2,
        # SIGXCPU at the soft limit, SIGKILL a second later
        "RLIMIT_CPU": (limits.cpu_s, limits.cpu_s + 1),
    }


_PRLIMIT_FLAG = {
    "RLIMIT_AS": "--as",
    "RLIMIT_NPROC": "--nproc",
    "RLIMIT_NOFILE": "--nofile",
    "RLIMIT_FSIZE": "--fsize",
    "RLIMIT_CPU": "--cpu",
}


def _bwrap_argv(argv: Sequence[str], view: FilesystemView, limits: SandboxLimits, prlimit: str) -> list[str]:
    tmp_bytes = str(limits.tmp_size_mb * MIB)
    cmd = ["bwrap", "--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
           "--size", tmp_bytes, "--tmpfs", SANDBOX_TMP]  # fmt: skip
    for bind in view.binds:
        cmd += ["--ro-bind", bind.path, bind.path]
    for link, target in view.links:
        cmd += ["--symlink", target, link]
    cmd += ["--proc", "/proc"]
    for entry in PROC_READONLY:  # bwrap's own cover skips /proc/sys when root runs it: see PROC_READONLY
        cmd += ["--ro-bind-try", f"/proc/{entry}", f"/proc/{entry}"]
    cmd += ["--dev", "/dev", "--size", tmp_bytes, "--tmpfs", "/dev/shm"]
    cmd += ["--remount-ro", "/", "--chdir", SANDBOX_TMP, prlimit]
    return [*cmd, *_prlimit_flags(limits), "--", *argv]


def _prlimit_flags(limits: SandboxLimits) -> list[str]:
    return [f"{_PRLIMIT_FLAG[name]}={soft}:{hard}" for name, (soft, hard) in _rlimits(limits).items()]


def _unshare_argv(
    argv: Sequence[str], view: FilesystemView, limits: SandboxLimits, env: dict[str, str]
) -> list[str]:
    spec = {
        "binds": [{"path": b.path, "is_dir": b.is_dir} for b in view.binds],
        "proc_readonly": list(PROC_READONLY),
        "links": list(view.links),
        "staging_dir": "/tmp",  # a tmpfs is mounted over it inside the private mount namespace
        "tmp": SANDBOX_TMP,
        "tmp_bytes": limits.tmp_size_mb * MIB,
        "cwd": SANDBOX_TMP,
        "rlimits": _rlimits(limits),
        "argv": list(argv),
        "env": env,
    }
    return ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child", "--mount",
            "--ipc", "--uts", "--propagation", "private", "--",
            os.path.realpath(sys.executable), "-I", "-S", str(STAGE), json.dumps(spec)]  # fmt: skip


@dataclass
class SandboxedCommand:
    """A wrapped argv plus the environment and cwd ``subprocess.Popen`` needs to start it sandboxed.

    Use as a context manager around the process's life: leaving it removes the host-side temporary
    directory (``none``) and the pids cgroup, killing whatever is still in it.
    """

    kind: SandboxKind
    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    process_limit: ProcessLimit
    limits: SandboxLimits
    _cgroup: PidsCgroup | None = None
    _host_tmp: tempfile.TemporaryDirectory[str] | None = None

    def popen(self, **kwargs: object) -> subprocess.Popen[bytes]:
        """``subprocess.Popen`` of the wrapped command in its own session (kwargs: stdin, stdout, pass_fds…).

        No ``preexec_fn``: with one, Python forks (not vfork) the whole parent — measured +13 ms per
        program from a small process, more from a large one; the rlimits and the cgroup are set by the
        command itself (``prlimit``, the ``sh`` shim of ``wrap``).
        """
        return subprocess.Popen(  # type: ignore[call-overload, no-any-return]  # kwargs are Popen's own
            self.argv, env=self.env, cwd=self.cwd, start_new_session=True, **kwargs
        )

    def hit_process_limit(self) -> bool:
        return self._cgroup is not None and self._cgroup.hit_limit()

    def __enter__(self) -> SandboxedCommand:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        if self._host_tmp is not None:
            self._host_tmp.cleanup()
            self._host_tmp = None


def wrap(argv: Sequence[str], policy: SandboxPolicy) -> SandboxedCommand:
    """The sandboxed form of ``argv`` under ``policy`` (the kind must be available: see ``probe``)."""
    limits = policy.limits
    mechanism = process_limit_mechanism()
    cgroup = None
    if mechanism == "cgroup":
        parent = pids_parent()
        assert parent is not None
        # bwrap's two processes (outside and pid 1) / unshare + stage run in the cgroup too
        cgroup = PidsCgroup.create(parent, limits.processes + 2)
    try:
        prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
        host_tmp = None
        sandbox = policy.kind
        if sandbox == "none":
            host_tmp = tempfile.TemporaryDirectory(prefix="evalpipe-code-")
            env = sandbox_environment(host_tmp.name, policy.extra_env)
            wrapped = [prlimit, *_prlimit_flags(limits), "--", *argv]
        else:
            view = interpreter_view(policy.extra_dirs)
            env = sandbox_environment(SANDBOX_TMP, policy.extra_env)
            if sandbox == "bwrap":
                wrapped = _bwrap_argv(argv, view, limits, prlimit)
            else:
                wrapped = _unshare_argv(argv, view, limits, env)
        if sandbox != "bwrap":
            # the launcher dies with the process that started it (bwrap: ``--die-with-parent``): a parent
            # killed by SIGKILL leaves no test process behind; for unshare its ``--kill-child`` then takes
            # the whole pid namespace, for none only the program itself (its own children are the host's)
            wrapped = [shutil.which("setpriv") or "/usr/bin/setpriv", "--pdeathsig", "KILL", "--", *wrapped]
        if cgroup is not None:
            # the launcher joins the cgroup before it starts anything ("0" = the writing process itself)
            shim = 'echo 0 > "$0" && exec "$@"'
            wrapped = ["/bin/sh", "-c", shim, str(cgroup.path / "cgroup.procs"), *wrapped]
        cwd = host_tmp.name if host_tmp is not None else None
        return SandboxedCommand(policy.kind, wrapped, env, cwd, mechanism, limits, cgroup, host_tmp)
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise


# ---------------------------------------------------------------- running and classifying


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _read_capped(fh: IO[bytes]) -> tuple[str, bool]:
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    fh.seek(0)
    return fh.read(OUTPUT_CAP).decode("utf-8", errors="replace"), size > OUTPUT_CAP


#: Exceptions → what the sandbox denied.  Matched against the last line of a traceback
#: (``FileNotFoundError: [Errno 2] No such file or directory: '/x'``) or an exception's ``repr``
#: (``FileNotFoundError(2, 'No such file or directory')``, how EvalScope's test harness reports it).
_EXCEPTION_DENIALS: tuple[tuple[re.Pattern[str], DenialKind], ...] = (
    (re.compile(r"MemoryError"), "address_space"),
    (re.compile(r"\[Errno 27\]|\b27, '|File too large"), "file_size"),
    (
        re.compile(r"BlockingIOError|\[Errno 11\]|Resource temporarily unavailable|can't start new thread"),
        "processes",
    ),
    (
        re.compile(
            r"\[Errno (101|111|113|99|97)\]|\b(101|111|113|99|97), '|gaierror|Name or service not known|"
            r"name resolution|Network is unreachable|Connection refused|No route to host"
        ),
        "network",
    ),
    (
        re.compile(
            r"FileNotFoundError|PermissionError|\[Errno (2|13|30)\]|\b(2|13|30), '|Read-only file system|"
            r"Permission denied|No such file or directory"
        ),
        "filesystem",
    ),
    (re.compile(r"^KeyError(: '|\(')[A-Z][A-Z0-9_]*'\)?$"), "environment"),
)
#: What a sandbox without isolation (``none``) still denies: its environment allow-list and rlimits.
_DENIED_WITHOUT_ISOLATION = frozenset({"environment", "processes", "address_space", "file_size", "cpu_time",
                                       "wall_time"})  # fmt: skip


def _exception_line(stderr: str) -> str | None:
    for line in reversed(stderr.strip().splitlines()):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line.strip()):
            return line.strip()
    return None


def exception_denial(sandbox: SandboxKind, text: str) -> Denial | None:
    """The denial an exception (a traceback's last line or its ``repr``) shows, or None.

    Under ``none`` a missing file or a refused connection is the program's own failure, not a denial:
    only the environment allow-list and the rlimits apply there.
    """
    line = text.strip()
    for pattern, denial in _EXCEPTION_DENIALS:
        if pattern.search(line):
            if sandbox == "none" and denial not in _DENIED_WITHOUT_ISOLATION:
                return None
            return Denial(kind=denial, detail=line[:300])
    return None


def classify(
    kind: SandboxKind,
    returncode: int | None,
    signum: int | None,
    timed_out: bool,
    stderr: str,
    limits: SandboxLimits,
    cpu_s: float,
    hit_process_limit: bool,
) -> list[Denial]:
    """What the sandbox denied, from the way the program ended (signal, limits) and its last exception."""
    denied: list[Denial] = []
    if timed_out:
        denied.append(Denial(kind="wall_time", detail=f"killed at the wall limit of {limits.wall_s:g} s"))
    # SIGXCPU is the soft CPU limit's own signal (the CPU time of a sandbox's inner processes does not
    # always reach the parent's rusage: bwrap does not wait for its pid 1); SIGKILL is the hard limit's
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and not timed_out and cpu_s >= limits.cpu_s):
        denied.append(Denial(kind="cpu_time", detail=f"{signal_name(signum)}: CPU limit {limits.cpu_s} s"))
    if signum == signal.SIGXFSZ:
        denied.append(Denial(kind="file_size", detail=f"SIGXFSZ: file size limit {limits.file_size_mb} MiB"))
    if hit_process_limit:
        denied.append(Denial(kind="processes", detail=f"pids cgroup limit {limits.processes} reached"))
    if kind != "none" and returncode == STAGE_SETUP_FAILED and "evalpipe-sandbox:" in stderr:
        denied.append(Denial(kind="sandbox_setup", detail=stderr.strip().splitlines()[-1][:300]))
    line = _exception_line(stderr)
    found = exception_denial(kind, line) if line is not None else None
    if found is not None and all(d.kind != found.kind for d in denied):
        denied.append(found)
    return denied


def exit_of(kind: SandboxKind, returncode: int | None, timed_out: bool) -> tuple[int | None, int | None]:
    """``(exit status, signal number)`` of the program from its launcher's return code (one is None).

    Under ``none`` a signal shows as a negative return code; ``bwrap`` and ``stage.py`` report a
    program's signal as 128 + its number.  A tree killed at the wall limit ended by SIGKILL.
    """
    code, signum = returncode, None
    if code is not None and code < 0:
        signum, code = -code, None
    elif kind != "none" and code is not None and code > 128 and not timed_out:
        signum, code = code - 128, None
    if timed_out:
        code, signum = None, signum or signal.SIGKILL
    return code, signum


def _wait(pid: int, timeout_s: float) -> tuple[int, float] | None:
    """``(wait status, CPU seconds of the tree it waited for)``, or None at the timeout (not reaped)."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], max(timeout_s, 0.0))
    finally:
        os.close(pidfd)
    if not ready:
        return None
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime


#: Processes between the launched one and the program: bwrap → its pid 1 → program; unshare → stage → program.
_LAUNCHER_DEPTH: dict[str, int] = {"bwrap": 2, "unshare": 2, "none": 0}


def program_pid(kind: SandboxKind, launcher_pid: int, timeout_s: float = 10.0) -> int | None:
    """The host pid of the sandboxed program itself, below its launcher (``bwrap``/``unshare`` + pid 1).

    A parent that watches the program's own counters (``/proc/PID/schedstat``: the re-check's run
    delay) needs this pid, not the launcher's.  None if the program is gone before it is found.
    """
    deadline = time.monotonic() + timeout_s
    pid = launcher_pid
    for _ in range(_LAUNCHER_DEPTH[kind]):
        while True:
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                return None
            if children:
                pid = int(children[0])  # the launcher and the namespace's init have one child each
                break
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.002)
    return pid


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sandbox's session (the namespace's init takes every process inside with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_sandboxed(
    argv: Sequence[str],
    policy: SandboxPolicy,
    stdin: bytes = b"",
    *,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> SandboxResult:
    """Run ``argv`` under ``policy`` to its end or to the wall limit; stdin given, output captured."""
    limits = policy.limits
    with contextlib.ExitStack() as stack:
        cmd = stack.enter_context(wrap(argv, policy))
        fin, fout, ferr = (stack.enter_context(tempfile.TemporaryFile()) for _ in range(3))
        fin.write(stdin)
        fin.seek(0)
        t0 = time.monotonic()
        proc = cmd.popen(stdin=fin, stdout=fout, stderr=ferr)
        try:
            if on_start is not None:
                on_start(proc)
            waited = _wait(proc.pid, limits.wall_s)
        except BaseException:  # an interrupt or a failing callback: the program does not outlive us
            kill_tree(proc)
            proc.wait()
            raise
        timed_out = waited is None
        if waited is None:
            kill_tree(proc)
            waited = _wait(proc.pid, 30.0)
            if waited is None:  # cannot happen for SIGKILL; do not leave a zombie behind in any case
                proc.wait()
                waited = (0, 0.0)
        status, cpu_s = waited
        proc.returncode = os.waitstatus_to_exitcode(status)
        kill_tree(proc)  # anything that left the namespace's session is still in the group
        wall_s = time.monotonic() - t0
        hit_pids = cmd.hit_process_limit()
        stdout, trunc_out = _read_capped(fout)
        stderr, trunc_err = _read_capped(ferr)
    code, signum = exit_of(policy.kind, proc.returncode, timed_out)
    return SandboxResult(
        sandbox=policy.kind,
        process_limit=cmd.process_limit,
        returncode=code,
        signal=signal_name(signum) if signum else None,
        timed_out=timed_out,
        wall_s=round(wall_s, 4),
        cpu_s=round(cpu_s, 4),
        stdout=stdout,
        stderr=stderr,
        output_truncated=trunc_out or trunc_err,
        denied=classify(policy.kind, code, signum, timed_out, stderr, limits, cpu_s, hit_pids),
    )
