"""Server lifecycle: launch, wait until ready, save and verify ``/server_info``, always stop.

``managed_server`` is a context manager.  ``kind: sglang`` and ``kind: answer_key`` are launched the
same way: their own process session (so the whole process tree is one process group), stdout/stderr to
``server/server.log``, ``server/launch.json`` written at launch and updated at ready and at stop.  Stop is
SIGTERM to the group, a bounded wait (SGLang's SIGTERM waits for in-flight requests without limit), then
SIGKILL to the group — on normal exit, on any exception, on Ctrl-C and on SIGTERM to evalpipe.
``kind: endpoint`` attaches: nothing is launched and nothing is stopped.

Health and info calls go straight to the server (never through the recording proxy).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ServerError
from evalpipe.io import atomic_write_json, write_model
from evalpipe.provenance import utc_now
from evalpipe.redact import redact, redact_argv, redact_mapping, redact_text
from evalpipe.rundir import RunDir
from evalpipe.schema.server import LaunchRecord, ServerVerification
from evalpipe.server import sglang_flags as flags
from evalpipe.server.ports import free_port
from evalpipe.server.sglang_env import probe_sglang, server_env
from evalpipe.server.verify import mismatches, verify

log = logging.getLogger("evalpipe.server")

LOG_TAIL_LINES = 50
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


class Terminated(KeyboardInterrupt):
    """SIGTERM delivered to evalpipe while a server is up: unwinds like Ctrl-C (exit 130), stopping it."""


@dataclass
class ServerHandle:
    """A ready server: where to send evaluation traffic and what it was verified to be."""

    base_url: str
    launch: LaunchRecord
    server: ServerConfig
    verification: ServerVerification | None = None
    process: subprocess.Popen | None = None
    api_key: str | None = field(default=None, repr=False)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


def relevant_env(env: Mapping[str, str], server: ServerConfig, secrets: list[str]) -> dict[str, str]:
    """Environment worth recording (CUDA_VISIBLE_DEVICES, SGLANG_*, …, plus ``server.env``), redacted."""
    keep = {k: v for k, v in env.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_KEYS or k in server.env}
    return dict(sorted(redact_mapping(keep, secrets).items()))


def _http_get(url: str, api_key: str | None, timeout: float = 10.0) -> tuple[int | None, bytes, str | None]:
    """(status, body, error) — status None on a transport error."""
    req = urllib.request.Request(url, method="GET")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read(), None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read() if exc.fp else b"", None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, b"", f"{type(reason).__name__}: {reason}"


def _get_json(base_url: str, paths: tuple[str, ...], api_key: str | None) -> tuple[dict | None, str | None]:
    """First path answering 200 with a JSON object; else (None, why)."""
    errors = []
    for path in paths:
        status, body, err = _http_get(base_url + path, api_key)
        if status == 200:
            try:
                data = json.loads(body)
            except json.JSONDecodeError:
                errors.append(f"{path}: not JSON")
                continue
            if isinstance(data, dict):
                return data, None
            errors.append(f"{path}: not a JSON object")
        else:
            errors.append(f"{path}: {err or f'HTTP {status}'}")
    return None, "; ".join(errors)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, secrets: list[str] | None = None) -> list[str]:
    """Last ``lines`` lines of a log, redacted (they are shown on the console and in error messages)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 256 * 1024))
            data = fh.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    out = []
    for line in text.splitlines()[-lines:]:
        for s in secrets or []:
            line = line.replace(s, "***")
        out.append(redact_text(line))
    return out


def _group_alive(pgid: int) -> bool:
    """True while any non-zombie process is in process group ``pgid``."""
    proc_dir = Path("/proc")
    if proc_dir.is_dir():
        for entry in proc_dir.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_process_group(proc: subprocess.Popen, timeout: float, hurry: threading.Event | None = None) -> str:
    """SIGTERM the group, wait up to ``timeout`` for every member to exit, then SIGKILL the group.

    Returns ``exited`` (nothing left to stop), ``sigterm`` or ``sigkill``.  A Ctrl-C or ``hurry`` during
    the wait escalates to SIGKILL at once; the KeyboardInterrupt is re-raised after the group is gone.
    """
    pgid = proc.pid  # start_new_session: the leader's pid is the group id
    if proc.poll() is not None and not _group_alive(pgid):
        return "exited"
    interrupted: BaseException | None = None
    method = "sigterm"
    _killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    try:
        while True:
            proc.poll()
            if proc.returncode is not None and not _group_alive(pgid):
                break
            if time.monotonic() >= deadline or (hurry is not None and hurry.is_set()):
                method = "sigkill"
                break
            time.sleep(0.05)
    except KeyboardInterrupt as exc:
        interrupted = exc
        method = "sigkill"
    if method == "sigkill":
        _killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        end = time.monotonic() + 10
        while _group_alive(pgid) and time.monotonic() < end:
            _killpg(pgid, signal.SIGKILL)
            time.sleep(0.05)
    proc.wait()
    if interrupted is not None:
        raise interrupted
    return method


class _ServerGone(BaseException):  # like KeyboardInterrupt: no `except Exception` swallows it
    """Raised in the main thread by ``watch_server`` when the launched server's process has exited."""


@contextlib.contextmanager
def watch_server(handle: ServerHandle, rundir: RunDir, poll_s: float = 0.5) -> Iterator[None]:
    """While the evaluation runs, end it promptly if the launched server dies (crash, OOM kill, kill -9).

    Without this, every remaining request would fail against a dead port, each after its retries.  A
    thread polls the server process; when it has exited, the main thread (blocked on the EvalScope worker)
    gets ``SIGUSR1``, whose handler raises, so the worker is stopped on the way out and the run ends with
    ``ServerDied`` naming the server log.  Attached servers (``--endpoint``) have no process to watch.
    """
    proc = handle.process
    if proc is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    lock = threading.Lock()
    done = threading.Event()
    main_ident = threading.main_thread().ident

    def on_signal(signum: int, frame: Any) -> None:
        raise _ServerGone()

    def poll() -> None:
        while not done.wait(poll_s):
            if proc.poll() is not None:
                with lock:
                    if not done.is_set():
                        signal.pthread_kill(main_ident, signal.SIGUSR1)  # type: ignore[arg-type]
                return

    previous = signal.signal(signal.SIGUSR1, on_signal)
    watcher = threading.Thread(target=poll, name="server-watch", daemon=True)
    watcher.start()
    try:
        yield
    except _ServerGone:
        from evalpipe.errors import ServerDied

        code = proc.poll()
        if code is not None and code < 0:
            how = f"killed by signal {-code}"
            with contextlib.suppress(ValueError):
                how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"exit code {code}"
        tail = log_tail(rundir.server_log, 10)
        raise ServerDied(
            f"the server died during the evaluation ({how}; log: {rundir.server_log})",
            str(rundir.root),
            details=[f"last {len(tail)} log lines:", *tail] if tail else [],
        ) from None
    finally:
        with lock:
            done.set()
        watcher.join()
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


def _endpoint_base(url: str) -> str:
    base = url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def ready_paths(server: ServerConfig) -> tuple[str, ...]:
    """What readiness is polled on: ``server.ready_path``, else ``/health`` — and, for servers that are not
    SGLang or evalpipe's own, ``/v1/models`` when ``/health`` is not served (404)."""
    if server.ready_path:
        return (server.ready_path,)
    if server.kind in ("command", "endpoint"):
        return ("/health", "/v1/models")
    return ("/health",)


def wait_ready(
    base_url: str,
    *,
    timeout: float,
    api_key: str | None,
    proc: subprocess.Popen | None = None,
    log_path: Path | None = None,
    secrets: list[str] | None = None,
    paths: tuple[str, ...] = ("/health",),
) -> None:
    """Poll ``paths[0]`` until 200 (503 while loading); a path answering 404 (not served) hands over to the
    next one.  Raise ServerError when the process exits first (with the last log lines) or ``timeout``
    passes."""
    deadline = time.monotonic() + timeout
    interval = 0.1
    last = "no answer yet"
    active = list(paths)
    while True:
        if proc is not None and proc.poll() is not None:
            tail = log_tail(log_path, secrets=secrets) if log_path else []
            raise ServerError(
                f"server exited with code {proc.returncode} before becoming ready; last {len(tail)} log lines "
                f"of {log_path}:",
                details=tail,
            )
        path = active[0]
        status, _body, err = _http_get(base_url + path, api_key, timeout=5.0)
        if status == 200:
            return
        if status == 404 and len(active) > 1:
            active.pop(0)
            continue
        last = f"{path}: {err or f'HTTP {status}'}"
        if time.monotonic() >= deadline:
            tail = log_tail(log_path, secrets=secrets) if log_path else []
            where = f"; last {len(tail)} log lines of {log_path}:" if tail else ""
            raise ServerError(
                f"server at {base_url} not ready within {timeout:g} s (last {last}){where}",
                details=tail,
            )
        time.sleep(interval)
        interval = min(interval * 1.5, 2.0)


@contextlib.contextmanager
def managed_server(
    cfg: RunConfig,
    server: ServerConfig,
    rundir: RunDir,
    *,
    variant: str | None = None,
) -> Iterator[ServerHandle]:
    """Launch (or attach to) the server, verify it, yield a handle, and always stop what was launched."""
    rundir.server_dir.mkdir(parents=True, exist_ok=True)
    key = flags.api_key(server)
    secrets = [key] if key else []
    with _SigtermGuard() as guard:
        if server.kind == "endpoint":
            base_url = _endpoint_base(str(server.endpoint))
            launch = LaunchRecord(
                kind="endpoint",
                variant=variant,
                base_url=base_url,
                started_at=utc_now(),
                stop_method="attached",
            )
            write_model(rundir.server_launch, launch)
            wait_ready(base_url, timeout=server.launch_timeout_s, api_key=key, paths=ready_paths(server))
            launch.ready_at = utc_now()
            write_model(rundir.server_launch, launch)
            handle = ServerHandle(base_url=base_url, launch=launch, server=server, api_key=key)
            handle.verification = _inspect(cfg, server, rundir, base_url, key, variant)
            yield handle
            return

        if server.port == 0:
            server = server.model_copy(update={"port": free_port(server.host)})
        env = server_env(server)
        version = probe_sglang(env, packages=("sglang",)).version if server.kind == "sglang" else None
        argv = flags.build_argv(cfg, server, sglang_version=version)
        host = server.host if server.host not in ("0.0.0.0", "::") else "127.0.0.1"
        base_url = f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"
        launch = LaunchRecord(
            kind=server.kind,
            variant=variant,
            argv=redact_argv(argv, secrets),
            env=relevant_env(env, server, secrets),
            base_url=base_url,
            started_at=utc_now(),
        )
        with open(rundir.server_log, "ab") as logfh:
            logfh.write(f"=== evalpipe: launching at {launch.started_at}\n".encode())
            logfh.flush()
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logfh,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        launch.pid = proc.pid
        try:
            write_model(rundir.server_launch, launch)
            wait_ready(
                base_url,
                timeout=server.launch_timeout_s,
                api_key=key,
                proc=proc,
                log_path=rundir.server_log,
                secrets=secrets,
                paths=ready_paths(server),
            )
            launch.ready_at = utc_now()
            write_model(rundir.server_launch, launch)
            handle = ServerHandle(base_url=base_url, launch=launch, server=server, process=proc, api_key=key)
            handle.verification = _inspect(cfg, server, rundir, base_url, key, variant)
            yield handle
        finally:
            guard.begin_cleanup()
            launch.stop_method = stop_process_group(proc, server.stop_timeout_s, guard.hurry)
            launch.stopped_at = utc_now()
            launch.exit_code = proc.returncode
            write_model(rundir.server_launch, launch)


def _inspect(
    cfg: RunConfig, server: ServerConfig, rundir: RunDir, base_url: str, key: str | None, variant: str | None
) -> ServerVerification:
    """Save redacted /server_info and /model_info, verify, and abort (or warn) on a mismatch.

    A server without ``/server_info`` (llama.cpp, vLLM, a router) is not a mismatch: its resolved config
    is recorded as unverifiable (a warn finding in the audit) and its served name is checked against
    ``/v1/models``.  Only SGLang, which always serves ``/server_info``, is held to it.
    """
    secrets = [key] if key else []
    info, info_err = _get_json(base_url, ("/server_info", "/get_server_info"), key)
    if info is not None:
        atomic_write_json(rundir.server_info, redact(info, secrets))
    model_info, _ = _get_json(base_url, ("/model_info", "/get_model_info"), key)
    if model_info is not None:
        atomic_write_json(rundir.model_info, redact(model_info, secrets))
    models, _ = _get_json(base_url, ("/v1/models",), key)
    served_models = _model_ids(models) if models is not None else None
    safe_info = redact(info, secrets) if info is not None else None
    verification = verify(
        cfg,
        server,
        safe_info,
        base_url=base_url,
        variant=variant,
        info_error=info_err,
        served_models=served_models,
    )
    write_model(rundir.server_verification, verification)
    if not verification.verified:
        problems = mismatches(verification)
        if info is None and server.kind == "sglang":
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


def _model_ids(payload: dict) -> list[str]:
    """Model ids of an OpenAI ``/v1/models`` answer (``data[].id``, plus llama.cpp's ``aliases``)."""
    ids: list[str] = []
    for item in payload.get("data") or []:
        if isinstance(item, dict):
            for name in [item.get("id"), *(item.get("aliases") or [])]:
                if isinstance(name, str) and name not in ids:
                    ids.append(name)
    return ids
