"""The resolve step (``evalpipe.resolve``): a plain-data config's plugin names looked up, every failure one
line naming the YAML file, line and field — the checks that left the config models when they became plain
data, each shown to still refuse what it refused (and to accept what it accepted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.benchmarks import REGISTRY
from evalpipe.cli.main import main
from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError
from evalpipe.resolve import ResolvedRun, load_run, one_of
from evalpipe.server.kinds.registry import server_kind

HEAD = """\
name: t
model: {path: /m, served_name: m}
server: {kind: endpoint, endpoint: "http://127.0.0.1:1"}
benchmarks:
"""


def _write(tmp_path: Path, benchmarks: str, head: str = HEAD) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(head + benchmarks)
    return path


def _refused(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        load_run(path)
    return exc.value.details


def test_a_good_config_resolves_to_its_plugins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n"
        "  - name: ceval\n    sampling: {stratify_by: subject, per_stratum: 1}\n",
    )
    resolved = load_run(path)
    assert isinstance(resolved, ResolvedRun)
    assert list(resolved.benchmarks) == ["gsm8k", "ceval"]
    assert resolved.benchmark("ceval") is REGISTRY["ceval"]
    assert resolved.kind is server_kind("endpoint")
    with pytest.raises(AttributeError):
        resolved.kind = server_kind("sglang")  # type: ignore[misc]  # frozen


def test_an_unregistered_benchmark_is_plain_data_until_resolved(tmp_path: Path) -> None:
    path = _write(tmp_path, "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n"
                            "  - name: gsm9k\n    sampling: {total: 3, allocation: uniform}\n")  # fmt: skip
    assert [b.name for b in load_config(path).benchmarks] == ["gsm8k", "gsm9k"]  # a recorded run still opens
    assert _refused(path) == [f"{path}:7: benchmarks[1].name: {one_of(tuple(REGISTRY), 'gsm9k')}"]
    last = tuple(REGISTRY)[-1]
    assert "'gsm8k'" in one_of(tuple(REGISTRY), "gsm9k") and f" or '{last}' (got 'gsm9k')" in one_of(
        tuple(REGISTRY), "gsm9k"
    )


def test_unknown_server_kind_and_router_worker_kind_name_their_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n",
                  head=HEAD.replace("kind: endpoint", "kind: sglangg"))  # fmt: skip
    (line,) = _refused(path)
    assert line.startswith(f"{path}:3: server.kind: must be one of 'sglang', ") and "(got 'sglangg')" in line
    head = HEAD.replace(
        'server: {kind: endpoint, endpoint: "http://127.0.0.1:1"}',
        "server:\n  kind: router\n  command: [x]\n  router:\n    workers:\n      - kind: commandd\n",
    )
    path = _write(tmp_path, "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n", head=head)
    (line,) = _refused(path)
    assert (
        line.startswith(f"{path}:8: server.router.workers[0].kind: must be one of ") and "'commandd'" in line
    )


def test_a_kinds_own_section_is_checked_on_the_server_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n",
                  head=HEAD.replace('kind: endpoint, endpoint: "http://127.0.0.1:1"', "kind: replay"))  # fmt: skip
    assert _refused(path) == [f"{path}:3: server: replay settings are required when kind is 'replay'"]


@pytest.mark.parametrize(
    ("bench", "message"),
    [
        ("  - name: gsm8k\n    review_timeout_s: 3\n    sampling: {total: 3, allocation: uniform}\n",
         "5: benchmarks[0]: review_timeout_s: gsm8k runs no code in its review (no per-test limit)"),
        ("  - name: gsm8k\n    source: {id_column: qid}\n    sampling: {total: 3, allocation: uniform}\n",
         "5: benchmarks[0]: source.id_column: gsm8k has a fixed schema; columns are named only for a benchmark "
         "that reads your own files (general_mcq, general_qa)"),
        ("  - name: general_qa\n    source: {local: q.jsonl, hub: me/q}\n    sampling: {total: 3, allocation: uniform}\n",
         "5: benchmarks[0]: source.hub: general_qa reads your own files; there is no hub copy"),
        ("  - name: general_qa\n    source: {local: q.jsonl}\n    sampling: {stratify_by: column, per_stratum: 1}\n",
         "5: benchmarks[0]: sampling.stratify_by is 'column' but source.stratify_column names no column"),
        ("  - name: gsm8k\n    sampling: {stratify_by: subjekt, per_stratum: 1}\n",
         "6: benchmarks[0].sampling.stratify_by: must be one of 'none', "),
    ],
)  # fmt: skip
def test_a_benchmarks_plugin_checks_name_the_line(tmp_path: Path, bench: str, message: str) -> None:
    path = _write(tmp_path, bench)
    load_config(path)  # valid plain data
    (line,) = _refused(path)
    assert line.startswith(f"{path}:{message}"), line


def test_a_plan_files_stratification_names_the_plan_files_line(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(
        "benchmark: gsm8k\n# the rule\nstratify_by: subjekt\nper_stratum: 2\n"
    )
    path = _write(tmp_path, "  - name: gsm8k\n    sampling: plan.yaml\n")
    (line,) = _refused(path)
    assert line.startswith(f"{tmp_path / 'plan.yaml'}:3: stratify_by: must be one of 'none', ")
    assert load_run(path, check_sampling=False).config.benchmarks[0].sampling == "plan.yaml"


def test_every_failure_is_listed_and_config_validate_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        "  - name: gsm9k\n    sampling: {total: 3, allocation: uniform}\n"
        "  - name: ifeval\n    review_timeout_s: 2\n    sampling: {total: 3, allocation: uniform}\n",
        head=HEAD.replace('kind: endpoint, endpoint: "http://127.0.0.1:1"', "kind: command"),
    )
    assert len(_refused(path)) == 3
    with pytest.raises(SystemExit) as exc:
        main(["config", "validate", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{path}:5: benchmarks[0].name: must be one of" in err
    assert f"{path}:7: benchmarks[1]: review_timeout_s: ifeval runs no code" in err
    assert f"{path}:3: server: command (the server's argv) is required when kind is 'command'" in err
    assert "Traceback" not in err


def test_a_command_naming_an_engines_former_module_is_refused_with_the_new_one(tmp_path: Path) -> None:
    head = HEAD.replace(
        'server: {kind: endpoint, endpoint: "http://127.0.0.1:1"}',
        "server:\n  kind: command\n  command: [python, -m, evalpipe.server.llamacpp, --port, '{port}']\n"
        "variants:\n  - name: a\n    overrides: {command: [python, -m, evalpipe.replay.server]}\n"
        "  - name: b\n    overrides: {command: [python, -m, evalpipe.engines.llamacpp]}\n",
    )
    path = _write(tmp_path, "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n", head=head)
    assert _refused(path) == [
        f"{path}:5: server.command[2]: 'evalpipe.server.llamacpp' is now 'evalpipe.engines.llamacpp' "
        "(python -m evalpipe.engines.llamacpp)",
        f"{path}:8: variants[0].overrides.command[2]: 'evalpipe.replay.server' is now "
        "'evalpipe.engines.replay_server' (python -m evalpipe.engines.replay_server)",
    ]
    good = _write(tmp_path, "  - name: gsm8k\n    sampling: {total: 3, allocation: uniform}\n",
                  head=head.replace("evalpipe.server.llamacpp", "evalpipe.engines.llamacpp").replace(
                      "evalpipe.replay.server", "evalpipe.engines.replay_server"))  # fmt: skip
    assert load_run(good).config.server.command == [
        "python",
        "-m",
        "evalpipe.engines.llamacpp",
        "--port",
        "{port}",
    ]


def test_a_routers_own_check_runs_beside_a_benchmarks_failure(tmp_path: Path) -> None:
    """Every failure is listed: a benchmark's does not hide the router's (its workers' kinds all known)."""
    head = HEAD.replace(
        'server: {kind: endpoint, endpoint: "http://127.0.0.1:1"}',
        "server:\n  kind: router\n  command: [x]\n  router:\n    workers: []\n",
    )
    path = _write(tmp_path, "  - name: gsm9k\n    sampling: {total: 3, allocation: uniform}\n", head=head)
    found = _refused(path)
    assert len(found) == 2 and found[0].startswith(f"{path}:10: benchmarks[0].name: must be one of ")
    assert (
        found[1] == f"{path}:3: server: router.workers: at least one worker is required when kind is 'router'"
    )
