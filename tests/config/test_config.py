"""Run-config loading: the real configs validate; errors name file, line and field; exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalpipe.cli.main import app, main
from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError
from evalpipe.resolve import load_run
from evalpipe.server.kinds.sglang import sglang_settings

runner = CliRunner()


def test_glm_config_describes_the_seed_run(repo_root: Path) -> None:
    cfg = load_config(repo_root / "configs" / "glm-fp8.yaml")
    assert cfg.server.kv_cache_dtype == "fp8_e4m3"
    s = sglang_settings(cfg.server)
    assert (s.tp_size, s.ep_size, s.attention_backend) == (8, 4, "dsa")
    assert (s.dsa_prefill_backend, s.dsa_decode_backend) == ("tilelang", "tilelang")
    assert s.speculative is not None
    assert (s.speculative.algorithm, s.speculative.num_steps, s.speculative.eagle_topk) == ("EAGLE", 3, 1)
    assert s.speculative.num_draft_tokens == 4
    g = cfg.generation
    assert (g.temperature, g.top_p, g.seed, g.n, g.concurrency) == (0.0, 1.0, 42, 1, 8)
    assert cfg.max_tokens_for("ceval") == 32768
    assert cfg.max_tokens_for("live_code_bench") == 65536
    assert [b.name for b in cfg.benchmarks] == ["ifeval", "ceval", "gsm8k", "live_code_bench"]
    assert [b.few_shot for b in cfg.benchmarks] == [0, 5, 4, 0]
    assert cfg.model.chat_template == "native" and cfg.model.thinking == "model_default"
    assert cfg.sampling_seed == 42


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


BASE = """\
name: t
model: {path: /m, served_name: m}
server: {kind: endpoint, endpoint: "http://127.0.0.1:1"}
benchmarks:
  - name: gsm8k
    sampling: {stratify_by: none, total: 5, allocation: uniform}
  - name: ceval
    sampling: {stratify_by: subject, per_stratum: 1}
  - name: ifeval
    sampling:
      stratify_by: instruction_count
      per_stratum: 0
"""


def test_error_names_yaml_path_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    text = str(exc.value)
    assert f"{path}:12: benchmarks[2].sampling.per_stratum: must be > 0" in text


def test_review_timeout_only_for_a_benchmark_whose_review_runs_code(tmp_path: Path) -> None:
    text = BASE.replace("per_stratum: 0", "per_stratum: 1")
    path = _write(tmp_path, text.replace("- name: gsm8k\n", "- name: gsm8k\n    review_timeout_s: 3\n"))
    load_config(path)  # plain data: whether gsm8k's review runs code is its plugin's to say
    with pytest.raises(ConfigError) as exc:
        load_run(path)
    assert (
        f"{path}:5: benchmarks[0]: review_timeout_s: gsm8k runs no code in its review (no per-test limit)"
        in ("\n".join(exc.value.details))
    )


def test_every_error_is_listed_and_exit_code_is_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = BASE.replace("name: t\n", "name: t\nbogus: 1\n").replace("total: 5", "total: -5")
    path = _write(tmp_path, bad)
    with pytest.raises(SystemExit) as exc:
        main(["config", "validate", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "bogus: unknown field" in err
    assert "benchmarks[0].sampling.total: must be > 0" in err
    assert "benchmarks[2].sampling.per_stratum: must be > 0" in err
    assert "Traceback" not in err


def test_plan_file_errors_name_the_plan(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text("benchmark: gsm8k\nstratify_by: none\ntotal: 3\n")
    path = _write(
        tmp_path,
        "name: t\nmodel: {path: /m, served_name: m}\nserver: {kind: endpoint, endpoint: 'http://x'}\n"
        "benchmarks:\n  - name: gsm8k\n    sampling: plan.yaml\n",
    )
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert "allocation (proportional or uniform) is required with total" in str(exc.value)
    assert "plan.yaml" in str(exc.value)


def test_a_config_naming_the_former_rules_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    """``../sampling-rules/x.yaml`` where ``../samplers/x.yaml`` exists: one line naming the file to use, on the
    config's line; a missing file anywhere else stays 'file not found'."""
    rules = tmp_path / "samplers"
    rules.mkdir()
    (rules / "gsm8k.yaml").write_text("stratify_by: none\ntotal: 3\nallocation: uniform\n")
    configs = tmp_path / "configs"
    configs.mkdir()
    head = "name: t\nmodel: {path: /m, served_name: m}\nserver: {kind: endpoint, endpoint: 'http://x'}\n"
    old = configs / "old.yaml"
    old.write_text(head + "benchmarks:\n  - name: gsm8k\n    sampling: ../sampling-rules/gsm8k.yaml\n")
    with pytest.raises(ConfigError) as exc:
        load_config(old)
    assert exc.value.details == [
        f"{old}:6: benchmarks[0].sampling: {tmp_path / 'sampling-rules' / 'gsm8k.yaml'}: file not found: the sampling "
        f"rules moved to {rules}/ (use {rules / 'gsm8k.yaml'})"
    ]
    new = configs / "new.yaml"
    new.write_text(head + "benchmarks:\n  - name: gsm8k\n    sampling: ../samplers/gsm8k.yaml\n")
    assert load_config(new).benchmarks[0].name == "gsm8k"
    (rules / "gsm8k.yaml").unlink()
    with pytest.raises(ConfigError) as exc:
        load_config(old)
    assert exc.value.details[0].endswith("gsm8k.yaml: file not found")


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: t\nmodel: [unclosed\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert f"{path}:" in str(exc.value) and "invalid YAML" in str(exc.value)


def test_missing_config_file_exit_2(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["config", "validate", str(tmp_path / "nope.yaml")])
    assert exc.value.code == 2


def test_config_schema_command_prints_json_schema() -> None:
    result = runner.invoke(app, ["config", "schema"])
    assert result.exit_code == 0
    assert '"RunConfig"' in result.output or '"title": "RunConfig"' in result.output


def test_endpoint_kind_requires_url(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        BASE.replace(
            'server: {kind: endpoint, endpoint: "http://127.0.0.1:1"}', "server: {kind: endpoint}"
        ).replace("per_stratum: 0", "per_stratum: 1"),
    )
    with pytest.raises(ConfigError) as exc:
        load_run(path)
    assert "server: endpoint is required when kind is 'endpoint'" in str(exc.value)


ONE_BENCHMARK = """\
benchmarks:
  - name: gsm8k
    sampling: {stratify_by: none, total: 5, allocation: uniform}
"""
OLD_PLACE = """\
name: t
model: {path: /m, served_name: m}
server:
  kind: endpoint
  endpoint: "http://127.0.0.1:1"
  tp_size: 8
  speculative: {algorithm: EAGLE}
variants:
  - name: a
  - name: b
    overrides: {ep_size: 4}
""" + ONE_BENCHMARK


def test_settings_at_their_old_place_load_with_one_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``server.tp_size`` (and a variant's ``overrides: {ep_size: …}``) are read as the kind's settings, and
    one stderr line names every one of them, placed on the first one's YAML line."""
    cfg = load_run(_write(tmp_path, OLD_PLACE), check_sampling=False).config
    assert cfg.server.settings == {"tp_size": 8, "speculative": {"algorithm": "EAGLE"}}
    assert cfg.variants[1].overrides == {"settings.ep_size": 4}
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"{tmp_path / 'c.yaml'}:6: note: server.tp_size, server.speculative, ")
    assert "variants[1].overrides.ep_size" in line and "server.settings" in line
    new_place = OLD_PLACE.replace("  tp_size: 8\n  speculative: {algorithm: EAGLE}\n", "")
    new_place = new_place.replace('1"\n', '1"\n  settings: {tp_size: 8}\n')
    new_place = new_place.replace("{ep_size: 4}", "{settings.ep_size: 4}")
    load_run(_write(tmp_path, new_place), check_sampling=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ('{kind: endpoint, endpoint: "http://h:1", settings: {tp_size: 0}}', ":3: server.settings.tp_size: must be > 0"),
        ('{kind: endpoint, endpoint: "http://h:1", settings: {tp_sise: 2}}', "server.settings.tp_sise: unknown field"),
        ("{kind: command, command: [x], settings: {tp_size: 2}}", "kind 'command' takes no settings (got tp_size)"),
        ('{kind: endpoint, endpoint: "http://h:1", tp_size: 2, settings: {tp_size: 2}}', "set both in server"),
    ],
)
def test_settings_are_validated_by_the_kind(tmp_path: Path, server: str, message: str) -> None:
    text = f"name: t\nmodel: {{path: /m, served_name: m}}\nserver: {server}\n{ONE_BENCHMARK}"
    with pytest.raises(ConfigError) as exc:
        load_run(_write(tmp_path, text), check_sampling=False)
    assert any(message in d for d in exc.value.details), exc.value.details
