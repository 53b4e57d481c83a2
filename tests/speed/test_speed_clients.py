"""The speed-client registry: every registered client is made the same way, and the config names one."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.config.models import SpeedConfig
from evalpipe.errors import ConfigError
from evalpipe.resolve import load_run
from evalpipe.speed.clients.base import ClientPlugin
from evalpipe.speed.clients.registry import BUILTIN_CLIENT_MODULES, clients, speed_client
from evalpipe.speed.run import make_client


@pytest.mark.parametrize("plugin", clients(), ids=lambda p: p.name)
def test_every_client_is_made_from_its_registration(plugin: ClientPlugin) -> None:
    name = plugin.name
    client = make_client(SpeedConfig(client=name), client_env={"PYTHONPATH": "/nowhere"})
    assert client.name == name and client.program and client.percentile_method
    assert speed_client(name) is plugin


def test_the_builtins_are_registered_in_order_and_a_stranger_is_named() -> None:
    assert tuple(p.name for p in clients())[: len(BUILTIN_CLIENT_MODULES)] == tuple(BUILTIN_CLIENT_MODULES)
    with pytest.raises(KeyError, match="no speed client named 'nope' \\(registered: sglang, evalscope"):
        speed_client("nope")


def test_an_unregistered_client_is_refused_on_its_yaml_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: t\nmodel: {path: /m, served_name: m}\nserver: {kind: endpoint, endpoint: 'http://h:1'}\n"
        "benchmarks:\n  - name: gsm8k\n    sampling: {stratify_by: none, total: 5, allocation: uniform}\n"
        "speed:\n  client: vegeta\n  tokenizer: /t\n"
    )
    with pytest.raises(ConfigError) as exc:
        load_run(path, check_sampling=False)
    assert exc.value.details == [f"{path}:8: speed.client: must be one of 'sglang' or 'evalscope' (got 'vegeta')"]
