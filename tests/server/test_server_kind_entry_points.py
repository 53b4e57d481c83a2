"""An installed package adds a server kind without editing evalpipe: its ``evalpipe.server_kinds`` entry point
(a ``.dist-info`` with ``entry_points.txt`` on the path, as pip installs it) names a module declaring ``KIND``;
the config's ``server.kind`` accepts the name and the registry hands the pipeline that kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.dist_info import install_dist_info, run_python

PLUGIN = '''
from typing import ClassVar

from evalpipe.server.kinds.command import CommandKind


class ContainerKind(CommandKind):
    """A kind of its own: the command kind's launch, under another name (what a site's wrapper would be)."""

    name: ClassVar[str] = "{name}"


KIND = ContainerKind()
'''


def _installed(site: Path, entry: str, name: str = "container") -> dict[str, str]:
    site.mkdir()
    (site / "container_kind.py").write_text(PLUGIN.format(name=name), encoding="utf-8")
    return install_dist_info(site, "container-kind", "evalpipe.server_kinds", entry)


def test_an_installed_kind_is_registered_and_the_config_accepts_it(tmp_path: Path) -> None:
    env = _installed(tmp_path / "site", "container = container_kind")
    done = run_python(
        env,
        "from evalpipe.server.kinds.registry import kinds\n"
        "from evalpipe.config.models import RunConfig\n"
        "from evalpipe.errors import ConfigError\n"
        "from evalpipe.resolve import resolve\n"
        "names = [k.name for k in kinds()]\n"
        "assert names == ['sglang', 'answer_key', 'endpoint', 'replay', 'command', 'router', 'container'], names\n"
        "base = {'name': 't', 'model': {'path': '/m', 'served_name': 'm'},\n"
        "        'benchmarks': [{'name': 'gsm8k', 'sampling': {'total': 3, 'allocation': 'uniform'}}]}\n"
        "server = {'kind': 'container', 'command': ['srv', '--port', '{port}']}\n"
        "resolved = resolve(RunConfig.model_validate({**base, 'server': server}))\n"
        "print(resolved.config.server.kind, type(resolved.kind).__name__)\n"
        "try:\n"
        "    resolve(RunConfig.model_validate({**base, 'server': {'kind': 'container'}}))\n"
        "except ConfigError as exc:\n"
        "    print('refused:', 'command' in str(exc))\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["container ContainerKind", "refused: True"]  # its own config check


@pytest.mark.parametrize(
    ("entry", "name", "message"),
    [
        ("command = container_kind", "command", "'command' is a built-in server kind"),
        ("container = container_kind:KIND", "container", "the value must be the module declaring KIND"),
        ("container = container_kind", "other", "it must declare KIND, a Kind named 'container'"),
        ("container = not_there.kind", "container", "module 'not_there.kind' not found"),
    ],
)
def test_a_malformed_kind_entry_point_is_one_line_naming_it(
    tmp_path: Path, entry: str, name: str, message: str
) -> None:
    env = _installed(tmp_path / "site", entry, name)
    done = run_python(env, "from evalpipe.server.kinds.registry import kinds; kinds()")  # built on first use
    assert done.returncode != 0
    assert "entry point evalpipe.server_kinds:" in done.stderr and "container-kind" in done.stderr
    assert message in done.stderr
