"""The speed benchmark in the sign-off: audit findings, the ``min_output_throughput_ratio`` gate, the report's
"Serving speed" section and plot, the results table's speed-benchmark Input TPS columns, the speed stage's
refusals and resume — over synthetic run directories (``fixtures_rundir``) whose ``speed.json`` comes from
the real orchestration driven by a stand-in client (``tests/helpers/speed_client.py``)."""

from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fixtures_rundir import clean_run
from helpers.speed_client import StandInClient

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.errors import SpeedSetupError
from evalpipe.run.audit import audit_run
from evalpipe.speed import run, stage

WORKLOADS = [
    SpeedWorkload(input_len=8, output_len=4, concurrency=1, prompts_per_round=2),
    SpeedWorkload(input_len=8, output_len=4, concurrency=2, prompts_per_round=2),
]


@pytest.fixture(autouse=True)
def _no_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "check_reachable", lambda url, key: None)
    monkeypatch.setattr(run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))


def _speed_cfg() -> SpeedConfig:
    return SpeedConfig(client="evalscope", workloads=WORKLOADS, rounds=3, tokenizer=None)


def _variant_runs(tmp_path: Path, *, gate: float | None, short_seeds: frozenset[int] = frozenset()) -> Path:
    """``tmp/slow`` and ``tmp/fast``: clean runs with a speed section, benchmarked alternately (fast = the
    test, first variant), ``tmp/speed_compare.json`` beside them."""
    cfg = _speed_cfg()
    for name in ("fast", "slow"):
        b = clean_run(tmp_path / name)
        assert b.config is not None
        b.config["speed"] = cfg.model_dump(mode="json")
        if gate is not None:
            b.config["gates"] = {"min_output_throughput_ratio": gate}
        b.write()
    targets = [run.SpeedTarget("fast", "http://h:2", tmp_path / "fast"),
               run.SpeedTarget("slow", "http://h:1", tmp_path / "slow")]  # fmt: skip
    run.run_speed_alternating(targets, run.SpeedRequest(cfg, "m", client=StandInClient(short_seeds=short_seeds)))
    comparison = stage.compare_variant_dirs(
        tmp_path / "fast", tmp_path / "slow", tmp_path, min_output_throughput_ratio=gate
    )
    assert comparison is not None and RunDir(tmp_path).speed_compare.is_file()
    return tmp_path


def test_report_shows_the_speed_table_ratios_and_plot(tmp_path: Path) -> None:
    root = _variant_runs(tmp_path, gate=1.1)
    summary = audit_run(root / "fast", speed_comparison=stage.speed_comparison_beside(root / "fast"))
    assert summary.speed is not None and summary.verdict == "pass"
    artifact = read_model(RunDir(root / "fast").speed_json, SpeedArtifact)
    row = summary.speed.rows[0]
    tputs = [r.output_throughput for r in artifact.rounds_for(row.workload)]
    assert row.output_throughput_rounds == tputs == [120.0, 121.0, 122.0]  # seeds 42, 43, 44
    assert row.output_throughput == statistics.median(tputs) and row.input_throughput == 242.0
    gates = [g for g in summary.gates if g.gate == "min_output_throughput_ratio"]
    assert [(g.benchmark, g.passed) for g in gates] == [("in8-out4-c1", True), ("in8-out4-c2", True)]
    assert gates[0].actual == pytest.approx(121.0 / 101.0)

    md = (root / "fast" / "report.md").read_text()
    assert "## Serving speed" in md
    assert "| in8-out4-c1 | 3 | 2/2, 2/2, 2/2 | 121.0 (120.0–122.0) | 242.0 |" in md
    assert "### Speed ratio fast / slow" in md
    assert "- in8-out4-c1 (fast/slow, 3+3 rounds): output throughput x1.20 [" in md
    assert "— faster (output-throughput interval above 1)" in md
    assert "the interval resamples round pairs" in md
    # the seed's Input TPS columns come from the speed benchmark, the traffic figures stay, labelled
    assert (
        "| Input TPS (speed benchmark) | Input TPS/GPU (speed benchmark) | Input TPS (eval traffic) |" in md
    )
    assert "| GSM8K / acc | 3/4 | 75.0 % | [30.1, 95.4] % | 242.0 | 30.2 |" in md  # TP 8
    html = (root / "fast" / "report.html").read_text()
    svg = html[
        html.index("<svg", html.index("Serving speed")) : html.index("</svg>", html.index("Serving speed"))
    ]
    ET.fromstring(svg + "</svg>")  # well-formed
    assert "concurrency 1" in svg and "concurrency 2" in svg
    assert "fast, input 8" in svg and "slow, input 8" in svg
    assert svg.count('r="2.5"') == 2 * 2 * 3  # a dot per round: 2 variants × 2 workloads × 3 rounds


def test_gate_fails_below_the_ratio_and_without_a_comparison(tmp_path: Path) -> None:
    root = _variant_runs(tmp_path, gate=1.5)
    summary = audit_run(root / "fast", speed_comparison=stage.speed_comparison_beside(root / "fast"))
    assert summary.verdict == "gate_failed" and summary.exit_code == 1
    failed = [g.message for g in summary.gates if not g.passed]
    assert failed[0].startswith("in8-out4-c1: output-throughput ratio 1.198 < min 1.500")
    alone = audit_run(root / "fast")  # the ratio needs the comparison: without it the gate fails
    (g,) = [g for g in alone.gates if g.gate == "min_output_throughput_ratio"]
    assert not g.passed and "no speed comparison" in g.message


def test_an_incomplete_round_is_an_error_finding_and_the_ratio_inconclusive(tmp_path: Path) -> None:
    root = _variant_runs(tmp_path, gate=None, short_seeds=frozenset({43}))
    summary = audit_run(root / "fast", speed_comparison=stage.speed_comparison_beside(root / "fast"))
    incomplete = [f for f in summary.findings if f.code == "speed_incomplete"]
    assert [f.message for f in incomplete] == [
        "fast in8-out4-c1 round 2: 1 of 2 requests completed (its comparisons are inconclusive)",
        "fast in8-out4-c2 round 2: 1 of 2 requests completed (its comparisons are inconclusive)",
    ]
    assert summary.verdict == "audit_error" and summary.exit_code == 3
    assert summary.speed is not None and summary.speed.comparison is not None
    assert all(w.verdict == "inconclusive" for w in summary.speed.comparison.workloads)
    assert summary.benchmarks and summary.benchmarks[0].correct is not None  # accuracy untouched
    md = (root / "fast" / "report.md").read_text()
    assert "| in8-out4-c1 | 3 (2 usable) | 2/2, 1/2, 2/2 |" in md


def test_a_benchmark_that_could_not_run_is_an_error_finding(tmp_path: Path) -> None:
    b = clean_run(tmp_path / "run")
    assert b.config is not None
    b.config["speed"] = _speed_cfg().model_dump(mode="json")
    rd = b.write()

    class Unfit(StandInClient):
        def check(self, cfg: SpeedConfig, tokenizer_dir: Path | None) -> None:
            raise SpeedSetupError("speed.workloads[0] in8-out4-c1: does not fit")

    import evalpipe.speed.run as run_module

    original = run_module.make_client
    run_module.make_client = lambda cfg, **_: Unfit()  # type: ignore[assignment]  # the stand-in, not evalscope
    try:
        ok = stage.run_speed_stage(run.SpeedTarget("v", "http://h:1", rd.root), run.SpeedRequest(_speed_cfg(), "m"))
    finally:
        run_module.make_client = original
    assert ok is False and not rd.speed_json.exists()
    assert rd.speed_error.read_text() == "speed.workloads[0] in8-out4-c1: does not fit\n"
    summary = audit_run(rd.root)
    (f,) = [f for f in summary.findings if f.code == "speed_setup"]
    assert f.severity == "error" and f.message.endswith("does not fit") and summary.exit_code == 3
    assert summary.speed is None and "## Serving speed" not in (rd.root / "report.md").read_text()


def test_a_config_with_speed_but_no_result_is_a_warning(tmp_path: Path) -> None:
    b = clean_run(tmp_path / "run")
    assert b.config is not None
    b.config["speed"] = _speed_cfg().model_dump(mode="json")
    summary = audit_run(b.write().root)
    (f,) = [f for f in summary.findings if f.path == "speed.json"]
    assert (f.severity, f.code) == ("warn", "missing_artifact")


def test_resume_keeps_a_complete_benchmark_and_reruns_an_incomplete_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _speed_cfg()
    calls: list[str] = []
    monkeypatch.setattr(run, "make_client", lambda c, **_: calls.append("client") or StandInClient())
    assert stage.run_speed_stage(run.SpeedTarget("v", "http://h:1", tmp_path), run.SpeedRequest(cfg, "m"))
    assert stage.already_measured(tmp_path, cfg)
    before = RunDir(tmp_path).speed_json.read_bytes()
    assert stage.run_speed_stage(run.SpeedTarget("v", "http://h:1", tmp_path), run.SpeedRequest(cfg, "m"))
    assert RunDir(tmp_path).speed_json.read_bytes() == before and calls == ["client"]
    assert not stage.already_measured(tmp_path, cfg.model_copy(update={"rounds": 4}))


def _speed_only_config(tmp_path: Path, *, gate: float | None = None, speed: bool = True) -> Path:
    import yaml
    from fixtures_rundir import default_config

    cfg = default_config(gates={"min_output_throughput_ratio": gate} if gate is not None else None)
    if speed:
        cfg["speed"] = _speed_cfg().model_dump(mode="json")
    path = tmp_path / "speed.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("gate", "short", "code"), [(1.1, frozenset(), 0), (1.5, frozenset(), 1), (None, frozenset({42}), 3)]
)
def test_speed_command_compares_two_running_servers(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    gate: float | None,
    short: frozenset[int],
    code: int,
) -> None:
    from fixtures_rundir import run_cli

    monkeypatch.setattr(run, "make_client", lambda c, **_: StandInClient(short_seeds=short))
    out = tmp_path / "out"
    args = ["speed", str(_speed_only_config(tmp_path, gate=gate)), "--out", str(out)]
    assert run_cli([*args, "--variant", "fast=http://h:2", "--variant", "slow=http://h:1"]) == code
    comparison = read_model(RunDir(out).speed_compare, SpeedComparison)
    assert (comparison.test, comparison.control) == ("fast", "slow")  # first = test, as in evalpipe run
    printed = capsys.readouterr().out
    assert f"fast in8-out4-c1 round 1: {'1/2' if short else '2/2'} completed" in printed
    verdict = "inconclusive (incomplete round(s)" if short else "faster (output-throughput interval above 1)"
    assert "in8-out4-c1: output throughput x1.20 [" in printed and verdict in printed


def test_speed_command_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures_rundir import run_cli

    no_speed = _speed_only_config(tmp_path, speed=False)
    assert run_cli(["speed", str(no_speed), "--endpoint", "http://h:1"]) == 2
    assert f"{no_speed}: no speed: section" in capsys.readouterr().err
    with_speed = _speed_only_config(tmp_path)
    assert run_cli(["speed", str(with_speed), "--variant", "nourl"]) == 2
    assert "--variant nourl: expected NAME=URL" in capsys.readouterr().err
    assert run_cli(["speed", str(with_speed)]) == 2
    assert "give --endpoint URL or --variant NAME=URL" in capsys.readouterr().err


def test_run_refuses_a_speed_section_it_cannot_honour_before_the_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evalpipe run`` on the demo (answer-key server) with a tokenizer directory that does not exist: exit 2,
    one line naming the field, and no server was launched (preflight, before the launch stage)."""
    import yaml
    from fixtures_rundir import run_cli

    from evalpipe.selftest.controls import demo_config_path

    demo = demo_config_path()
    cfg = yaml.safe_load(demo.read_text(encoding="utf-8"))
    cfg["benchmarks"] = [b for b in cfg["benchmarks"] if b["name"] == "ceval"]
    cfg["speed"] = {
        "tokenizer": str(tmp_path / "no-such-tokenizer"),
        "workloads": [WORKLOADS[0].model_dump()],
    }
    cfg.pop("variants")
    for b in cfg["benchmarks"]:  # the demo's relative paths, resolved against its own directory
        b["sampling"] = str((demo.parent / b["sampling"]).resolve())
        b["source"] = {"local": str((demo.parent / b["source"]["local"]).resolve())}
    path = tmp_path / "demo-speed.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    out = tmp_path / "run"
    assert run_cli(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"speed.tokenizer {tmp_path / 'no-such-tokenizer'}: no such tokenizer directory" in err
    assert not (out / "server" / "launch.json").exists()


@pytest.mark.parametrize("waived", [False, True])
def test_a_no_speed_run_fails_the_ratio_gate_unless_waived_and_the_report_says_so(
    tmp_path: Path, waived: bool
) -> None:
    """run.json ``no_speed`` (``evalpipe run --no-speed``): the ratio gate fails with that reason, or — with
    ``--waive-speed-gate`` — is reported as advisory and the verdict rests on accuracy; the report says
    serving speed was not measured, and no "absent speed.json" warning is raised."""
    from evalpipe.artifacts import write_model
    from evalpipe.artifacts.schema.run import RunRecord

    b = clean_run(tmp_path / "run")
    assert b.config is not None
    b.config["gates"] = {"min_output_throughput_ratio": 0.95}
    rd = b.write()
    record = read_model(rd.run_record, RunRecord)
    write_model(rd.run_record, record.model_copy(update={"no_speed": True, "speed_gate_waived": waived}))
    summary = audit_run(rd.root)
    (gate,) = [g for g in summary.gates if g.gate == "min_output_throughput_ratio"]
    assert not gate.passed and gate.actual is None and gate.advisory is waived
    assert gate.message.startswith("serving speed not measured (--no-speed): ")
    assert ("waived (--waive-speed-gate)" in gate.message) is waived
    assert (summary.verdict, summary.exit_code) == (("pass", 0) if waived else ("gate_failed", 1))
    assert summary.speed_not_measured == "serving speed not measured (--no-speed)"
    assert not [f for f in summary.findings if f.path == "speed.json"]
    report = rd.report_md.read_text(encoding="utf-8")
    assert "## Serving speed" in report
    assert "This run is accuracy only: serving speed not measured (--no-speed)" in report
