"""An installed package adds a benchmark without editing evalpipe: its ``evalpipe.benchmarks`` entry point
(laid out as pip installs it — a ``.dist-info`` folder with ``entry_points.txt`` beside the module on the
path) registers the module after the built-ins, in every process that imports evalpipe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.dist_info import install_dist_info, run_python

DUMMY = Path(__file__).resolve().parents[1] / "fixtures" / "contract_dummy"


def _installed(site: Path, entry: str) -> dict[str, str]:
    """The contract dummy benchmark in ``site`` as an installed distribution declaring ``entry``."""
    shutil.copytree(DUMMY, site)
    return install_dist_info(site, "contract-dummy-plugin", "evalpipe.benchmarks", entry)


def test_an_installed_entry_point_registers_its_benchmark_after_the_built_ins(tmp_path: Path) -> None:
    env = _installed(tmp_path / "site", "contract_dummy = contract_dummy")
    done = run_python(
        env,
        "from evalpipe.benchmarks import REGISTRY, _MODULES, benchmark, described\n"
        "from evalpipe.config.models import RunConfig\n"
        "from evalpipe.resolve import resolve\n"
        "names = tuple(REGISTRY)\n"
        "builtins = (*_MODULES, *(b.meta.name for b in described.builtin()))\n"
        "assert names[: len(builtins)] == builtins and names[len(builtins):] == ('contract_dummy',), names\n"
        "print(benchmark('contract_dummy').meta.name)\n"
        "cfg = RunConfig.model_validate({'name': 't', 'model': {'path': '/m', 'served_name': 'm'},\n"
        "    'server': {'kind': 'endpoint', 'endpoint': 'http://127.0.0.1:1'},\n"
        "    'benchmarks': [{'name': 'contract_dummy', 'sampling': {'total': 1, 'allocation': 'uniform'}}]})\n"
        "print(resolve(cfg).benchmark('contract_dummy').meta.name)\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["contract_dummy", "contract_dummy"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("contract_dummy = contract_dummy:BENCHMARK", "the value must be the module declaring BENCHMARK"),
        ("other_name = contract_dummy", "the value must be the module declaring BENCHMARK"),
        (
            "contract_dummy = not_there.contract_dummy",
            "benchmark module 'not_there.contract_dummy' not found",
        ),
    ],
)
def test_a_malformed_entry_point_is_one_line_naming_it(tmp_path: Path, entry: str, message: str) -> None:
    env = _installed(tmp_path / "site", entry)
    done = run_python(env, "from evalpipe.benchmarks import names; names()")  # built on the first lookup
    assert done.returncode != 0
    assert "entry point evalpipe.benchmarks:" in done.stderr and "contract-dummy-plugin" in done.stderr
    assert message in done.stderr
