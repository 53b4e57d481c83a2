"""``evalpipe plan``'s first screen: the design the config runs, first, in at most 25 lines of at most 120
characters — the sensitive profile's internal pilot with the same numbers as the ``--detail`` pilot lines;
the alternatives and the reach search behind ``--detail`` and in ``--json``; the default path loads neither the
power module (statsmodels) nor the data of a benchmark no gate judges."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_rundir import run_cli

from evalpipe.config.models import RunConfig
from evalpipe.plan.inputs import plan_inputs, pool_input
from evalpipe.plan.operating import GatedBlock, gated_blocks, gated_names, operating_lines
from evalpipe.plan.screen import PlanReport, plan_design
from evalpipe.report.plan_screen import MAX_LINES, MAX_WIDTH, screen_lines
from evalpipe.resolve import load_run

REPO = Path(__file__).resolve().parents[2]
SENSITIVE = REPO / "configs" / "glm-fp8-sensitive.yaml"


def _gated(config: Path) -> tuple[RunConfig, list[GatedBlock]]:
    run = load_run(config)
    inputs, manifest = plan_inputs(run, None, None, only=gated_names(run.config))
    pools = [pool_input(name, members, inputs) for name, members in run.config.pools.items()]
    return run.config, gated_blocks(run.config, [*inputs, *pools], manifest, None)


def test_the_sensitive_profile_leads_with_its_pilot_in_one_screen(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["plan", str(SENSITIVE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= MAX_LINES and max(len(x) for x in lines) <= MAX_WIDTH, lines
    assert lines[0].startswith("glm-fp8-raw-kv-sensitive runs the internal pilot design: 3 arm(s) in turn")
    assert lines[3].lstrip().startswith("assumes: ")
    rows = {x.split()[0]: x for x in lines if re.match(r"  (gpqa_diamond|kv_probe|competition_math) ", x)}
    assert set(rows) == {"gpqa_diamond", "kv_probe", "competition_math"}
    assert any(x.startswith("  sign-off, 3 blocks") for x in lines)
    assert "GPU-h: give --from RUN" in "\n".join(lines)
    assert not any("sequential ψ" in x or "the target:" in x for x in lines)  # the alternatives: --detail


def test_the_screen_shows_the_numbers_the_detail_pilot_lines_give() -> None:
    """One simulation, two views: each block's P(pass | no regression) and at its must-catch drop, and the
    sign-off's, equal the ``--detail`` pilot lines' (the same paths and seeds)."""
    cfg, gated = _gated(SENSITIVE)
    design = plan_design(cfg, gated)
    detail = "\n".join(operating_lines(cfg, gated))
    assert design.design == "internal pilot" and [b.block for b in design.blocks] == [g.name for g in gated]
    for block in design.blocks:
        for case in block.cases:
            assert case.p_pass_must_catch is not None and block.must_catch_pts is not None
            line = (
                f"    {block.block:<18} pilot, {case.case}: P(pass) {case.p_pass_no_regression:.3f} | "
                f"−{block.margin_pts:g}: "
            )
            assert line in detail, line
            assert f"| −{block.must_catch_pts:g}: {case.p_pass_must_catch:.3f}\n" in detail + "\n"
    for s in design.sign_off:
        assert (
            f"pilot, {s.case}: sign-off P(pass | no regression) {s.p_pass_no_regression:.3f} |" in detail
        ), s.case
        assert s.p_pass_single_miss is not None
        assert f"single-block miss {s.p_pass_single_miss:.4f} ({s.miss_block} at" in detail
        assert s.more_attempts_share is not None
        assert f"out {s.output_tokens / 1e6:.2f} M in turn (expected); more than 1 attempt chosen on " in detail
    lines = screen_lines(design)
    assert len(lines) <= MAX_LINES and max(map(len, lines)) <= MAX_WIDTH


def test_the_default_path_loads_no_power_module_and_no_ungated_data() -> None:
    """What keeps the default view fast (the sensitive profile: 22 s before, 5.8–6.2 s after, on a 2-core host
    at load average 8): no statsmodels or ``evalpipe.stats.power`` import, and only the gated blocks' benchmarks planned."""
    probe = (
        "import sys\n"
        "from evalpipe.cli.main import main\n"
        "try:\n"
        f"    main(['plan', {str(SENSITIVE)!r}])\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print('LOADED', sorted(m for m in sys.modules if m in ('evalpipe.stats.power', 'statsmodels', "
        "'evalpipe.plan.mde', 'evalscope')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "LOADED []" in proc.stdout, proc.stdout[-500:]
    cfg = load_run(SENSITIVE).config
    assert gated_names(cfg) == {"gpqa_diamond", "kv_probe", "aime24", "aime25", "aime26", "hmmt25", "hmmt26"}


def test_json_holds_the_design_the_alternatives_and_the_reach(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["plan", str(SENSITIVE), "--json"]) == 0
    report = PlanReport.model_validate(json.loads(capsys.readouterr().out))
    assert report.design.design == "internal pilot"
    designs = {(a.block, a.design.split(" ")[0], a.case) for a in report.alternatives}
    assert ("gpqa_diamond", "fixed", "argued") in designs and ("kv_probe", "sequential", "2p(1-p)") in designs
    assert {s.design for s in report.sign_offs} == {"fixed", "sequential"}
    short = [r for r in report.reach if r.design == "sequential" and r.case == "2p(1-p)"]
    assert short and all(r.reaches < r.share for r in short)


def test_a_config_without_a_pilot_leads_with_its_own_design(capsys: pytest.CaptureFixture[str]) -> None:
    config = REPO / "configs" / "demo-sequential.yaml"
    assert run_cli(["plan", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= MAX_LINES and max(len(x) for x in lines) <= MAX_WIDTH, lines
    assert re.match(r"\S+ runs the sequential design: ", lines[0]), lines[0]


def test_json_with_mde_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["plan", str(SENSITIVE), "--json", "--mde", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "error: --json prints the gated designs: give --mde and --write without it"
