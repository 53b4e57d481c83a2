"""Talk to a router and, past it, to each of its workers.

``RouterClient(url).members()`` answers "which servers will actually answer my requests": the router's
``/workers`` listing, entries of one data-parallel server (``URL@rank``) folded into one member, each URL
rewritten where the router knows a worker under an address the evaluation host cannot reach (a cluster-
internal name, a container IP).  ``worker_server_info`` then asks each member itself — the router's own
``/server_info`` is 404 and its ``/get_server_info`` a stub — so that every worker can be verified the way
a single server is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from evalpipe.artifacts.schema.fleet import WorkerRequestCount
from evalpipe.server import fetch
from evalpipe.server.kinds.router.errors import NoHealthyWorkers, NotARouter, RouterUnreachable
from evalpipe.server.kinds.router.sglang_router import (
    READINESS_PATH,
    WORKER_PATH,
    WORKERS_PATH,
    ListedWorker,
    parse_workers,
    retries_total,
    split_rank,
    worker_outcomes,
)


def router_base(url: str) -> str:
    """``http://h:30000/v1/`` → ``http://h:30000`` (an endpoint URL names the router it points at)."""
    base = url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _origin(url: str, what: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise ValueError(f"{what} {url!r}: expected scheme://host:port with no path")
    return f"{parts.scheme}://{parts.netloc}"


class UrlRewrites:
    """Listed worker origin → origin evalpipe uses instead (``{"http://10.0.0.7:30000":
    "http://localhost:31000"}``: an SSH tunnel or port-forward to a worker the router reaches by its
    cluster address).  Keys and values are ``scheme://host:port``; ValueError names a bad entry."""

    def __init__(self, mapping: Mapping[str, str] | None = None) -> None:
        self.mapping = {
            _origin(k, "url rewrite key"): _origin(v, f"url rewrite for {k!r}")
            for k, v in (mapping or {}).items()
        }

    def apply(self, url: str) -> str:
        """``url`` with its origin replaced when the map names it (path kept); unchanged otherwise."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.mapping:
            return url.rstrip("/")
        return self.mapping[origin] + url.rstrip("/")[len(origin) :]


@dataclass(frozen=True)
class FleetMember:
    """One worker server: every ``/workers`` entry with the same base URL."""

    url: str
    query_url: str
    router_ids: tuple[str, ...]
    dp_ranks: tuple[int, ...]
    model_id: str | None
    healthy: bool


def fold_workers(entries: list[ListedWorker], rewrites: UrlRewrites | None = None) -> list[FleetMember]:
    """Fold ``URL@rank`` entries into one member per base URL (in the router's order of first listing)."""
    rewrites = rewrites or UrlRewrites()
    by_url: dict[str, list[ListedWorker]] = {}
    for entry in entries:
        by_url.setdefault(entry.base_url, []).append(entry)
    out: list[FleetMember] = []
    for url, group in by_url.items():
        models = {e.model_id for e in group if e.model_id is not None}
        out.append(
            FleetMember(
                url=url,
                query_url=rewrites.apply(url),
                router_ids=tuple(e.id for e in group),
                dp_ranks=tuple(sorted(e.dp_rank for e in group if e.dp_rank is not None)),
                model_id=models.pop() if len(models) == 1 else None,
                healthy=all(e.healthy for e in group),
            )
        )
    return out


@dataclass(frozen=True)
class Readiness:
    ready: bool
    healthy_workers: int | None
    total_workers: int | None
    detail: str


class RouterClient:
    """A router at ``url`` (its base URL, or the ``…/v1`` endpoint URL a config names)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        rewrites: Mapping[str, str] | None = None,
        metrics_url: str | None = None,
    ) -> None:
        self.url = router_base(url)
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.rewrites = UrlRewrites(rewrites)
        self.metrics_url = metrics_url

    def listed_workers(self) -> list[ListedWorker]:
        """The router's ``/workers`` entries.  NotARouter / RouterUnreachable with one line each."""
        res = fetch.get(self.url + WORKERS_PATH, timeout=self.timeout_s, api_key=self.api_key)
        if res.status is None:
            raise RouterUnreachable(f"router {self.url}: no answer on {WORKERS_PATH} ({res.error})")
        payload: Any = None
        if res.ok:
            try:
                payload = res.json()
            except ValueError:
                payload = None
        entries = parse_workers(payload) if res.ok else None
        if entries is None:
            raise NotARouter(
                f"{self.url} is not a router: GET {WORKERS_PATH} answered {res.describe()} "
                "(sglang-router lists its workers there; server.router says a router is expected)"
            )
        return entries

    def is_router(self) -> bool:
        """True when ``/workers`` is a router's listing; False for any other HTTP server (or none)."""
        try:
            self.listed_workers()
        except (NotARouter, RouterUnreachable):
            return False
        return True

    def members(self) -> list[FleetMember]:
        """Every worker server the router lists (healthy or not), ``URL@rank`` folded, URLs rewritten."""
        return fold_workers(self.listed_workers(), self.rewrites)

    def healthy_members(self) -> list[FleetMember]:
        """``members()`` that are healthy; NoHealthyWorkers (one line) when there is none."""
        members = self.members()
        healthy = [m for m in members if m.healthy]
        if not healthy:
            ready = self.readiness()
            raise NoHealthyWorkers(
                f"router {self.url} lists no healthy worker ({len(members)} listed; /readiness: {ready.detail})"
            )
        return healthy

    def readiness(self) -> Readiness:
        res = fetch.get(self.url + READINESS_PATH, timeout=self.timeout_s, api_key=self.api_key)
        if res.status is None:
            return Readiness(False, None, None, res.error or "no answer")
        try:
            body = res.json()
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        healthy, total = body.get("healthy_workers"), body.get("total_workers")
        detail = str(body.get("reason") or body.get("status") or res.describe())
        return Readiness(
            res.ok,
            healthy if isinstance(healthy, int) else None,
            total if isinstance(total, int) else None,
            detail,
        )

    def worker_server_info(self, member: FleetMember) -> tuple[dict[str, Any] | None, str | None]:
        """``(payload, None)`` from the worker's own ``/server_info``, or ``(None, why not)``."""
        res = fetch.get(member.query_url + "/server_info", timeout=self.timeout_s, api_key=self.api_key)
        if not res.ok:
            return None, f"{member.query_url}/server_info: {res.describe()}"
        try:
            payload = res.json()
        except ValueError:
            return None, f"{member.query_url}/server_info: not JSON"
        if not isinstance(payload, dict):
            return None, f"{member.query_url}/server_info: not a JSON object"
        return payload, None

    def remove_worker(self, router_id: str) -> str | None:
        """Take one listed entry out of the router's rotation (``DELETE /workers/{id}``); None when the
        router accepted it (202), else what it answered."""
        url = self.url + WORKER_PATH.format(id=router_id)
        return _accepted(fetch.request("DELETE", url, timeout=self.timeout_s, api_key=self.api_key))

    def add_worker(self, url: str) -> str | None:
        """Put a worker (back) into the router's rotation (``POST /workers``); None when accepted."""
        res = fetch.post_json(
            self.url + WORKERS_PATH, {"url": url}, timeout=self.timeout_s, api_key=self.api_key
        )
        return _accepted(res)

    def prometheus_text(self) -> str | None:
        """The router's Prometheus text (None without a metrics URL or when it does not answer)."""
        if self.metrics_url is None:
            return None
        res = fetch.get(self.metrics_url, timeout=self.timeout_s)
        return res.body.decode("utf-8", errors="replace") if res.ok else None

    def request_counts(self) -> tuple[list[WorkerRequestCount], int] | None:
        """Requests the router sent each worker so far (``URL@rank`` folded) and its retries; None when
        the router's Prometheus endpoint is not known or not answering."""
        text = self.prometheus_text()
        if text is None:
            return None
        return fold_request_counts(text), retries_total(text)


def _accepted(res: fetch.HttpResult) -> str | None:
    """None for a 2xx answer (the router queues worker changes: 202), else the answer described."""
    return None if res.status is not None and 200 <= res.status < 300 else res.describe()


def fold_request_counts(prometheus_text: str) -> list[WorkerRequestCount]:
    """Per worker base URL success/failure counts from the router's Prometheus text."""
    folded: dict[str, WorkerRequestCount] = {}
    for o in worker_outcomes(prometheus_text):
        base, _rank = split_rank(o.worker)
        row = folded.setdefault(base, WorkerRequestCount(url=base))
        row.success += o.success
        row.failure += o.failure
    return [folded[k] for k in sorted(folded)]


def request_count_delta(
    before: list[WorkerRequestCount], after: list[WorkerRequestCount]
) -> list[WorkerRequestCount]:
    """``after - before`` per worker (a worker missing before counts from zero)."""
    prior = {r.url: r for r in before}
    out = []
    for r in after:
        b = prior.get(r.url, WorkerRequestCount(url=r.url))
        out.append(
            WorkerRequestCount(url=r.url, success=r.success - b.success, failure=r.failure - b.failure)
        )
    return out
