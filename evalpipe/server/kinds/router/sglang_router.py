"""Everything evalpipe knows about SGLang's router (PyPI ``sglang-router``), in one place.

Measured against sglang-router 0.3.2 (``sgl-model-gateway 0.3.2``, rustc 1.92) with logging workers,
evalpipe's scripted server and its llama.cpp launcher.  When the router is upgraded, this module is the one to re-check:

- ``GET /workers`` lists ``{"workers": [{"id", "url", "model_id", "worker_type", "is_healthy", "load",
  "metadata": {...}}, ...], "total", "stats"}``; with ``--dp-aware`` one entry per data-parallel rank,
  its url suffixed ``@rank``.  A worker whose registration has not succeeded (unreachable, ``/health`` not
  200) is *not listed at all* — and ``/readiness`` still says ready when another worker is healthy.
- ``GET /readiness``: 200 ``{"status": "ready", "healthy_workers", "total_workers"}`` or 503.
- The router reports no version over HTTP (``/version`` 404); only the installed package knows it.
- Prometheus (``--prometheus-port``; default 0.0.0.0:29000 when not given!) keeps per-worker counters in
  ``smg_worker_cb_outcomes_total{worker=URL, outcome=success|failure}`` (counted with the circuit breaker
  disabled too) and the router's own retries in ``smg_worker_retries_total``.
- Chat requests are re-serialised: ``max_tokens`` is forwarded as ``max_completion_tokens``, floats as
  float32 (``0.30000000000000004`` → ``0.3``), ``rid`` / ``user`` / unknown fields are dropped and SGLang
  defaults added; a 5xx is retried on another worker (same ``X-Request-Id``) unless ``--disable-retries``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

#: pip extra (pyproject ``[project.optional-dependencies] router``) and the package it installs.
EXTRA = "router"
PACKAGE = "sglang-router"
MODULE = "sglang_router"
LAUNCH_MODULE = "sglang_router.launch_router"
INSTALL_HINT = f"pip install -e '.[{EXTRA}]' (or make test)"

Policy = Literal["random", "round_robin", "cache_aware", "power_of_two", "manual"]
POLICIES: tuple[Policy, ...] = ("random", "round_robin", "cache_aware", "power_of_two", "manual")
LogLevel = Literal["debug", "info", "warn", "error"]

WORKERS_PATH = "/workers"
#: ``DELETE /workers/{id}`` takes a worker out of the rotation, ``POST /workers {"url": …}`` adds one; both
#: answer 202 and act within a moment (the router's job queue).  Measured against 0.3.2.
WORKER_PATH = "/workers/{id}"
READINESS_PATH = "/readiness"
METRICS_PATH = "/metrics"  # on the Prometheus port, not the router's
#: Per-worker request outcomes (label ``worker`` = listed URL, ``outcome`` = success | failure).
WORKER_OUTCOMES_METRIC = "smg_worker_cb_outcomes_total"
#: Requests the router retried on another worker (labels: worker_type, endpoint).
RETRIES_METRIC = "smg_worker_retries_total"

#: The router as the audit's sentences name it.
ROUTER_NAME = "SGLang's router"
#: What per-worker accuracy through the router (0.3.2) can be: nothing can attribute it.
ATTRIBUTION = (
    "Accuracy per worker cannot be attributed through sglang-router: no response names the worker that "
    "produced it (the X-Request-Id each request carried reaches its worker, whose own log may name it); "
    "requests per worker come from the router's counters."
)
#: Why a router's version can be unknown (an attached router's, unless the config states it).
VERSION_NOT_REPORTED = "sglang-router reports none over HTTP (set server.router.version when attaching)"

_RANK = re.compile(r"^(?P<base>.+)@(?P<rank>\d+)$")


@dataclass(frozen=True)
class ListedWorker:
    """One entry of the router's ``/workers`` (one per data-parallel rank with ``--dp-aware``)."""

    id: str
    url: str
    base_url: str
    dp_rank: int | None
    model_id: str | None
    healthy: bool
    worker_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


def split_rank(url: str) -> tuple[str, int | None]:
    """``http://h:8000@1`` → ``("http://h:8000", 1)``; a URL without ``@rank`` is returned as is."""
    m = _RANK.match(url)
    if m is None:
        return url.rstrip("/"), None
    return m.group("base").rstrip("/"), int(m.group("rank"))


def parse_workers(payload: Any) -> list[ListedWorker] | None:
    """The entries of a ``/workers`` answer, or None when the payload is not a router's listing."""
    if not isinstance(payload, dict) or not isinstance(payload.get("workers"), list):
        return None
    out: list[ListedWorker] = []
    for entry in payload["workers"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            return None
        base, rank = split_rank(entry["url"])
        metadata = entry.get("metadata")
        model_id = entry.get("model_id")
        out.append(
            ListedWorker(
                id=str(entry.get("id", "")),
                url=entry["url"],
                base_url=base,
                dp_rank=rank,
                model_id=model_id if isinstance(model_id, str) else None,
                healthy=entry.get("is_healthy") is True,
                worker_type=entry.get("worker_type") if isinstance(entry.get("worker_type"), str) else None,
                metadata={str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else {},
            )
        )
    return out


@dataclass(frozen=True)
class Sample:
    """One sample line of Prometheus text exposition."""

    name: str
    labels: dict[str, str]
    value: float


_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$"
)
_LABEL = re.compile(r'\s*(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def parse_prometheus(text: str, names: frozenset[str] | None = None) -> list[Sample]:
    """Samples of the Prometheus text format (version 0.0.4), optionally only the metrics in ``names``.

    Format: https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format — one sample
    per line, ``name{label="value",…} value [timestamp]``, label values escaping ``\\``, ``"`` and newline.
    Lines that do not parse are skipped (a reader of counters must not fail on a metric it does not use).
    """
    out: list[Sample] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None or (names is not None and m.group("name") not in names):
            continue
        try:
            value = float(m.group("value"))
        except ValueError:
            continue
        labels: dict[str, str] = {}
        raw = m.group("labels") or ""
        pos = 0
        while pos < len(raw):
            lm = _LABEL.match(raw, pos)
            if lm is None or lm.end() == pos:
                break
            labels[lm.group("key")] = re.sub(r"\\[\\\"n]", lambda e: _UNESCAPE[e.group(0)], lm.group("value"))
            pos = lm.end()
        out.append(Sample(m.group("name"), labels, value))
    return out


@dataclass(frozen=True)
class WorkerOutcomes:
    """Requests the router sent one listed worker (``URL@rank`` kept), by outcome."""

    worker: str
    success: int
    failure: int


def worker_outcomes(text: str) -> list[WorkerOutcomes]:
    """Per listed worker request counts from the router's Prometheus text, sorted by worker URL."""
    counts: dict[str, dict[str, int]] = {}
    for s in parse_prometheus(text, frozenset({WORKER_OUTCOMES_METRIC})):
        worker = s.labels.get("worker")
        outcome = s.labels.get("outcome")
        if worker is None or outcome not in ("success", "failure"):
            continue
        counts.setdefault(worker, {"success": 0, "failure": 0})[outcome] += int(s.value)
    return [WorkerOutcomes(w, c["success"], c["failure"]) for w, c in sorted(counts.items())]


def retries_total(text: str) -> int:
    """Requests the router retried on another worker (sum over endpoints)."""
    return int(sum(s.value for s in parse_prometheus(text, frozenset({RETRIES_METRIC}))))


@dataclass(frozen=True)
class Forwarding:
    """How the router forwards one request field (seen at a logging worker behind it)."""

    how: str
    rewritten: bool


#: Per router version, how the chat-completions fields evalpipe relies on reach a worker.  Measured
#: against 0.3.2 by sending a request with each field through the router to a worker logging raw bodies.
FORWARDING: dict[str, dict[str, Forwarding]] = {
    "0.3.2": {
        "max_tokens": Forwarding("forwarded as max_completion_tokens", rewritten=True),
        "temperature": Forwarding("re-encoded as float32 (0 → 0.0, 1e-05 → 0.00001)", rewritten=True),
        "top_p": Forwarding("re-encoded as float32 (0.30000000000000004 → 0.3)", rewritten=True),
        "seed": Forwarding(
            "forwarded unchanged (a signed 64-bit integer; larger is refused)", rewritten=False
        ),
        "n": Forwarding("forwarded unchanged (1-10 accepted)", rewritten=False),
        "chat_template_kwargs": Forwarding("forwarded unchanged", rewritten=False),
    }
}


@dataclass(frozen=True)
class RouterLaunchSpec:
    """What a launched router is told (``python -m sglang_router.launch_router …``)."""

    worker_urls: tuple[str, ...]
    port: int
    prometheus_port: int
    host: str = "127.0.0.1"
    prometheus_host: str = "127.0.0.1"
    policy: Policy = "round_robin"
    dp_aware: bool = False
    #: The router retries a 5xx on another worker invisibly to evalpipe's request log; off by default so
    #: that every attempt evalpipe records is the one that produced the answer.
    disable_retries: bool = True
    #: The router's own per-request timeout (its default 1800 s cuts a 65k-token thinking answer).
    request_timeout_s: int = 1800
    #: Seconds between the router's health checks of each worker (its 60 s default lists a dead worker as
    #: healthy for 3 × 60 s); None: the router's default.
    health_check_interval_s: int | None = None
    log_level: LogLevel = "info"
    #: Key the router sends its workers (``--api-key``; an unresolved ``$ENV`` reference when printing).
    api_key: str | None = None
    extra_args: tuple[str, ...] = ()


def router_argv(spec: RouterLaunchSpec, python: str) -> list[str]:
    """The router's command line; ``--prometheus-host/--prometheus-port`` always set (its default binds
    0.0.0.0:29000, which two routers on one host would fight over)."""
    if spec.policy not in POLICIES:
        raise ValueError(f"policy {spec.policy!r}: not one of {', '.join(POLICIES)}")
    argv = [python, "-m", LAUNCH_MODULE, "--host", spec.host, "--port", str(spec.port)]
    if spec.worker_urls:
        argv += ["--worker-urls", *spec.worker_urls]
    argv += ["--policy", spec.policy]
    argv += ["--prometheus-host", spec.prometheus_host, "--prometheus-port", str(spec.prometheus_port)]
    argv += ["--request-timeout-secs", str(spec.request_timeout_s), "--log-level", spec.log_level]
    if spec.health_check_interval_s is not None:
        argv += ["--health-check-interval-secs", str(spec.health_check_interval_s)]
    if spec.api_key:
        argv += ["--api-key", spec.api_key]
    if spec.dp_aware:
        argv.append("--dp-aware")
    if spec.disable_retries:
        argv.append("--disable-retries")
    return argv + list(spec.extra_args)


def installed_version() -> str | None:
    """The installed sglang-router's version (package metadata), None when it is not installed."""

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None
