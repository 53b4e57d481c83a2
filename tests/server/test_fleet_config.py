"""The fleet's settings: ``server.kind: router`` with ``server.router``, worker entries, ``parallel_variants``.

Every refusal is one line naming the field (and the YAML line); the shipped fleet config validates and its
router command is printed without launching anything.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_sglang.support import server_config as write_config

from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError
from evalpipe.resolve import resolve
from evalpipe.run.parallel_variants import check_disjoint
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.router import worker_launch_server

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ["{python}", "-m", "evalpipe.engines.llamacpp", "--model", "smollm2", "--port", "{port}",
         "--kv-cache-dtype", "{kv_cache_dtype}"]  # fmt: skip


def _router(tmp_path: Path, router: dict[str, Any], **server: Any) -> Any:
    return write_config(tmp_path, {"kind": "router", "command": LLAMA, "kv_cache_dtype": "f16", "router": router,
                                   **server})  # fmt: skip


def _refused(tmp_path: Path, router: dict[str, Any], **server: Any) -> str:
    with pytest.raises(ConfigError) as exc:
        _router(tmp_path, router, **server)
    return str(exc.value)


def test_launched_and_running_workers(tmp_path: Path) -> None:
    cfg = _router(
        tmp_path,
        {
            "workers": [
                {"kind": "command", "port": 31001, "env": {"OMP_NUM_THREADS": "1"}},
                {"kind": "command", "overrides": {"kv_cache_dtype": "q4_0"}},
                {"url": "http://gpu-node-b:30000/"},
            ]
        },
        port=31000,
    )
    server = cfg.server
    first = worker_launch_server(server, server.router.workers[0], 0, server_kind)
    assert (first.kind, first.port, first.env["OMP_NUM_THREADS"], first.router) == (
        "command",
        31001,
        "1",
        None,
    )
    second = worker_launch_server(server, server.router.workers[1], 1, server_kind)
    assert second.kv_cache_dtype == "q4_0" and server.kv_cache_dtype == "f16"  # launch only: verified as f16
    argv = server_kind("router").argv(cfg, server, python="python3")
    assert argv[:3] == ["python3", "-m", "sglang_router.launch_router"]
    urls = argv[argv.index("--worker-urls") + 1 : argv.index("--policy")]
    assert urls == ["http://127.0.0.1:31001", "http://127.0.0.1:0", "http://gpu-node-b:30000"]
    assert "--disable-retries" in argv and argv[argv.index("--health-check-interval-secs") + 1] == "10"
    assert argv[argv.index("--prometheus-host") + 1] == "127.0.0.1"  # never the router's 0.0.0.0 default


@pytest.mark.parametrize(
    ("router", "server", "message"),
    [
        ({"workers": []}, {}, "router.workers: at least one worker is required when kind is 'router'"),
        ({"workers": [{}]}, {}, "give exactly one of url (a running worker) and kind"),
        ({"workers": [{"url": "http://a:1", "kind": "command"}]}, {}, "give exactly one of url"),
        ({"workers": [{"url": "http://a:1", "port": 3}]}, {}, "apply to launched workers (kind), not to url"),
        ({"workers": [{"url": "a:1"}]}, {}, "workers[0].url 'a:1': expected http(s)://host:port with no path"),
        ({"workers": [{"url": "http://a:1/v1"}]}, {}, "expected http(s)://host:port with no path"),
        ({"workers": [{"url": "http://a:1"}, {"url": "http://a:1/"}]}, {}, "worker listed more than once: http://a:1"),
        ({"workers": [{"kind": "endpoint"}]}, {}, "router.workers[0].kind: 'endpoint' cannot be launched as a worker"),
        ({"workers": [{"kind": "router"}]}, {}, "router.workers[0].kind: 'router' cannot be launched as a worker"),
        ({"workers": [{"kind": "command", "overrides": {"kv_dtype": "x"}}]}, {},
         "router.workers[0].overrides.kv_dtype: unknown server field 'kv_dtype'"),
        ({"workers": [{"kind": "command", "port": 31000}]}, {"port": 31000},
         "router.workers[0].port 31000: also port (the router's)"),
        ({"workers": [{"kind": "command", "port": 31002}, {"kind": "command", "port": 31002}]}, {},
         "router.workers[1].port 31002: also router.workers[0].port"),
        ({"workers": [{"url": "http://a:1"}], "prometheus_port": 31000}, {"port": 31000},
         "router.prometheus_port 31000: also the router's port"),
        ({"workers": [{"url": "http://a:1"}], "metrics_url": "http://r:29000/metrics"}, {},
         "router.metrics_url is for an attached router"),
        ({"workers": [{"url": "http://a:1"}], "url_rewrites": {"http://a:1": "localhost:2"}}, {},
         "url rewrite value 'localhost:2': expected scheme://host:port with no path"),
        ({"workers": [{"url": "http://a:1"}], "policy": "fastest"}, {}, "router.policy"),
    ],
)  # fmt: skip
def test_bad_router_settings_are_one_line_naming_the_field(
    tmp_path: Path, router: dict[str, Any], server: dict[str, Any], message: str
) -> None:
    text = _refused(tmp_path, router, **server)
    assert message in text and "run.yaml:" in text and "server" in text


def test_a_command_worker_needs_the_top_level_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"router.workers\[0\].*command .*required when kind is 'command'"):
        write_config(tmp_path, {"kind": "router", "router": {"workers": [{"kind": "command"}]}})


def test_parallel_variants_need_two_variants(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="parallel_variants needs at least two variants"):
        write_config(tmp_path, {"kind": "answer_key"}, parallel_variants=True)


def _variants(tmp_path: Path, a: dict[str, Any], b: dict[str, Any], server: dict[str, Any]) -> Any:
    return write_config(
        tmp_path,
        server,
        parallel_variants=True,
        variants=[{"name": "a", "overrides": a}, {"name": "b", "overrides": b}],
    )


@pytest.mark.parametrize(
    ("a", "b", "shared"),
    [
        # the same running worker behind both routers
        ({"router": {"workers": [{"url": "http://w:1"}]}}, {"router": {"workers": [{"url": "http://w:1"}]}},
         "url http://w:1"),
        # two SGLang workers on one host without CUDA_VISIBLE_DEVICES: each may use every GPU
        ({"router": {"workers": [{"kind": "sglang", "port": 31001}]}},
         {"router": {"workers": [{"kind": "sglang", "port": 31002}]}}, "gpu 127.0.0.1:all"),
        # overlapping GPU sets
        ({"router": {"workers": [{"kind": "sglang", "port": 31001, "env": {"CUDA_VISIBLE_DEVICES": "0,1"}}]}},
         {"router": {"workers": [{"kind": "sglang", "port": 31002, "env": {"CUDA_VISIBLE_DEVICES": "1,2"}}]}},
         "gpu 127.0.0.1:1"),
        # one router port for both
        ({"port": 31000, "router": {"workers": [{"url": "http://w:1"}]}},
         {"port": 31000, "router": {"workers": [{"url": "http://w:2"}]}}, "url http://127.0.0.1:31000"),
    ],
)  # fmt: skip
def test_parallel_variants_refused_when_they_would_share(
    tmp_path: Path, a: dict[str, Any], b: dict[str, Any], shared: str
) -> None:
    cfg = _variants(tmp_path, a, b, {"kind": "router", "router": {"workers": [{"url": "http://x:9"}]}})
    resolved = resolve(cfg)
    with pytest.raises(ConfigError) as exc:
        check_disjoint(resolved)
    assert str(exc.value).startswith(f"parallel_variants: variants a and b would share {shared}")


def test_parallel_variants_on_disjoint_servers(tmp_path: Path) -> None:
    cfg = _variants(
        tmp_path,
        {
            "router": {
                "workers": [{"kind": "sglang", "port": 31001, "env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}}]
            }
        },
        {
            "router": {
                "workers": [{"kind": "sglang", "port": 31002, "env": {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}}]
            }
        },
        {"kind": "router", "port": 0, "router": {"workers": [{"url": "http://x:9"}]}},
    )
    check_disjoint(resolve(cfg))  # nothing shared: port 0 routers get free ports, GPUs 0-3 vs 4-7


def test_the_fleet_config_validates_and_prints_its_router_command() -> None:
    path = ROOT / "configs" / "glm-fp8-fleet.yaml"
    cfg = load_config(path)
    assert cfg.server.kind == "router" and cfg.server.router is not None
    assert [w.url for w in cfg.server.router.workers] == [
        "http://gpu-node-a:30000",
        "http://gpu-node-b:30000",
    ]
    glm = load_config(ROOT / "configs" / "glm-fp8.yaml")
    assert cfg.server.kv_cache_dtype == glm.server.kv_cache_dtype
    assert cfg.server.settings == glm.server.settings  # every worker: glm-fp8's server
    for cmd in (["config", "validate", str(path)], ["server", "command", str(path)]):
        out = subprocess.run(
            [sys.executable, "-m", "evalpipe.cli.entry", *cmd], capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
    assert "sglang_router.launch_router" in out.stdout and "http://gpu-node-b:30000" in out.stdout
