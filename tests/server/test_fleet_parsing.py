"""What evalpipe reads from sglang-router: /workers listings, Prometheus counters, its command line, URL
rewrites and the X-Request-Id — on payloads captured from sglang-router 0.3.2 (no router needed here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalpipe.artifacts.schema.fleet import WorkerRequestCount
from evalpipe.recording.request_id import attempt_id_of, x_request_id
from evalpipe.server.kinds.router.client import (
    UrlRewrites,
    fold_request_counts,
    fold_workers,
    request_count_delta,
    router_base,
)
from evalpipe.server.kinds.router.sglang_router import (
    RouterLaunchSpec,
    parse_prometheus,
    parse_workers,
    retries_total,
    router_argv,
    split_rank,
    worker_outcomes,
)

# GET /workers of sglang-router 0.3.2 with --dp-aware: one SGLang server with dp_size 2, one with 1
WORKERS_DP = {
    "workers": [
        {"id": "097cb69a-c0aa-414d-9ff3-2076104a9890", "url": "http://127.0.0.1:35929@1",
         "model_id": "GLM-5.3-Flash-FP8", "priority": 50, "cost": 1.0, "worker_type": "regular",
         "is_healthy": True, "load": 0, "connection_mode": "HTTP",
         "metadata": {"tp_size": "8", "dp_size": "2", "served_model_name": "GLM-5.3-Flash-FP8",
                      "disaggregation_mode": "null", "load_balance_method": "auto",
                      "model_path": "/models/GLM-5.3-Flash-FP8"},
         "disable_health_check": False},
        {"id": "8feb420c-d8d0-4d27-8481-04f6615a38c4", "url": "http://127.0.0.1:37985@0",
         "model_id": "GLM-5.3-Flash-FP8", "priority": 50, "cost": 1.0, "worker_type": "regular",
         "is_healthy": True, "load": 0, "connection_mode": "HTTP", "metadata": {"dp_size": "1"},
         "disable_health_check": False},
        {"id": "c099d99e-2889-4ee5-b2f6-437afdfc511d", "url": "http://127.0.0.1:35929@0",
         "model_id": "GLM-5.3-Flash-FP8", "priority": 50, "cost": 1.0, "worker_type": "regular",
         "is_healthy": False, "load": 0, "connection_mode": "HTTP", "metadata": {"dp_size": "2"},
         "disable_health_check": False},
    ],
    "total": 3,
    "stats": {"prefill_count": 0, "decode_count": 0, "regular_count": 3},
}  # fmt: skip

PROMETHEUS = """\
# TYPE smg_worker_cb_outcomes_total counter
smg_worker_cb_outcomes_total{worker="http://127.0.0.1:35929@1",outcome="success"} 2
smg_worker_cb_outcomes_total{worker="http://127.0.0.1:35929@0",outcome="success"} 1
smg_worker_cb_outcomes_total{worker="http://127.0.0.1:35929@0",outcome="failure"} 3
smg_worker_cb_outcomes_total{worker="http://127.0.0.1:37985@0",outcome="success"} 1
# TYPE smg_worker_retries_total counter
smg_worker_retries_total{worker_type="regular",endpoint="chat"} 3
smg_worker_retries_total{worker_type="regular",endpoint="generate"} 1
smg_worker_health{worker="http://127.0.0.1:37985@0"} 1
smg_http_requests_total{method="GET",path="/a \\"quoted\\" \\\\ path"} 7
not a sample line at all
"""


def test_workers_listing_parses_and_folds_dp_ranks() -> None:
    entries = parse_workers(WORKERS_DP)
    assert entries is not None and entries[0].url == "http://127.0.0.1:35929@1"
    assert {(e.base_url, e.dp_rank) for e in entries} == {
        ("http://127.0.0.1:35929", 1),
        ("http://127.0.0.1:37985", 0),
        ("http://127.0.0.1:35929", 0),
    }
    assert entries[0].metadata["tp_size"] == "8"  # the router reports metadata values as strings
    members = fold_workers(entries)
    assert [(m.url, m.dp_ranks, m.healthy) for m in members] == [
        ("http://127.0.0.1:35929", (0, 1), False),  # one rank unhealthy: the worker is not healthy
        ("http://127.0.0.1:37985", (0,), True),
    ]
    assert members[0].router_ids == (
        "097cb69a-c0aa-414d-9ff3-2076104a9890",
        "c099d99e-2889-4ee5-b2f6-437afdfc511d",
    )
    assert members[0].model_id == "GLM-5.3-Flash-FP8"


@pytest.mark.parametrize(
    "payload",
    [
        {
            "error": {"message": "File Not Found", "type": "not_found_error", "code": 404}
        },  # llama.cpp launcher
        {"workers": "none"},
        {"workers": [{"id": "x"}]},
        [1, 2],
        None,
    ],
)
def test_payloads_that_are_not_a_router_listing(payload: object) -> None:
    assert parse_workers(payload) is None


def test_empty_listing_is_still_a_router() -> None:
    assert parse_workers({"workers": [], "total": 0, "stats": {}}) == []


def test_split_rank_and_router_base() -> None:
    assert split_rank("http://h:8000@12") == ("http://h:8000", 12)
    assert split_rank("http://h:8000/") == ("http://h:8000", None)
    assert split_rank("http://[::1]:8000@0") == ("http://[::1]:8000", 0)
    assert router_base("http://h:30000/v1/") == "http://h:30000"
    assert router_base("http://h:30000") == "http://h:30000"


def test_prometheus_counters_per_worker_and_retries() -> None:
    outcomes = worker_outcomes(PROMETHEUS)
    assert [(o.worker, o.success, o.failure) for o in outcomes] == [
        ("http://127.0.0.1:35929@0", 1, 3),
        ("http://127.0.0.1:35929@1", 2, 0),
        ("http://127.0.0.1:37985@0", 1, 0),
    ]
    assert fold_request_counts(PROMETHEUS) == [
        WorkerRequestCount(url="http://127.0.0.1:35929", success=3, failure=3),
        WorkerRequestCount(url="http://127.0.0.1:37985", success=1, failure=0),
    ]
    assert retries_total(PROMETHEUS) == 4
    (quoted,) = parse_prometheus(PROMETHEUS, frozenset({"smg_http_requests_total"}))
    assert quoted.labels == {"method": "GET", "path": '/a "quoted" \\ path'} and quoted.value == 7


def test_request_count_delta_counts_new_workers_from_zero() -> None:
    before = [WorkerRequestCount(url="http://a:1", success=5, failure=1)]
    after = [
        WorkerRequestCount(url="http://a:1", success=9, failure=1),
        WorkerRequestCount(url="http://b:2", success=2),
    ]
    assert request_count_delta(before, after) == [
        WorkerRequestCount(url="http://a:1", success=4, failure=0),
        WorkerRequestCount(url="http://b:2", success=2, failure=0),
    ]


def test_url_rewrites_replace_the_origin_only() -> None:
    rw = UrlRewrites({"http://10.0.0.7:30000": "http://127.0.0.1:31000/"})
    assert rw.apply("http://10.0.0.7:30000") == "http://127.0.0.1:31000"
    assert rw.apply("http://10.0.0.7:30000/prefix/") == "http://127.0.0.1:31000/prefix"
    assert rw.apply("http://10.0.0.8:30000") == "http://10.0.0.8:30000"
    with pytest.raises(ValueError, match="url rewrite key 'h:1': expected scheme://host:port"):
        UrlRewrites({"h:1": "http://x:1"})
    with pytest.raises(ValueError, match="url rewrite for 'http://a:1'"):
        UrlRewrites({"http://a:1": "http://x:1/v1"})


def test_router_argv_always_pins_the_metrics_port_and_disables_retries() -> None:
    spec = RouterLaunchSpec(
        worker_urls=("http://127.0.0.1:1", "http://127.0.0.1:2"), port=30000, prometheus_port=29001
    )
    argv = router_argv(spec, "/py")
    assert argv[:3] == ["/py", "-m", "sglang_router.launch_router"]
    joined = " ".join(argv)
    assert "--worker-urls http://127.0.0.1:1 http://127.0.0.1:2 --policy round_robin" in joined
    assert "--prometheus-host 127.0.0.1 --prometheus-port 29001" in joined
    assert "--host 127.0.0.1 --port 30000" in joined and "--request-timeout-secs 1800" in joined
    assert "--disable-retries" in argv and "--dp-aware" not in argv
    dp = router_argv(RouterLaunchSpec(worker_urls=(), port=1, prometheus_port=2, dp_aware=True,
                                      disable_retries=False, policy="cache_aware"), "/py")  # fmt: skip
    assert "--worker-urls" not in dp and "--dp-aware" in dp and "--disable-retries" not in dp
    with pytest.raises(ValueError, match="policy 'fastest'"):
        router_argv(RouterLaunchSpec(worker_urls=(), port=1, prometheus_port=2, policy="fastest"), "/py")  # type: ignore[arg-type]  # a bad value on purpose


def test_x_request_id_round_trips_the_attempt_id() -> None:
    value = x_request_id("1a2b3c4d-000017")
    assert value == "evalpipe-1a2b3c4d-000017"
    assert attempt_id_of(value) == "1a2b3c4d-000017"
    assert attempt_id_of("req-Ajv6HvVSLCmYuJKy8rn0lfL0") is None  # the router's own ids
    assert attempt_id_of("evalpipe-") is None
    for bad in ("", "a b", "x\r\nInjected: 1", "é"):
        with pytest.raises(ValueError, match="not usable in an X-Request-Id header"):
            x_request_id(bad)


def test_fleet_modules_import_without_sglang_router() -> None:
    """With sglang-router absent, every fleet module imports and launching fails with one line naming
    the extra to install."""
    code = (
        "import sys; sys.modules['sglang_router'] = None\n"
        "import evalpipe.server.kinds.router.launcher, evalpipe.server.kinds.router.probe\n"
        "import evalpipe.server.kinds.router.snapshot\n"
        "from evalpipe.server.kinds.router.launcher import require_router\n"
        "try:\n    require_router()\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "RouterNotInstalled launching a router needs sglang-router, which is not installed: "
        "pip install -e '.[router]' (or make test)"
    )
