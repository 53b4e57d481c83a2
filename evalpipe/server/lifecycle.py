"""Server lifecycle: bring the run's server up through its kind, verify it, always stop what was launched.

``managed_server`` is a context manager.  The server kind (``evalpipe.server.kinds``) decides *what* runs —
its argv, readiness paths, what its ``/server_info`` can verify — and this module provides *how*, as the
:class:`~evalpipe.server.kinds.base.ServeContext` building blocks every kind shares:

* **launch**: the argv as its own process session (``evalpipe.processes.group``: the whole process tree is one
  group), stdout/stderr to ``server/server.log``, ``server/launch.json`` written at launch and updated at
  ready and at stop, readiness polled (``evalpipe.server.readiness``), and always a stop — SIGTERM to the
  group, a bounded wait (SGLang's SIGTERM waits for in-flight requests without limit), then SIGKILL to the
  group — on normal exit, on any exception, on Ctrl-C and on SIGTERM to evalpipe;
* **attach** (``kind: endpoint``): nothing is launched and nothing is stopped;
* **verify**: ``/server_info`` and ``/model_info`` saved redacted, verified against the config
  (``evalpipe.server.verify``), abort or warn on a mismatch;
* **member**: the same blocks for one worker of a fleet (``kind: router``), its files in
  ``server/workers/<n>/``.

``watch_server`` ends an evaluation promptly when the launched server (or a launched worker of a fleet) dies
mid-run.  Health and info calls go straight to the server (never through the recording proxy).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalpipe.artifacts import atomic_write_json, write_model
from evalpipe.artifacts.disk import disk_errors
from evalpipe.artifacts.redact import redact, redact_argv, redact_mapping
from evalpipe.artifacts.schema.server import LaunchRecord, ServerVerification
from evalpipe.clock import utc_now
from evalpipe.errors import ServerDied, ServerError
from evalpipe.processes.group import spawn, stop_group
from evalpipe.processes.ports import free_port
from evalpipe.processes.signals import Terminated
from evalpipe.server.kinds.base import Kind, ServerHandle
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.launch_env import api_key, server_env
from evalpipe.server.readiness import get_json, log_tail, wait_ready
from evalpipe.server.verify import mismatches, verify

if TYPE_CHECKING:
    from evalpipe.artifacts import RunDir, ServerFiles
    from evalpipe.config.models import RunConfig, ServerConfig
    from evalpipe.recording.proxy import ProxyHandle
    from evalpipe.server.server_info import ServerInfoReader

__all__ = ["ServerHandle", "managed_server", "relevant_env", "watch_server"]

log = logging.getLogger("evalpipe.server")

_ENV_PREFIXES = (
    "CUDA_",
    "SGLANG_",
    "NCCL_",
    "TORCH_",
    "PYTORCH_",
    "HF_",
    "TRANSFORMERS_",
    "TRITON_",
    "TILELANG_",
)
_ENV_KEYS = ("PYTHONPATH", "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "NVIDIA_VISIBLE_DEVICES")


def relevant_env(env: Mapping[str, str], server: ServerConfig, secrets: list[str]) -> dict[str, str]:
    """Environment worth recording (CUDA_VISIBLE_DEVICES, SGLANG_*, …, plus ``server.env``), redacted."""
    keep = {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_KEYS or k in server.env}
    return dict(sorted(redact_mapping(keep, secrets).items()))


class _ServerGone(BaseException):  # like KeyboardInterrupt: no `except Exception` swallows it
    """Raised in the main thread by ``watch_server`` when the launched server's process has exited."""


@contextlib.contextmanager
def watch_server(
    handle: ServerHandle,
    rundir: RunDir,
    poll_s: float = 0.5,
    *,
    during: str = "the evaluation",
    proxy: ProxyHandle | None = None,
) -> Iterator[None]:
    """While the evaluation runs, end it promptly if the launched server dies (crash, OOM kill, kill -9).

    Without this, every remaining request would fail against a dead port, each after its retries.  A
    thread polls the server process — and each launched worker of a fleet, whose death a router would hide
    for several health-check intervals; when one has exited, the main thread (blocked on the EvalScope
    worker) gets ``SIGUSR1``, whose handler raises, so the worker is stopped on the way out and the run ends
    with ``ServerDied`` naming that process's log.  Attached servers (``--endpoint``) have no process.

    A fleet behind a router (``handle.fleet_watch``) is also watched by the router kind's fleet watch: one dead
    worker is recorded (the others serve on), only the router's death or every worker's ends the run, and a
    worker that changed its configuration under ``on_mismatch: abort`` ends it with ``FleetChanged``.  With
    the recording ``proxy`` (the evaluation) each event names the requests in flight; under ``abort`` the
    proxy holds each answer until a poll begun after it confirmed every worker (a worker restarted with
    another configuration between two polls cannot slip an answer in), and on an abort it forwards and
    delivers nothing more before the run stops.
    """
    fleet = handle.fleet_watch
    members = [(h.process, h.log_path or rundir.server_log) for h in handle.members if h.process is not None]
    router = [(handle.process, rundir.server_log)] if handle.process is not None else []
    if (
        not router and not members and fleet is None
    ) or threading.current_thread() is not threading.main_thread():
        yield
        return
    dead: list[tuple[subprocess.Popen[bytes], Path]] = []
    changed: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    main_ident = threading.main_thread().ident
    assert main_ident is not None  # the main thread has started: this code runs in it

    def on_signal(signum: int, frame: Any) -> None:
        raise _ServerGone()

    def stop_run() -> None:
        with lock:
            if not done.is_set():
                done.set()
                signal.pthread_kill(main_ident, signal.SIGUSR1)

    def deaths() -> list[tuple[subprocess.Popen[bytes], Path]]:
        """The deaths that end the run: the server or router, or every worker of a watched fleet."""
        gone = [(p, log) for p, log in router if p.poll() is not None]
        gone_members = [(p, log) for p, log in members if p.poll() is not None]
        if fleet is None or (members and len(gone_members) == len(members)):
            gone += gone_members
        return gone

    def poll() -> None:
        while not done.wait(poll_s):
            gone = deaths()
            if gone:
                dead.extend(gone)
                stop_run()
                return

    def on_abort(line: str) -> None:
        if proxy is not None:
            proxy.refuse(line)  # first: no answer of the changed worker reaches EvalScope from here on
        changed.append(line)
        stop_run()

    previous = signal.signal(signal.SIGUSR1, on_signal)
    watcher = threading.Thread(target=poll, name="server-watch", daemon=True)
    stack = contextlib.ExitStack()
    if fleet is not None:
        in_flight: Callable[[float | None], list[str]] = (
            proxy.in_flight_ids if proxy is not None else (lambda since: [])
        )
        watch = fleet.watch()
        stack.enter_context(watch.running(in_flight=in_flight, on_abort=on_abort))
        if proxy is not None and fleet.on_mismatch == "abort":
            # an answer reaches EvalScope only once a poll begun after it found every worker as verified
            proxy.set_gate(watch.verified_after)
            stack.callback(proxy.set_gate, None)
    watcher.start()
    try:
        yield
        with lock:  # no signal after this: a death the last poll did not see is found here
            done.set()
        gone = deaths()
        if gone or changed:  # in the last poll interval (the evaluation's requests failed fast against it)
            dead.extend(gone)
            raise _ServerGone()
    except _ServerGone:
        if changed:
            from evalpipe.server.kinds.router import FleetChanged  # import cost: not in the pipeline's import

            raise FleetChanged(
                f"fleet changed during the run (on_mismatch: abort): {changed[0]}", str(rundir.root)
            ) from None
        proc, log = dead[0]
        code = proc.poll()
        if code is not None and code < 0:
            how = f"killed by signal {-code}"
            with contextlib.suppress(ValueError):
                how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"exit code {code}"
        tail = log_tail(log, 10)
        what = "the server" if proc is handle.process else "a worker of the fleet"
        if fleet is not None and proc is not handle.process:
            what = "every worker of the fleet"
        raise ServerDied(
            f"{what} died during {during} ({how}; log: {log})",
            str(rundir.root),
            details=[f"last {len(tail)} log lines:", *tail] if tail else [],
        ) from None
    finally:
        with lock:
            done.set()
        watcher.join()
        stack.close()
        signal.signal(signal.SIGUSR1, previous)


class _SigtermGuard:
    """While a server is up, SIGTERM to evalpipe raises ``Terminated`` so ``finally`` blocks run.

    Once cleanup has begun, a further SIGTERM (or one arriving during the stop) only sets ``hurry``, which
    escalates the stop to SIGKILL instead of interrupting it.  Only the main thread can own signals; in
    other threads the guard is inert.
    """

    def __init__(self) -> None:
        self.hurry = threading.Event()
        self._cleanup = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> _SigtermGuard:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handler)
            self._installed = True
        return self

    def _handler(self, signum: int, frame: Any) -> None:
        if self._cleanup:
            self.hurry.set()
            return
        raise Terminated("SIGTERM")

    def begin_cleanup(self) -> None:
        self._cleanup = True

    def __exit__(self, *exc: object) -> None:
        self._cleanup = True
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous)


@contextlib.contextmanager
def managed_server(
    cfg: RunConfig,
    server: ServerConfig,
    rundir: RunDir,
    *,
    variant: str | None = None,
    kind: Kind,
) -> Iterator[ServerHandle]:
    """Launch (or attach to) the server, verify it, yield a handle, and always stop what was launched.
    ``kind``: the server's kind as the run resolved it."""
    rundir.server_dir.mkdir(parents=True, exist_ok=True)
    key = api_key(server)
    with _SigtermGuard() as guard:
        if kind.launches_process and server.port == 0:
            server = server.model_copy(update={"port": free_port(server.host)})
        serving = _Serving(
            cfg, server, rundir, rundir.server_files, variant=variant, api_key=key, guard=guard
        )
        with kind.serve(serving) as handle:
            yield handle


class _Serving:
    """The :class:`~evalpipe.server.kinds.base.ServeContext` of one ``managed_server`` call."""

    def __init__(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        rundir: RunDir,
        files: ServerFiles,
        *,
        variant: str | None,
        api_key: str | None,
        guard: _SigtermGuard,
    ) -> None:
        self._cfg, self._server, self.rundir, self._files = cfg, server, rundir, files
        self.variant, self._api_key, self.guard = variant, api_key, guard
        self.secrets = [api_key] if api_key else []
        self._env = server_env(server)

    @property
    def cfg(self) -> RunConfig:
        return self._cfg

    @property
    def server(self) -> ServerConfig:
        return self._server

    @property
    def env(self) -> dict[str, str]:
        return dict(self._env)

    @property
    def files(self) -> ServerFiles:
        return self._files

    @property
    def api_key(self) -> str | None:
        return self._api_key

    def member(self, name: str, server: ServerConfig) -> _Serving:
        files = self.rundir.worker_files(name)
        files.dir.mkdir(parents=True, exist_ok=True)
        return _Serving(
            self._cfg,
            server,
            self.rundir,
            files,
            variant=self.variant,
            api_key=self._api_key,
            guard=self.guard,
        )

    @contextlib.contextmanager
    def launch(
        self, argv: list[str], *, base_url: str, ready_paths: tuple[str, ...], wait: bool = True
    ) -> Iterator[ServerHandle]:
        server, files = self._server, self._files
        launch = LaunchRecord(
            kind=server.kind,
            variant=self.variant,
            argv=redact_argv(argv, self.secrets),
            env=relevant_env(self._env, server, self.secrets),
            base_url=base_url,
            started_at=utc_now(),
        )
        with open(files.log, "ab") as logfh:
            with disk_errors(files.log):
                logfh.write(f"=== evalpipe: launching at {launch.started_at}\n".encode())
                logfh.flush()
            proc = spawn(
                argv, stdout=logfh, stderr=subprocess.STDOUT, env=self._env, die_with_parent=signal.SIGKILL
            )
        launch.pid = proc.pid
        handle = ServerHandle(
            base_url=base_url,
            launch=launch,
            server=server,
            process=proc,
            api_key=self._api_key,
            log_path=files.log,
        )
        try:
            write_model(files.launch, launch)
            if wait:
                self.wait_ready(handle, ready_paths)
            yield handle
        finally:
            self.guard.begin_cleanup()
            launch.stop_method = stop_group(proc, server.stop_timeout_s, hurry=self.guard.hurry)
            launch.stopped_at = utc_now()
            launch.exit_code = proc.returncode
            write_model(files.launch, launch)

    def wait_ready(self, handle: ServerHandle, ready_paths: tuple[str, ...]) -> None:
        wait_ready(
            handle.base_url,
            timeout=self._server.launch_timeout_s,
            api_key=self._api_key,
            proc=handle.process,
            log_path=handle.log_path,
            secrets=self.secrets,
            paths=ready_paths,
        )
        handle.launch.ready_at = utc_now()
        write_model(self._files.launch, handle.launch)

    def attach(self, base_url: str, *, ready_paths: tuple[str, ...]) -> ServerHandle:
        server = self._server
        launch = LaunchRecord(
            kind=server.kind,
            variant=self.variant,
            base_url=base_url,
            started_at=utc_now(),
            stop_method="attached",
        )
        write_model(self._files.launch, launch)
        wait_ready(base_url, timeout=server.launch_timeout_s, api_key=self._api_key, paths=ready_paths)
        launch.ready_at = utc_now()
        write_model(self._files.launch, launch)
        return ServerHandle(base_url=base_url, launch=launch, server=server, api_key=self._api_key)

    def describe_head(self, verification: ServerVerification, info: Mapping[str, Any] | None) -> str:
        return server_kind(verification.kind).describe_head(verification, info)

    def server_info_reader(self, kind: str) -> ServerInfoReader:
        return server_kind(kind).server_info_reader

    def verify(
        self, handle: ServerHandle, *, against: ServerConfig | None = None, enforce: bool = True
    ) -> ServerVerification:
        """Save redacted /server_info and /model_info, verify, and abort (or warn) on a mismatch.

        A server without ``/server_info`` (llama.cpp, vLLM) is not a mismatch: its resolved config is
        recorded as unverifiable (a warn finding in the audit) and its served name is checked against
        ``/v1/models`` — unless its kind always serves ``/server_info`` (SGLang).  ``against``: the settings
        it must have resolved (a fleet's worker: the top-level ones); ``enforce=False``: record only.
        """
        server = against if against is not None else self._server
        files, key, base_url = self._files, self._api_key, handle.base_url
        info, info_err = get_json(base_url, ("/server_info", "/get_server_info"), key)
        if info is not None:
            atomic_write_json(files.server_info, redact(info, self.secrets))
        model_info, _ = get_json(base_url, ("/model_info", "/get_model_info"), key)
        if model_info is not None:
            atomic_write_json(files.model_info, redact(model_info, self.secrets))
        models, _ = get_json(base_url, ("/v1/models",), key)
        served_models = _model_ids(models) if models is not None else None
        safe_info = redact(info, self.secrets) if info is not None else None
        verification = verify(
            self._cfg,
            server,
            safe_info,
            base_url=base_url,
            variant=self.variant,
            info_error=info_err,
            served_models=served_models,
            log_path=handle.log_path,
            fresh_start=handle.process is not None,
        )
        write_model(files.verification, verification)
        if not verification.verified and enforce:
            problems = mismatches(verification)
            if info is None and server_kind(server.kind).requires_server_info:
                problems = [f"server_info unavailable: {info_err}", *problems]
            if not problems:  # nothing contradicts the config; it just cannot all be checked
                log.warning("%s", verification.description)
                return verification
            if server.on_mismatch == "abort":
                raise ServerError(
                    "the server did not verifiably resolve the configured settings (on_mismatch: abort)",
                    details=problems,
                )
            log.warning("server verification failed (on_mismatch: warn): %s", "; ".join(problems))
        return verification


def _model_ids(payload: Mapping[str, Any]) -> list[str]:
    """Model ids of an OpenAI ``/v1/models`` answer (``data[].id``, plus llama.cpp's ``aliases``)."""
    ids: list[str] = []
    for item in payload.get("data") or []:
        if isinstance(item, dict):
            for name in [item.get("id"), *(item.get("aliases") or [])]:
                if isinstance(name, str) and name not in ids:
                    ids.append(name)
    return ids
