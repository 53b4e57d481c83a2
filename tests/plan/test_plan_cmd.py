"""``evalpipe plan``: what the demo's plan can see, what a target MDE asks for, and the plans it writes."""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from evalpipe.cli.main import main
from evalpipe.selftest.controls import demo_config_path
from evalpipe.stats.power import assumed_noise, minimum_detectable_effect, sample_size_for_mde


def _cli(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_plan_prints_the_mde_now_and_writes_the_larger_plans(tmp_path: Path, capsys) -> None:
    out = tmp_path / "plans"
    assert _cli(["plan", str(demo_config_path()), "--mde", "20", "--write", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    noise = assumed_noise(0.5)  # nothing measured: the most conservative accuracy and discordance
    needed = sample_size_for_mde(0.20, noise, base_accuracy=0.5).n_needed
    assert needed is not None and needed > 12
    assert f"an MDE of 20 pts needs {needed} samples (population 12: not reachable)" in text
    at_all = minimum_detectable_effect(12, noise, base_accuracy=0.5)
    assert "gsm8k: n now 5 of N = 12" in text and "assumed discordance 2p(1-p) = 0.500" in text
    assert at_all.mde is None and "with all 12: this sample (12 samples) cannot detect a drop" in text
    assert "repeats are not credited" in text
    gsm = yaml.safe_load((out / "gsm8k.yaml").read_text())
    assert (gsm["total"], gsm["allocation"]) == (12, "uniform")  # capped at the population
    ceval = yaml.safe_load((out / "ceval.yaml").read_text())
    # the demo's C-Eval: one question per subject, 3 subjects of 4 questions (N = 12)
    assert "ceval: n now 3 of N = 12" in text
    assert ceval["per_stratum"] == math.ceil(min(needed, 12) / 3) == 4 and ceval["allow_short"] is True


def test_plan_refuses_a_non_positive_target(tmp_path: Path, capsys) -> None:
    assert _cli(["plan", str(demo_config_path()), "--mde", "0"]) == 2
    assert "--mde: must be a positive number of points" in capsys.readouterr().err
