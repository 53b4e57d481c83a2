"""tools/mutants.py, the runner of ``make mutants``, on a tiny repository of its own (never the real list).

The fake repository has ``calc.py`` (``add`` tested, ``double`` not) and two mutants: one the test kills, one it
cannot.  The unit-tier tests run the runner with an in-process stand-in for pytest whose verdict comes from
the mutated copy's own code, so what is checked is the runner's part: the copy, the planted text, the
baseline, the classification of exit codes, the report and the exit status.  One integration test runs the
same repository through the real pytest subprocesses.  The real list is only loaded and checked for staleness
and for test ids that exist (a typo would otherwise show up as a runner error in ``make mutants`` only).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
mutants: Any = importlib.import_module("mutants")

CALC = "def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return x * 2\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
ADD_TEST = "tests/test_calc.py::test_add"


def _mutant_table(*entries: tuple[str, str, str]) -> str:
    """A mutant list over calc.py: (id, original, replacement), each to be killed by ``test_add``."""
    return "".join(
        f'[[mutant]]\nid = "{i}"\ndescription = "d"\nfile = "calc.py"\n'
        f'original = "{o}"\nreplacement = "{r}"\ntests = ["{ADD_TEST}"]\n\n'
        for i, o, r in entries
    )


def _fake_repo(root: Path, *entries: tuple[str, str, str]) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TEST_CALC)
    (root / "tools").mkdir()
    (root / "tools" / "mutants.toml").write_text(
        _mutant_table(*entries)
        if entries
        else _mutant_table(("add-subtracts", "a + b", "a - b"), ("double-adds", "x * 2", "x + 2"))
    )
    for skipped in (".venv", ".git", "results"):
        (root / skipped).mkdir()
        (root / skipped / "big").write_text("not code")
    return root


class InProcess:
    """pytest's part, in process: ``test_add`` fails (exit 1) when the copy's ``add(2, 3)`` is not 5; an id
    it does not know is a usage error (exit 4, as pytest's "file or directory not found")."""

    def __init__(self) -> None:
        self.copies: list[Path] = []
        self._lock = threading.Lock()

    def __call__(self, copy: Path, tests: Sequence[str], timeout_s: float) -> Any:
        with self._lock:
            self.copies.append(copy)
        assert (
            not (copy / ".venv").exists() and not (copy / ".git").exists() and not (copy / "results").exists()
        )
        calc = _load(copy / "calc.py")
        for test in tests:
            if test != ADD_TEST:
                return mutants.TestRun(4, None, 0.0, f"ERROR: not found: {test}")
            if calc.add(2, 3) != 5:
                return mutants.TestRun(1, test, 0.0, f"FAILED {test}")
        return mutants.TestRun(0, None, 0.0, "1 passed")


def _load(path: Path) -> ModuleType:
    """The copy's module under a name of its own (never cached in sys.modules: copies run side by side)."""
    spec = importlib.util.spec_from_file_location(f"calc_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(out: str) -> dict[str, list[str]]:
    return {
        line.split()[0]: line.split() for line in out.splitlines() if re.match(r"^[a-z-]+ +(yes|NO) ", line)
    }


def test_a_surviving_mutant_is_reported_and_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _fake_repo(tmp_path / "repo")
    runner = InProcess()
    assert mutants.main(["--jobs", "2"], root=repo, runner=runner) == 1
    rows = _rows(capsys.readouterr().out)
    assert rows["add-subtracts"][1:3] == ["yes", ADD_TEST]
    assert rows["double-adds"][1:3] == ["NO", "-"]
    assert len(runner.copies) == 3  # the baseline, then one fresh copy per mutant
    assert (repo / "calc.py").read_text() == CALC  # the working tree itself is never mutated
    assert not any(copy.exists() for copy in runner.copies)  # the copies are removed


def test_every_mutant_killed_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _fake_repo(tmp_path / "repo")
    assert mutants.main(["--only", "add-subtracts"], root=repo, runner=InProcess()) == 0
    assert "1/1 mutants killed" in capsys.readouterr().out


def test_a_stale_mutant_fails_before_any_test_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An original text that is gone, or occurs twice, fails the run loudly (exit 2), naming the mutant."""
    repo = _fake_repo(tmp_path / "repo", ("gone", "a * b", "a / b"), ("twice", "return", "yield"))
    runner = InProcess()
    assert mutants.main([], root=repo, runner=runner) == 2
    err = capsys.readouterr().err
    assert (
        "gone: its original text occurs 0 times" in err and "twice: its original text occurs 2 times" in err
    )
    assert runner.copies == []


def test_only_a_failing_test_run_is_a_kill(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pytest's exit 2-5 (interrupted, internal error, usage error, no tests) and a timeout are runner errors,
    not kills: a test id with a typo must not pass for a killed mutant."""
    assert [mutants.classify(mutants.TestRun(code, None, 0.0, "")) for code in (0, 1, 2, 3, 4, 5, None)] == [
        "survived",
        "killed",
        "error",
        "error",
        "error",
        "error",
        "error",
    ]
    repo = _fake_repo(tmp_path / "repo")
    calls: list[Sequence[str]] = []

    def usage_error_for_mutants(copy: Path, tests: Sequence[str], timeout_s: float) -> Any:
        calls.append(tests)
        return mutants.TestRun(0 if len(calls) == 1 else 4, None, 0.1, "ERROR: file or directory not found")

    assert mutants.main(["--jobs", "1"], root=repo, runner=usage_error_for_mutants) == 1
    rows = _rows(capsys.readouterr().out)
    assert rows["add-subtracts"][1:6] == ["NO", "runner", "error:", "pytest", "exit"]


def test_the_tests_must_pass_unmutated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _fake_repo(tmp_path / "repo")
    (repo / "calc.py").write_text(CALC.replace("a + b", "a + b + 1"))  # the tree itself is broken
    runner = InProcess()
    assert mutants.main([], root=repo, runner=runner) == 2
    assert "do not pass unmutated" in capsys.readouterr().err and len(runner.copies) == 1


def test_a_malformed_list_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    good = _mutant_table(("a", "x", "y"))
    for bad in (
        good.replace('tests = ["' + ADD_TEST + '"]', "tests = []"),
        good.replace('description = "d"\n', ""),
        good + 'extra = "field"\n',
        good + good,  # a duplicate id
        good.replace('replacement = "y"', 'replacement = "x"'),
    ):
        path.write_text(bad)
        with pytest.raises(mutants.MutantListError):
            mutants.load_mutants(path)
    path.write_text(good)
    (loaded,) = mutants.load_mutants(path)
    assert (loaded.id, loaded.original, loaded.replacement, loaded.tests) == ("a", "x", "y", (ADD_TEST,))


def test_the_real_list_is_current_and_names_tests_that_exist() -> None:
    """Loading tools/mutants.toml and looking its texts and test ids up (nothing is run): every original text
    occurs once, every test id names a file under tests/ and, with ``::``, a function defined there."""
    listed = mutants.load_mutants(REPO / "tools" / "mutants.toml")
    assert mutants.stale(REPO, listed) == []
    for test in mutants.union_of_tests(listed):
        file, _, name = test.partition("::")
        assert file.startswith("tests/") and (REPO / file).is_file(), test
        if name:
            assert re.search(rf"^def {re.escape(name.split('[')[0])}\(", (REPO / file).read_text(), re.M), (
                test
            )


# by hand: the runner starts pytest in a subprocess (tools/mutants.run_pytest, reached through main's default
# runner: the static scan does not follow into tools/)
@pytest.mark.integration
def test_the_real_pytest_kills_one_mutant_and_not_the_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _fake_repo(tmp_path / "repo")
    assert mutants.main(["--timeout", "60"], root=repo) == 1
    rows = _rows(capsys.readouterr().out)
    assert rows["add-subtracts"][1:3] == ["yes", ADD_TEST]
    assert rows["double-adds"][1:3] == ["NO", "-"]
