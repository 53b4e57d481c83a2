"""A fork server: one process that has done a slow start-up once forks each child that needs it.

EvalScope's import costs ~2 s of CPU (3 s on a loaded host) in every EvalScope worker, and every
``evalpipe run`` starts one.  Many short runs on one host (the test suite starts ~110 workers, a sweep of
small configs as many as it has runs) pay it each time.  A server started once with the import done
(``evalpipe.evalscope_bridge.forkserver``) forks each worker instead; what the caller gets back behaves as
the ``subprocess.Popen`` of a spawned one for everything evalpipe does with it (``ForkedChild``).

The protocol, over a Unix ``SOCK_SEQPACKET`` socket (one message per request or reply, each whole), one
connection per child:

* request: a JSON object ``{"env", "cwd", "fds"}`` with the child's standard streams and extra file
  descriptors attached (``SCM_RIGHTS``); ``fds`` names the number each extra descriptor must have in the
  child (as ``pass_fds`` keeps them for a spawned one);
* reply ``pid N``: the child exists, in a session and process group of its own (its pid is the group id);
* reply ``exit C``: it ended, ``C`` as ``Popen.returncode`` gives it (``-N`` for signal ``N``).

The connection stands for the parent: when it closes before the child ended (the run died, even of
SIGKILL), the server SIGKILLs the child's process group, as ``PR_SET_PDEATHSIG`` does for a spawned child;
the child gets ``PR_SET_PDEATHSIG`` for the server itself.  A caller of another user (``SO_PEERCRED``) or in
other namespaces (``SHARED_NAMESPACES``) or cgroup is refused: its child would not be its own; what a
spawned child inherits besides (CPU affinity, umask, nice value, resource limits) the forked one is given.  Children are reaped through pidfds, so the
server is one thread: nothing is forked while another thread holds a lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from evalpipe.processes.group import die_with_parent_now

#: Environment variable naming the socket of a running fork server; unset, children are spawned.
FORKSERVER_ENV = "EVALPIPE_WORKER_FORKSERVER"
#: Largest request (the JSON: environment, working directory) in bytes.
_MAX_REQUEST = 1 << 20
#: Descriptors a request may attach: stdin, stdout, stderr and the extra ones.
_MAX_FDS = 16
#: Seconds to wait for the server's ``pid`` reply (it forks at once; a hung server is not waited for).
_REPLY_TIMEOUT_S = 30.0


class ForkRefused(OSError):
    """The fork server could not be reached or did not fork (the caller spawns instead)."""


@dataclass
class ForkRequest:
    """What the child of one request gets: its environment, working directory and descriptor numbers."""

    env: dict[str, str]
    cwd: str
    #: The number each extra descriptor must have in the child, in the order they were attached.
    fds: list[int] = field(default_factory=list)
    #: The caller's namespaces (``namespaces()``): a child must share them to be the caller's child in all
    #: but name — see the same files, reach the same loopback, be signalled by the pid it is given.
    namespaces: dict[str, str] = field(default_factory=dict)
    #: What a spawned child inherits and a forked one gets from here (``inherited()``): CPU affinity, umask,
    #: nice value, resource limits — and the cgroup, which must be the server's (checked, not moved).
    inherited: dict[str, Any] = field(default_factory=dict)


def inherited() -> dict[str, Any]:
    """This process's attributes a child inherits through fork and exec (Linux)."""
    status = Path("/proc/self/status").read_text() if Path("/proc/self/status").exists() else ""
    umask = next((int(line.split()[1], 8) for line in status.splitlines() if line.startswith("Umask:")), None)
    return {
        "affinity": sorted(os.sched_getaffinity(0)),
        "umask": umask,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "rlimits": {name: list(resource.getrlimit(getattr(resource, name))) for name in _RLIMITS},
        "cgroup": Path("/proc/self/cgroup").read_text() if Path("/proc/self/cgroup").exists() else "",
    }


#: The resource limits a forked child gets from its caller: every ``RLIMIT_*`` this platform has, one name per
#: limit (``RLIMIT_OFILE`` is ``RLIMIT_NOFILE`` on Linux: set second, it would undo the first).
_RLIMITS = tuple(
    {getattr(resource, n): n for n in sorted(dir(resource), reverse=True) if n.startswith("RLIMIT_")}.values()
)


def inherited_mismatch(asked: Mapping[str, Any]) -> str | None:
    """Why this process cannot give its child the attributes ``asked`` (another cgroup; a lower nice value or
    a higher hard limit, which only a privileged process may set); None when it can."""
    own = inherited()
    if asked.get("cgroup") != own["cgroup"]:
        return "the caller is in another cgroup than the fork server"
    if os.geteuid() != 0:
        if int(asked.get("nice", own["nice"])) < own["nice"]:
            return f"the caller's nice value {asked['nice']} is below the fork server's {own['nice']}"
        for name, (_soft, hard) in dict(asked.get("rlimits", {})).items():
            mine = own["rlimits"].get(name)
            if mine is not None and mine[1] != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > mine[1]):
                return f"the caller's hard {name} is above the fork server's"
    return None


def _take_on(attributes: Mapping[str, Any]) -> None:
    """In the forked child: the caller's affinity, umask, nice value and resource limits."""
    if attributes.get("affinity"):
        os.sched_setaffinity(0, attributes["affinity"])
    if attributes.get("umask") is not None:
        os.umask(int(attributes["umask"]))
    if "nice" in attributes:
        os.setpriority(os.PRIO_PROCESS, 0, int(attributes["nice"]))
    for name, (soft, hard) in dict(attributes.get("rlimits", {})).items():
        if hasattr(resource, name):
            resource.setrlimit(getattr(resource, name), (soft, hard))


#: The namespaces a forked child must share with the process asking for it.
SHARED_NAMESPACES = ("mnt", "net", "pid", "user")


def namespaces() -> dict[str, str]:
    """This process's namespaces (``/proc/self/ns``: e.g. ``mnt:[4026531841]``); empty where there is none."""
    found = {}
    for name in SHARED_NAMESPACES:
        with contextlib.suppress(OSError):
            found[name] = os.readlink(f"/proc/self/ns/{name}")
    return found


def namespace_mismatch(asked: Mapping[str, str]) -> str | None:
    """Why a caller in namespaces ``asked`` cannot have a child of this process; None when it can."""
    own = namespaces()
    differ = [name for name in SHARED_NAMESPACES if asked.get(name) != own.get(name)]
    if differ:
        return f"the caller is in another {'/'.join(differ)} namespace than the fork server"
    return None


class ForkedChild:
    """A child forked by the fork server, seen as its ``subprocess.Popen`` would be: ``pid``, ``stdin``,
    ``returncode``, ``poll``, ``wait``.  Its exit status arrives on the connection; signals go to its
    process group by pid (``processes.group``).  The connection closes once the status is in — or when
    this object is collected, which ends the child as a parent's death would."""

    def __init__(self, args: Sequence[str], conn: socket.socket, pid: int, stdin: IO[bytes] | None) -> None:
        self.args = list(args)
        self.pid = pid
        self.stdin = stdin
        self.returncode: int | None = None
        self._conn: socket.socket | None = conn
        self._lock = threading.Lock()

    def _collect(self, timeout: float | None) -> None:
        with self._lock:
            conn = self._conn
            if self.returncode is not None or conn is None:
                return
            ready, _, _ = select.select([conn], [], [], timeout)
            if not ready:
                return
            try:
                reply = conn.recv(64)
            except OSError:
                reply = b""
            # no status (the server itself is gone): the child was SIGKILLed with it (PR_SET_PDEATHSIG)
            code = int(reply.split()[1]) if reply.startswith(b"exit ") else -signal.SIGKILL
            self.returncode = code
            self._conn = None
            conn.close()

    def poll(self) -> int | None:
        self._collect(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._collect(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode

    def __del__(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()


def fork_child(
    address: str,
    args: Sequence[str],
    *,
    stdout: int,
    stderr: int,
    env: Mapping[str, str],
    cwd: str,
    pass_fds: Sequence[int] = (),
) -> ForkedChild:
    """Ask the fork server at ``address`` for a child; its stdin is a new pipe (``ForkedChild.stdin``),
    ``stdout``/``stderr`` and ``pass_fds`` are descriptors of this process, kept under the same numbers
    (``pass_fds``) or as 1 and 2.  ``args`` only names the child in errors.  Raises ``ForkRefused``."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.settimeout(_REPLY_TIMEOUT_S)
    stdin_read, stdin_write = os.pipe()
    try:
        conn.connect(address)
        request = ForkRequest(
            env=dict(env), cwd=cwd, fds=list(pass_fds), namespaces=namespaces(), inherited=inherited()
        )
        socket.send_fds(
            conn, [json.dumps(request.__dict__).encode()], [stdin_read, stdout, stderr, *pass_fds]
        )
        reply = conn.recv(512)
        if not reply.startswith(b"pid "):
            why = reply.decode(errors="replace").removeprefix("refused ")
            raise ForkRefused(f"the fork server at {address} did not fork: {why[:300]}")
        pid = int(reply.split()[1])
        conn.settimeout(None)
    except (OSError, ValueError) as exc:
        conn.close()
        os.close(stdin_write)
        raise exc if isinstance(exc, ForkRefused) else ForkRefused(f"fork server {address}: {exc}") from exc
    finally:
        os.close(stdin_read)
    return ForkedChild(args, conn, pid, os.fdopen(stdin_write, "wb"))


# ------------------------------------------------------------------------------------------ server side
def _become_child(request: ForkRequest, fds: list[int], in_session: int) -> None:
    """In the forked child: a session of its own (said on ``in_session``: the server names the child only
    once its group exists, as ``Popen`` returns only after ``setsid``), the request's descriptors under their
    numbers (every other one closed), environment and working directory."""
    os.setsid()
    die_with_parent_now(signal.SIGKILL)
    os.write(in_session, b"1")
    stdin, stdout, stderr, *extra = fds
    # the extra descriptors first to numbers above all of them, so that no dup2 overwrites one still needed
    top = max([*fds, *request.fds, 2]) + 1
    moved = [os.dup2(fd, top + i) for i, fd in enumerate(extra)]
    os.dup2(stdin, 0)
    os.dup2(stdout, 1)
    os.dup2(stderr, 2)
    for target, fd in zip(request.fds, moved, strict=True):
        os.dup2(fd, target)
    wanted = {0, 1, 2, *request.fds}
    for fd in sorted(int(name) for name in os.listdir("/proc/self/fd")):
        if fd not in wanted:
            with contextlib.suppress(OSError):
                os.close(fd)
    _take_on(request.inherited)
    os.environ.clear()
    os.environ.update(request.env)
    os.chdir(request.cwd)
    # as a fresh interpreter has them: Ctrl-C raises KeyboardInterrupt, SIGPIPE is ignored, the rest default
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _peer_mismatch(conn: socket.socket) -> str | None:
    """Why the process at the other end of ``conn`` may not have a child of this one: another user (its
    credentials as the kernel gives them, ``SO_PEERCRED``); None when it may."""
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():
        return f"the caller runs as user {uid}, the fork server as user {os.getuid()}"
    return None


@dataclass
class _Child:
    conn: socket.socket
    pid: int
    pidfd: int


#: Why a request cannot have a child of this server beyond the checks every server makes; None when it can.
Refusal = Callable[[ForkRequest], str | None]


def _fork(
    conn: socket.socket, child_main: Callable[[ForkRequest], int], refuse: Refusal | None
) -> _Child | None:
    """Serve one request on ``conn``: fork, reply with the pid; None when the request was unusable."""
    try:
        message, fds, _flags, _addr = socket.recv_fds(conn, _MAX_REQUEST, _MAX_FDS)
    except OSError:
        return None
    try:
        raw = json.loads(message)
        request = ForkRequest(
            env=dict(raw["env"]), cwd=str(raw["cwd"]), fds=[int(n) for n in raw["fds"]],
            namespaces=dict(raw["namespaces"]), inherited=dict(raw["inherited"]),
        )  # fmt: skip
        if len(fds) != 3 + len(request.fds):
            raise ValueError(f"{len(fds)} descriptors for {len(request.fds)} extra ones")
        mismatch = (
            _peer_mismatch(conn)
            or namespace_mismatch(request.namespaces)
            or inherited_mismatch(request.inherited)
            or (refuse(request) if refuse is not None else None)
        )
        if mismatch is not None:
            raise ValueError(mismatch)
    except (ValueError, KeyError, TypeError) as exc:
        with contextlib.suppress(OSError):
            conn.send(f"refused {exc}".encode()[:300])
        for fd in fds:
            os.close(fd)
        return None
    in_session, said = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            _become_child(request, fds, said)
            code = child_main(request)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            os._exit(code)
    os.close(said)
    select.select([in_session], [], [], _REPLY_TIMEOUT_S)  # the child's session exists (or it is gone)
    os.close(in_session)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    with contextlib.suppress(OSError):
        conn.send(f"pid {pid}".encode())
    return _Child(conn, pid, pidfd)


def serve(
    address: str,
    child_main: Callable[[ForkRequest], int],
    *,
    ready: Callable[[], Any],
    refuse: Refusal | None = None,
) -> None:
    """Listen at ``address`` and fork a child running ``child_main`` per connection, until SIGTERM/SIGINT.
    ``ready`` is called once the socket listens; ``refuse`` says why a request may not have a child (what the
    server prepared does not fit it), besides the user, namespace and cgroup checks.  On the way out every
    child still running is SIGKILLed with its group."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)
    by_conn: dict[int, _Child] = {}
    by_pidfd: dict[int, _Child] = {}
    ready()
    try:
        while True:
            readable, _, _ = select.select([listener.fileno(), *by_conn, *by_pidfd], [], [])
            for fd in readable:
                if fd == listener.fileno():
                    conn, _ = listener.accept()
                    child = _fork(conn, child_main, refuse)
                    if child is None:
                        conn.close()
                        continue
                    by_conn[conn.fileno()] = child
                    by_pidfd[child.pidfd] = child
                elif fd in by_pidfd:  # a child ended: reap it, report its status, hang up
                    child = by_pidfd.pop(fd)
                    _, status = os.waitpid(child.pid, 0)
                    os.close(child.pidfd)
                    if by_conn.pop(child.conn.fileno(), None) is not None:
                        with contextlib.suppress(OSError):
                            child.conn.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
                        child.conn.close()
                elif fd in by_conn:  # the parent hung up while its child runs: end the child's group
                    child = by_conn.pop(fd)
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(child.pid, signal.SIGKILL)
                    child.conn.close()
    finally:
        for child in by_pidfd.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(address)
