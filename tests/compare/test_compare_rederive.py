"""The committed SGLang run's ``compare.json`` is re-derived byte for byte by the command the README names beside
its figures (``evalpipe compare`` with the A/A arm and the run's config), from the three recorded arms."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from fixtures_rundir import run_cli

from evalpipe.compare import Arms
from evalpipe.compare.asked import aa_pair_beside

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "perf" / "results" / "sglang_h100_20261206"
COMMAND = re.compile(r"^evalpipe compare perf/results/sglang_h100_20261206/.*?(?<!\\)$", re.M | re.S)


def readme_command() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = COMMAND.findall(text)
    assert len(found) == 1, "the README names one command that re-derives the SGLang run's compare.json"
    return shlex.split(found[0].replace("\\\n", " "))


def test_the_readme_command_re_derives_the_committed_compare_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = readme_command()
    assert args[:2] == ["evalpipe", "compare"] and "--aa" in args and "--out" not in args
    monkeypatch.chdir(REPO)  # the command is run from the repository's root, as the README shows it
    before = {p: p.stat().st_mtime_ns for p in RUN.rglob("*")}
    assert run_cli([*args[1:], "--out", str(tmp_path)]) == 0
    assert (tmp_path / "compare.json").read_bytes() == (RUN / "compare.json").read_bytes()
    assert {p: p.stat().st_mtime_ns for p in RUN.rglob("*")} == before  # nothing written beside the arms


def test_without_the_aa_arm_the_mde_is_the_ab_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same command without ``--aa``: the MDE and the operating characteristic come from the A/B
    discordance (the committed figure needs the A/A arm)."""
    args = readme_command()
    i = args.index("--aa")
    monkeypatch.chdir(REPO)
    assert run_cli([*args[1:i], *args[i + 2 :], "--out", str(tmp_path)]) == 0

    def probe(path: Path) -> dict[str, object]:
        blocks = json.loads(path.read_text(encoding="utf-8"))["benchmarks"]
        found: dict[str, object] = next(b for b in blocks if b["benchmark"] == "kv_probe")
        return found

    committed, alone = probe(RUN / "compare.json"), probe(tmp_path / "compare.json")
    assert committed["noise_vs_ab"] is not None and alone["noise_vs_ab"] is None
    assert isinstance(committed["mde_pts"], float) and isinstance(alone["mde_pts"], float)
    assert round(committed["mde_pts"], 1) == 5.3 and alone["mde_pts"] > committed["mde_pts"] + 1


def test_config_and_a_margin_are_refused_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    args = [*readme_command()[1:], "--margin", "3", "--out", str(tmp_path)]
    assert run_cli(args) == 2
    assert capsys.readouterr().err.strip().splitlines()[0] == (
        "error: --config judges by the config's gates: drop --margin (or --config)"
    )
    assert not (tmp_path / "compare.json").exists()


def test_the_aa_arm_repeats_the_arm_its_repeat_of_names() -> None:
    """kv_bf16_again records ``repeat_of: kv_bf16``: beside kv_fp8 vs kv_bf16 it repeats the control, beside
    kv_bf16 vs kv_fp8 (the same runs swapped) the arm under test."""
    again = RUN / "kv_bf16_again"
    fp8, bf16 = RUN / "kv_fp8", RUN / "kv_bf16"
    assert aa_pair_beside(again, Arms(fp8, bf16)).of == bf16
    assert aa_pair_beside(again, Arms(bf16, fp8)).of == bf16
    assert aa_pair_beside(again, Arms(fp8, again)).of == again  # it names neither arm: the control
