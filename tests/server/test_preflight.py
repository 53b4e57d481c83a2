"""Preflight rules: each has a passing and a failing case; failures exit 2 naming the flag."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR, fake_nvidia_smi, fake_sglang_at, server_config

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.server import PreflightReport
from evalpipe.cli.main import main
from evalpipe.errors import ExitCode, PreflightError
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.sglang.raw_fp8 import check_raw_fp8_rules
from evalpipe.server.nltk_data import punkt_tab_available
from evalpipe.server.preflight import run_preflight

GLM = {
    "tp_size": 8,
    "ep_size": 4,
    "attention_backend": "dsa",
    "dsa_prefill_backend": "tilelang",
    "dsa_decode_backend": "tilelang",
    "kv_cache_dtype": "fp8_e4m3",
    "speculative": {"algorithm": "EAGLE"},
}
H100 = ("NVIDIA H100 80GB HBM3", "9.0")
ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, gpus: list[tuple[str, str]] | None = None, **extra: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if gpus is not None:
        fake_nvidia_smi(bin_dir, gpus)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(FAKE_SGLANG_DIR), "HOME": str(tmp_path)}
    env.update(extra)
    return env


def _status(report: PreflightReport, rule: str) -> list[str]:
    return [c.status for c in report.checks if c.rule == rule]


def _fails(exc: pytest.ExceptionInfo[PreflightError]) -> dict[str, str]:
    report = exc.value.report
    assert report is not None
    return {c.rule: c.message for c in report.failures}


def test_full_glm_config_passes_and_writes_report(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM)
    rundir = RunDir(tmp_path / "run")
    report = run_preflight(
        cfg,
        cfg.server,
        kind=server_kind(cfg.server.kind),
        punkt_needed=None,
        env=_env(tmp_path, [H100] * 8),
        rundir=rundir,
    )
    assert report.ok and report.sglang_version == "0.5.23"
    for rule in (
        "dry_parse",
        "raw_fp8_both_tilelang",
        "raw_fp8_dcp",
        "raw_fp8_attn_cp",
        "raw_fp8_hisparse",
        "raw_fp8_compute_capability",
        "model_path",
        "gpu_count",
        "port_free",
    ):
        assert _status(report, rule) == ["ok"], rule
    assert PreflightReport.model_validate_json(rundir.server_preflight.read_text()).ok


# (a) the installed SGLang's own parser
def test_dry_parse_rejects_bad_choice_and_unknown_flag(tmp_path: Path) -> None:
    env = _env(tmp_path, [H100] * 8)
    cfg = server_config(tmp_path, {**GLM, "attention_backend": "bogus"})
    with pytest.raises(PreflightError, match="--attention-backend") as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    assert "invalid choice: 'bogus'" in _fails(exc)["dry_parse"]
    cfg = server_config(tmp_path, {**GLM, "extra_args": ["--no-such-flag"]})
    with pytest.raises(PreflightError, match="unrecognized arguments: --no-such-flag") as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    assert exc.value.exit_code == ExitCode.USAGE


def test_sglang_not_importable_fails(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM)
    env = _env(tmp_path, [H100] * 8, PYTHONPATH=str(tmp_path / "empty"))
    with pytest.raises(PreflightError, match="sglang is not importable") as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    assert "sglang_installed" in _fails(exc)


def test_parser_that_cannot_run_is_a_warning(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "sglang" / "srt").mkdir(parents=True)
    (broken / "sglang" / "__init__.py").write_text("")
    (broken / "sglang" / "srt" / "__init__.py").write_text("")
    (broken / "sglang" / "srt" / "server_args.py").write_text("raise RuntimeError('no CUDA device')\n")
    cfg = server_config(tmp_path, GLM)
    report = run_preflight(
        cfg,
        cfg.server,
        kind=server_kind(cfg.server.kind),
        punkt_needed=None,
        env=_env(tmp_path, [H100] * 8, PYTHONPATH=str(broken)),
    )
    assert _status(report, "dry_parse") == ["warn"]
    assert "no CUDA device" in report.warnings[0].message


# (b) raw-FP8 TileLang rules
@pytest.mark.parametrize(
    ("override", "rule", "flag"),
    [
        ({"dsa_decode_backend": "flashmla_sparse"}, "raw_fp8_both_tilelang", "--dsa-decode-backend"),
        ({"dsa_prefill_backend": None}, "raw_fp8_both_tilelang", "--dsa-prefill-backend"),
        ({"dcp_size": 2}, "raw_fp8_dcp", "--dcp-size"),
        ({"attn_cp_size": 2}, "raw_fp8_attn_cp", "--attn-cp-size"),
        ({"enable_hisparse": True}, "raw_fp8_hisparse", "--enable-hisparse"),
        ({"enable_deterministic_inference": True}, "deterministic_dsa", "--enable-deterministic-inference"),
    ],
)
def test_raw_fp8_rule_failures_name_the_flag(tmp_path: Path, override: dict, rule: str, flag: str) -> None:
    cfg = server_config(tmp_path, {**GLM, **override})
    checks = {c.rule: c for c in check_raw_fp8_rules(cfg.server, _env(tmp_path, [H100]))}
    assert checks[rule].status == "fail" and checks[rule].flag == flag and flag in checks[rule].message


def test_raw_fp8_rules_pass_and_do_not_apply_to_bf16(tmp_path: Path) -> None:
    good = {
        c.rule: c.status
        for c in check_raw_fp8_rules(server_config(tmp_path, GLM).server, _env(tmp_path, [H100]))
    }
    assert set(good.values()) == {"ok"}
    bf16 = server_config(
        tmp_path, {**GLM, "kv_cache_dtype": "bfloat16", "dcp_size": 2, "enable_hisparse": True}
    )
    statuses = {c.rule: c.status for c in check_raw_fp8_rules(bf16.server, _env(tmp_path, [("A100", "8.0")]))}
    assert statuses == {"raw_fp8_both_tilelang": "skipped"}
    det = server_config(tmp_path, {"enable_deterministic_inference": True, "attention_backend": "fa3"})
    assert {c.rule: c.status for c in check_raw_fp8_rules(det.server, {})}["deterministic_dsa"] == "ok"


def test_compute_capability_rule(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM)
    checks = {
        c.rule: c
        for c in check_raw_fp8_rules(cfg.server, _env(tmp_path, [H100, ("NVIDIA A100-SXM4-80GB", "8.0")]))
    }
    assert checks["raw_fp8_compute_capability"].status == "fail"
    assert (
        "A100" in checks["raw_fp8_compute_capability"].message
        and "8.9" in checks["raw_fp8_compute_capability"].message
    )
    # the A100 hidden by CUDA_VISIBLE_DEVICES: only the H100 counts
    env = _env(tmp_path, [H100, ("NVIDIA A100-SXM4-80GB", "8.0")], CUDA_VISIBLE_DEVICES="0")
    assert {c.rule: c.status for c in check_raw_fp8_rules(cfg.server, env)}[
        "raw_fp8_compute_capability"
    ] == "ok"


LIVE_DSA = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.17-dsa-live"


def _live_refusal(name: str) -> str:
    """The last error line a live SGLang 0.5.17 printed when it refused a launch (``refuse/<name>.log``)."""
    lines = (LIVE_DSA / "refuse" / f"{name}.log").read_text(encoding="utf-8").splitlines()
    return next(ln for ln in reversed(lines) if "Error" in ln or ": error:" in ln)


def test_fnuz_is_no_kv_cache_dtype_choice_and_the_parser_says_so(tmp_path: Path) -> None:
    """``fp8_e4m3fnuz`` is no ``--kv-cache-dtype`` choice (SGLang 0.5.17 and 0.5.23 alike: the live server's
    argparse refused it): the dry parse fails naming the flag; no rule of evalpipe's own is needed."""
    assert "invalid choice: 'fp8_e4m3fnuz'" in _live_refusal("fnuz")
    cfg = server_config(tmp_path, {"kv_cache_dtype": "fp8_e4m3fnuz"})
    with pytest.raises(PreflightError) as exc:
        run_preflight(
            cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=_env(tmp_path, [H100])
        )
    report = exc.value.report
    assert report is not None
    [dry] = [c for c in report.checks if c.rule == "dry_parse"]
    assert dry.status == "fail" and dry.flag == "--kv-cache-dtype" and "fp8_e4m3fnuz" in dry.message
    assert "fnuz_on_cuda" not in {c.rule for c in report.checks}


def _at(tmp_path: Path, version: str) -> dict[str, str]:
    """The test environment with the double of SGLang claiming ``version`` on PYTHONPATH."""
    where = tmp_path / f"sglang-{version}"
    if not where.is_dir():
        fake_sglang_at(version, where)
    return _env(tmp_path, [H100], PYTHONPATH=str(where))


def test_sglang_0517_refuses_tilelang_over_fp8_in_its_own_words_naming_the_versions_that_can(
    tmp_path: Path,
) -> None:
    """The live 0.5.17 refused TileLang prefill and decode over fp8_e4m3 while resolving its arguments; the
    preflight calls that release's own check and says the same, with the version, the flags and the releases
    that serve it — before any launch."""
    cfg = server_config(tmp_path, {"attention_backend": "dsa", "dsa_prefill_backend": "tilelang",
                                   "dsa_decode_backend": "tilelang", "kv_cache_dtype": "fp8_e4m3"})  # fmt: skip
    checks = {c.rule: c for c in check_raw_fp8_rules(cfg.server, _at(tmp_path, "0.5.17"))}
    rule = checks["sglang_serves_tilelang_fp8"]
    assert rule.status == "fail" and rule.flag == "--kv-cache-dtype"
    assert rule.message.startswith(
        "SGLang 0.5.17 refuses --attention-backend dsa --dsa-prefill-backend tilelang --dsa-decode-backend "
        "tilelang --kv-cache-dtype fp8_e4m3 on CUDA"
    )
    live = _live_refusal("fp8_tilelang").split("ValueError: ", 1)[1]
    assert f'"{live}"' in rule.message and "_check_tilelang_dsa_fp8_kv" in rule.message
    assert "SGLang 0.5.22–0.5.23 serve it" in rule.message
    # the mixed pair too (the live server refused it with the same sentence)
    mixed = server_config(tmp_path, {"attention_backend": "dsa", "dsa_prefill_backend": "tilelang",
                                     "dsa_decode_backend": "flashmla_kv", "kv_cache_dtype": "fp8_e4m3"})  # fmt: skip
    assert _live_refusal("fp8_mixed_tilelang_flashmla_kv").endswith(live)
    statuses = {c.rule: c.status for c in check_raw_fp8_rules(mixed.server, _at(tmp_path, "0.5.17"))}
    assert statuses["sglang_serves_tilelang_fp8"] == "fail"
    # TileLang on a BF16 cache is what 0.5.17 serves
    bf16 = server_config(tmp_path, {"attention_backend": "dsa", "dsa_prefill_backend": "tilelang",
                                    "dsa_decode_backend": "tilelang", "kv_cache_dtype": "bfloat16"})  # fmt: skip
    assert "sglang_serves_tilelang_fp8" not in {
        c.rule for c in check_raw_fp8_rules(bf16.server, _at(tmp_path, "0.5.17"))
    }


@pytest.mark.parametrize(
    ("version", "status", "words"),
    [
        ("0.5.16", "fail", "accepts --attention-backend dsa --dsa-prefill-backend tilelang"),
        ("0.5.21", "fail", "SGLang 0.5.21 refuses"),
        ("0.5.23", "ok", "its own _check_dsa_backend_constraints accepts the kernels"),
        ("0.5.30", "warn", "not among the releases checked (0.5.11–0.5.23)"),
    ],
)
def test_which_release_serves_tilelang_over_fp8(
    tmp_path: Path, version: str, status: str, words: str
) -> None:
    cfg = server_config(tmp_path, GLM)
    rule = {c.rule: c for c in check_raw_fp8_rules(cfg.server, _at(tmp_path, version))}[
        "sglang_serves_tilelang_fp8"
    ]
    assert rule.status == status and words in rule.message, rule.message


def test_attention_cp_is_marked_as_the_seed_prs_rule(tmp_path: Path) -> None:
    """No SGLang release checks attention context parallelism with the raw TileLang row (the live 0.5.17 refused
    ``--attn-cp-size 2`` for the TileLang-FP8 reason alone; 0.5.23's own checks do not name it)."""
    assert "attn" not in _live_refusal("attn_cp2_fp8_tilelang").lower()
    cfg = server_config(tmp_path, {**GLM, "attn_cp_size": 2})
    rule = {c.rule: c for c in check_raw_fp8_rules(cfg.server, _env(tmp_path, [H100]))}["raw_fp8_attn_cp"]
    assert rule.status == "fail" and "the seed PR's rule: no SGLang release checks it" in rule.message


def test_the_cli_refuses_the_release_configuration_on_0517_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evalpipe server preflight configs/sglang-gpu-dsa-tilelang-fp8.yaml`` as the GPU run calls it, with the
    servers' environment holding SGLang 0.5.17: exit 2, one line naming the version, no traceback."""
    import yaml

    shipped = yaml.safe_load(
        (ROOT / "configs" / "sglang-gpu-dsa-tilelang-fp8.yaml").read_text(encoding="utf-8")
    )
    env = _at(tmp_path, "0.5.17")
    shipped["server"]["env"]["PYTHONPATH"] = env["PYTHONPATH"]
    shipped["benchmarks"][0]["sampling"] = str(ROOT / "samplers" / "demo" / "gsm8k.yaml")
    shipped["benchmarks"][0]["source"] = {"local": str(ROOT / "evalpipe" / "selftest" / "data" / "gsm8k")}
    shipped["model"]["chat_template"] = str(ROOT / "tools" / "gpu" / "sglang" / "smollm2_chat_template.jinja")
    path = tmp_path / "tilelang-fp8.yaml"
    path.write_text(yaml.safe_dump(shipped, sort_keys=False), encoding="utf-8")
    monkeypatch.setenv("PATH", env["PATH"])
    with pytest.raises(SystemExit) as exc:
        main(["server", "preflight", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "SGLang 0.5.17 refuses --attention-backend dsa" in err and "Traceback" not in err


# (c) model path, (d) port, (e) GPUs
def test_model_path_rules(tmp_path: Path) -> None:
    env = _env(tmp_path, [H100] * 8)
    cfg = server_config(tmp_path, GLM)
    (tmp_path / "model" / "config.json").write_text("{not json")
    with pytest.raises(PreflightError, match="--model-path") as exc:
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    assert "config.json unreadable" in _fails(exc)["model_path"]
    (tmp_path / "model" / "config.json").unlink()
    with pytest.raises(PreflightError, match=r"no config\.json"):
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cfg = server_config(elsewhere, GLM, model_dir=False)
    with pytest.raises(PreflightError, match="does not exist"):
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)


def test_port_in_use_fails(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cfg = server_config(tmp_path, {**GLM, "port": port})
        with pytest.raises(PreflightError, match=f"--port {port} is already in use") as exc:
            run_preflight(
                cfg,
                cfg.server,
                kind=server_kind(cfg.server.kind),
                punkt_needed=None,
                env=_env(tmp_path, [H100] * 8),
            )
        assert list(_fails(exc)) == ["port_free"]


def test_gpu_count_rules(tmp_path: Path) -> None:
    cfg = server_config(tmp_path, GLM)
    with pytest.raises(PreflightError, match="needs 8 GPU") as exc:
        run_preflight(
            cfg,
            cfg.server,
            kind=server_kind(cfg.server.kind),
            punkt_needed=None,
            env=_env(tmp_path, [H100] * 4),
        )
    assert "4 visible" in _fails(exc)["gpu_count"]
    with pytest.raises(PreflightError, match="CUDA_VISIBLE_DEVICES=0,1"):
        run_preflight(
            cfg,
            cfg.server,
            kind=server_kind(cfg.server.kind),
            punkt_needed=None,
            env=_env(tmp_path, [H100] * 8, CUDA_VISIBLE_DEVICES="0,1"),
        )
    nogpu = tmp_path / "nogpu"
    nogpu.mkdir()
    with pytest.raises(PreflightError, match="nvidia-smi is not available"):
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=_env(nogpu))
    two_nodes = server_config(
        tmp_path, {**GLM, "tp_size": 16, "multi_node": {"nnodes": 2, "node_rank": 0, "dist_init_addr": "h:1"}}
    )
    report = run_preflight(
        two_nodes,
        two_nodes.server,
        kind=server_kind(two_nodes.server.kind),
        punkt_needed=None,
        env=_env(tmp_path, [H100] * 8),
    )
    assert _status(report, "gpu_count") == ["ok"]


def test_api_key_and_extra_args_rules(tmp_path: Path) -> None:
    env = _env(tmp_path, [H100] * 8)
    cfg = server_config(tmp_path, {**GLM, "api_key_env": "EVALPIPE_PF_KEY"})
    with pytest.raises(PreflightError, match=r"--api-key.*EVALPIPE_PF_KEY"):
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)
    assert _status(
        run_preflight(
            cfg,
            cfg.server,
            kind=server_kind(cfg.server.kind),
            punkt_needed=None,
            env={**env, "EVALPIPE_PF_KEY": "k"},
        ),
        "api_key",
    ) == ["ok"]
    cfg = server_config(tmp_path, {**GLM, "extra_args": ["--kv-cache-dtype", "bf16"]})
    with pytest.raises(
        PreflightError, match=r"--kv-cache-dtype in server\.extra_args overrides config field"
    ):
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env=env)


# (f) NLTK punkt_tab for IFEval
def test_punkt_tab_missing_warns_present_ok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk.data

    empty, data = tmp_path / "empty_nltk", tmp_path / "nltk_data"
    empty.mkdir()
    (data / "tokenizers" / "punkt_tab" / "english").mkdir(parents=True)
    assert not punkt_tab_available([str(empty)])
    assert punkt_tab_available([str(data)])
    cfg = server_config(tmp_path, {"kind": "answer_key"}, benchmarks=("ifeval", "gsm8k"))
    monkeypatch.setattr(nltk.data, "path", [str(empty)])
    report = run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed="IFEval", env={})
    assert report.ok and _status(report, "nltk_punkt_tab") == ["warn"]
    assert "nltk.downloader punkt_tab" in report.warnings[0].message
    monkeypatch.setattr(nltk.data, "path", [str(data)])
    assert _status(
        run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed="IFEval", env={}),
        "nltk_punkt_tab",
    ) == ["ok"]
    assert (
        _status(
            run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env={}),
            "nltk_punkt_tab",
        )
        == []
    )


def test_endpoint_kind_skips_launch_rules(tmp_path: Path) -> None:
    cfg = server_config(
        tmp_path, {**GLM, "kind": "endpoint", "endpoint": "http://127.0.0.1:9"}, model_dir=False
    )
    report = run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None, env={})
    assert report.ok and report.checks == []


def test_cli_preflight_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(tmp_path, [H100] * 8)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cfg = server_config(tmp_path, {**GLM, "dcp_size": 2})
    with pytest.raises(SystemExit) as exc:
        main(["server", "preflight", str(cfg.config_path)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert "--dcp-size 2" in captured.err and "FAIL  raw_fp8_dcp" in captured.out
    assert "Traceback" not in captured.err
    cfg = server_config(
        tmp_path, GLM, variants=[{"name": "bf16", "overrides": {"kv_cache_dtype": "bfloat16"}}]
    )
    assert main(["server", "preflight", str(cfg.config_path), "--variant", "bf16"]) == 0
    assert "preflight ok" in capsys.readouterr().out
