"""The two test tiers, decided from what a test uses (``tests/conftest.py`` applies them).

A test is **integration** when it starts another process: a server process, the EvalScope worker, the
recorder behind the recording proxy, a sandbox (bwrap/unshare), the router, a nested pytest, or any other
subprocess.  Everything else — including a server the test runs *in its own process* (an aiohttp app on a
thread, ``ScriptedServer``, ``AnswerKey``) — is the **unit tier**, which ``make test-fast`` runs.

How it is decided, per collected test:

1. **Fixtures** — every fixture in the test's closure (pytest resolves it transitively) whose function lives
   under ``tests/`` is scanned as in 2; ``pytester`` (a nested pytest) is integration by itself.
2. **Static scan** — the test function's AST, and transitively every module-level function or class of the
   test module and of the helper modules (``tests/helpers/``, ``tests/*.py`` that are not test modules) that
   it refers to, is searched for the names in ``INTEGRATION_ENTRY_POINTS`` (resolved through the module's
   imports, so ``from evalpipe.run import pipeline; pipeline.run(...)`` is ``evalpipe.run.pipeline.run``).
3. **By hand** — ``@pytest.mark.integration`` where neither can see it (say why beside the mark).

The scan cannot follow calls into ``evalpipe`` itself, so the list names the product's entry points that
start processes.  ``install_guard`` makes the rule honest at run time: while a unit-tier test is set up and
called (not in its tear-down, where pytest also ends earlier tests' module fixtures), starting a process raises ``UnitTierProcessError`` and fails the test with one line
naming what started it — a test the scan missed cannot sit in the fast tier unnoticed; add the entry point
it went through to ``INTEGRATION_ENTRY_POINTS``.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import multiprocessing.process
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any, Literal

from helpers.source_trees import parsed

TESTS = Path(__file__).resolve().parents[1]

#: Dotted names (as imported by a test or helper) that start a process, and what they start.  A reference to
#: one of these — or to an attribute of it (``WorkerProcess.start``) — makes the test integration.
INTEGRATION_ENTRY_POINTS: dict[str, str] = {
    # any subprocess
    "subprocess.run": "a subprocess",
    "subprocess.Popen": "a subprocess",
    "subprocess.call": "a subprocess",
    "subprocess.check_call": "a subprocess",
    "subprocess.check_output": "a subprocess",
    "subprocess.getoutput": "a subprocess",
    "subprocess.getstatusoutput": "a subprocess",
    "asyncio.create_subprocess_exec": "a subprocess",
    "asyncio.create_subprocess_shell": "a subprocess",
    "os.fork": "a forked process",
    "os.system": "a shell",
    "os.popen": "a shell",
    "multiprocessing.Process": "a process",
    "evalpipe.processes.group.spawn": "a process group",
    # servers as processes
    "evalpipe.server.lifecycle.managed_server": "a server process",
    "evalpipe.engines.llamacpp.spawn": "llama.cpp",
    "evalpipe.engines.llamacpp.main": "llama.cpp",
    "evalpipe.recording.proxy.recording_proxy": "the recorder process",
    "evalpipe.server.kinds.router.launcher.RouterProcess": "the router",
    # the EvalScope worker and everything that runs it
    "evalpipe.evalscope_bridge.runner.WorkerProcess": "the EvalScope worker",
    "evalpipe.evalscope_bridge.prestart.prestart": "the EvalScope worker, started before the run",
    "evalpipe.evalscope_bridge.stage.run_evalscope": "the EvalScope worker",
    "evalpipe.run.pipeline.run": "a pipeline run (server, recorder, EvalScope worker)",
    "evalpipe.run.runner.execute": "a pipeline run (server, recorder, EvalScope worker)",
    "evalpipe.run.variants.run_variants": "a pipeline run (server, recorder, EvalScope worker)",
    "evalpipe.run.parallel_variants.run_at_once": "variant processes",
    "evalpipe.run.selftest.run_selftest": "a pipeline run (server, recorder, EvalScope worker)",
    "evalscope.run_task": "an EvalScope run",
    "evalscope.run.run_task": "an EvalScope run",
    # server preflight: SGLang probed in a child, nvidia-smi
    "evalpipe.server.kinds.sglang.env.probe_sglang": "SGLang probed in a child process",
    "evalpipe.server.kinds.sglang.env.dry_parse": "SGLang's argument parser in a child process",
    "evalpipe.server.gpus.query_gpus": "nvidia-smi",
    "evalpipe.server.gpus.cuda_version": "nvidia-smi",
    "evalpipe.server.preflight.run_preflight": "SGLang probed in a child process, nvidia-smi",
    "evalpipe.server.kinds.sglang.raw_fp8.check_raw_fp8_rules": "nvidia-smi",
    "evalpipe.run.provenance.run_component_tests": "a nested pytest",
    "evalpipe.run.provenance.run_component_test": "a nested pytest",
    "evalpipe.artifacts.source_git.git_info": "git",
    "evalpipe.artifacts.source_git.package_source": "git",
    "evalpipe.run.provenance.collect_provenance": "git, a server kind's engine probed in a child process",
    # the speed benchmark's client rounds are processes
    "evalpipe.speed.run.run_speed": "speed client processes",
    "evalpipe.speed.run.run_speed_alternating": "speed client processes",
    "evalpipe.speed.run.run_round": "a speed client process",
    "evalpipe.speed.run.speed_command": "speed client processes",
    "evalpipe.speed.stage.run_speed_stage": "speed client processes",
    "helpers.speed_client.StandInClient": "the stand-in speed client, a process per round",
    # the sandbox
    "evalpipe.sandbox.launcher.ProgramLauncher": "a sandbox",
    "evalpipe.sandbox.run.run_sandboxed": "a sandbox",
    "evalpipe.sandbox.run.wrap": "a sandbox",
    # probed by running a trivial program in the sandbox, once per process (functools.cache): a unit-tier
    # test that found the cache warm would pass only by the order of the run
    "evalpipe.sandbox.probe.probe": "bwrap/unshare probed",
    "evalpipe.sandbox.probe.resolve": "bwrap/unshare probed",
    "evalpipe.sandbox.probe.preflight_line": "bwrap/unshare probed",
    # a real browser for the explorer's tests (Chromium, and Playwright's driver process)
    "helpers.browser.chromium": "Chromium (headless)",
    "playwright.sync_api.sync_playwright": "Playwright's driver and a browser",
    # EvalScope's own scoring: math_verify runs in a process of its own (evalscope/metrics/math/isolation.py)
    "evalscope.api.registry.get_benchmark": "EvalScope's scoring (math_verify in a child process)",
}

#: ``evalpipe`` commands that start processes, for a test that calls the CLI in-process with a literal argv
#: (``main(["server", "preflight", …])``): the scan sees the words, not the command's code.
INTEGRATION_COMMANDS: dict[tuple[str, ...], str] = {
    ("run",): "a pipeline run",
    ("demo",): "a pipeline run",
    ("selftest",): "a pipeline run",
    ("speed",): "speed client processes",
    ("replay",): "the EvalScope worker",
    ("reproduce",): "the EvalScope worker",
    ("server", "preflight"): "SGLang probed in a child process, nvidia-smi",
    ("server", "command"): "SGLang probed in a child process",
}
#: The in-process ways tests call the CLI: the first argument is the argv.
CLI_CALLS = ("evalpipe.cli.main.main", "fixtures_rundir.run_cli")

#: Fixtures that are integration by themselves (not defined under tests/, so not scanned).
INTEGRATION_FIXTURES: dict[str, str] = {"pytester": "a nested pytest", "testdir": "a nested pytest"}

Source = Literal["scan", "fixture"]


@dataclass(frozen=True)
class Finding:
    """Why a test is integration: ``source`` (its own code or a fixture) and the path to the entry point."""

    source: Source
    path: tuple[str, ...]

    def describe(self) -> str:
        return " -> ".join(self.path)


# ---- the static scan ----------------------------------------------------------------------------------


@dataclass
class _Module:
    name: str  # import name as tests see it: "test_x", "helpers.config", "scripted_server"
    imports: dict[str, str]  # local name -> dotted origin
    defs: dict[str, ast.AST]  # qualified name within the module ("f", "C", "C.m") -> node


def _module_name(path: Path) -> str | None:
    try:
        rel = path.resolve().relative_to(TESTS)
    except ValueError:
        return None
    return ".".join(rel.with_suffix("").parts)


@cache
def _load(path: str) -> _Module | None:
    name = _module_name(Path(path))
    if name is None or not Path(path).is_file():
        return None
    tree = parsed(path)
    imports: dict[str, str] = {}
    defs: dict[str, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    imports[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs[node.name] = node
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                        defs[f"{node.name}.{sub.name}"] = sub
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    defs[target.id] = node
    return _Module(name, imports, defs)


def _helper_path(dotted_module: str) -> Path | None:
    """``helpers.server_process`` -> tests/helpers/server_process.py, for helper modules under tests/."""
    path = TESTS.joinpath(*dotted_module.split(".")).with_suffix(".py")
    return path if path.is_file() and not path.name.startswith("test_") else None


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _references(node: ast.AST) -> Iterator[list[str]]:
    """Every name or attribute chain ``node`` refers to, outside annotations (``x: Popen`` starts nothing)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, ast.Attribute | ast.Name):
            chain = _dotted(cur)
            if chain is not None:
                yield chain
                continue
        for field, value in ast.iter_fields(cur):
            if field in ("annotation", "returns"):
                continue
            children = value if isinstance(value, list) else [value]
            stack.extend(child for child in children if isinstance(child, ast.AST))


def _entry_point(dotted: str) -> str | None:
    """The entry point ``dotted`` is, or is an attribute of (``WorkerProcess.start``)."""
    parts = dotted.split(".")
    for cut in range(1, len(parts) + 1):
        if ".".join(parts[:cut]) in INTEGRATION_ENTRY_POINTS:
            return ".".join(parts[:cut])
    return None


def _cli_command(mod: _Module, node: ast.AST) -> str | None:
    """``evalpipe <words>`` when ``node`` calls the CLI in-process with a literal argv naming a command in
    ``INTEGRATION_COMMANDS``."""
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not call.args or not isinstance(call.args[0], ast.List):
            continue
        chain = _dotted(call.func)
        if chain is None or chain[0] not in mod.imports:
            continue
        if ".".join([mod.imports[chain[0]], *chain[1:]]) not in CLI_CALLS:
            continue
        words: list[str] = []
        for element in call.args[0].elts:
            if not isinstance(element, ast.Constant) or not isinstance(element.value, str):
                break
            words.append(element.value)
        for command in INTEGRATION_COMMANDS:
            if tuple(words[: len(command)]) == command:
                return f"evalpipe {' '.join(command)}"
    return None


Def = tuple[str, str]  # (module path, qualified name in the module)


@cache
def _edges(path: str, qualname: str) -> tuple[str | None, tuple[Def, ...]]:
    """What one def refers to: the first entry point (or integration CLI command) it names itself, and the
    module-level defs of its own module and of helper modules it refers to (a method: its class too)."""
    mod = _load(path)
    if mod is None or qualname not in mod.defs:
        return None, ()
    node = mod.defs[qualname]
    command = _cli_command(mod, node)
    if command is not None:
        return command, ()
    successors: list[Def] = []
    for chain in _references(node):
        head, rest = chain[0], chain[1:]
        if head in mod.imports:
            entry = _entry_point(".".join([mod.imports[head], *rest]))
            if entry is not None:
                return entry, ()
            origin = mod.imports[head].split(".")  # a helper module's function or class?
            for cut in range(len(origin), 0, -1):
                helper = _helper_path(".".join(origin[:cut]))
                if helper is not None:
                    inner = [*origin[cut:], *rest]
                    if inner and inner[0] in (_load(str(helper)) or mod).defs:
                        successors.append((str(helper), inner[0]))
                    break
        elif head in mod.defs:  # a def of this module (a class's node holds its methods)
            successors.append((path, head))
    if "." in qualname:  # a method reaches what its class's other methods do (``self._start()``)
        successors.append((path, qualname.split(".")[0]))
    return None, tuple(dict.fromkeys(successors))


def _scan(path: str, qualname: str, seen: set[Def]) -> tuple[str, ...] | None:
    """The path from ``qualname`` in module ``path`` to an entry point, or None."""
    if (path, qualname) in _COMPLETE:
        return _COMPLETE[(path, qualname)]
    if (path, qualname) in seen:
        return None
    seen.add((path, qualname))
    mod = _load(path)
    if mod is None:
        return None
    here = f"{mod.name}.{qualname}"
    direct, successors = _edges(path, qualname)
    if direct is not None:
        return (here, direct)
    for successor in successors:
        found = _scan(*successor, seen)
        if found is not None:
            return (here, *found)
    return None


#: Results of scans started from a def itself (not cut short by a cycle through a caller), reused.
_COMPLETE: dict[Def, tuple[str, ...] | None] = {}


def _function_path(func: Callable[..., Any]) -> tuple[str, str] | None:
    func = inspect.unwrap(func)
    try:
        source = inspect.getsourcefile(func)
    except TypeError:
        return None
    if source is None:
        return None
    qualname = getattr(func, "__qualname__", "")
    if "<locals>" in qualname:
        return None
    return source, qualname


def scan_def(path: Path, qualname: str) -> tuple[str, ...] | None:
    """The path from the function or class ``qualname`` of the module at ``path`` (under tests/) to an
    integration entry point, or None."""
    key = (str(path), qualname)
    if key not in _COMPLETE:
        _COMPLETE[key] = _scan(*key, set())
    return _COMPLETE[key]


#: Scans as lists (JSON), by ``path::qualname``; None: no entry point reached.
Scans = dict[str, list[str] | None]


def sources_digest() -> str:
    """sha256 over every Python file under tests/ (its path and bytes): all a scan reads — the test modules,
    the helpers and this module's entry points — so equal digests mean equal scans."""
    digest = hashlib.sha256()
    for path in sorted(TESTS.rglob("*.py")):
        if "__pycache__" not in path.parts:
            digest.update(f"{path}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def remembered_scans() -> Scans:
    """The complete scans made so far (``scan_def``'s), for ``recall_scans`` in a later session."""
    return {
        f"{path}::{qualname}": (list(found) if found is not None else None)
        for (path, qualname), found in _COMPLETE.items()
    }


def recall_scans(scans: Scans) -> None:
    """Scans a session made over the same sources (``sources_digest``), so this one need not walk the trees
    again: a quarter to half of each pytest process's collection."""
    for key, found in scans.items():
        path, _, qualname = key.partition("::")
        _COMPLETE.setdefault((path, qualname), tuple(found) if found is not None else None)


def scan_function(func: Callable[..., Any]) -> tuple[str, ...] | None:
    """The path from a test or fixture function under tests/ to an integration entry point, or None."""
    where = _function_path(func)
    if where is None:
        return None
    return scan_def(Path(where[0]), where[1])


def classify(
    func: Callable[..., Any] | None, fixtures: dict[str, Callable[..., Any] | None]
) -> Finding | None:
    """Why a test (its function and the functions of the fixtures in its closure) is integration, or None
    for a unit-tier test."""
    if func is not None:
        path = scan_function(func)
        if path is not None:
            return Finding("scan", path)
    for name, fixture in sorted(fixtures.items()):
        if name in INTEGRATION_FIXTURES:
            return Finding("fixture", (f"fixture {name}", INTEGRATION_FIXTURES[name]))
        if fixture is None:
            continue
        path = scan_function(fixture)
        if path is not None:
            return Finding("fixture", (f"fixture {name}", *path))
    return None


# ---- the run-time guard --------------------------------------------------------------------------------


class UnitTierProcessError(RuntimeError):
    """A unit-tier test started a process."""


def _caller() -> str:
    """Where the process was asked for: the innermost frame outside the standard library and this module,
    and the innermost frame in the tests (``tests/…``) that led there."""
    stdlib = os.path.dirname(os.__file__)
    frame: FrameType | None = sys._getframe(2)
    where: list[str] = []
    while frame is not None:
        filename = frame.f_code.co_filename
        outside = not filename.startswith(stdlib) and filename != __file__
        if outside and (not where or filename.startswith(str(TESTS))):
            where.append(f"{filename}:{frame.f_lineno} ({frame.f_code.co_name})")
            if filename.startswith(str(TESTS)):
                break
        frame = frame.f_back
    return ", reached from ".join(where) or "unknown caller"


@contextmanager
def install_guard(test_id: str, violations: list[str]) -> Iterator[None]:
    """While active, every process start raises ``UnitTierProcessError`` (and is appended to
    ``violations``, so a test that swallows the exception still fails)."""
    patched: list[tuple[Any, str, Any]] = []

    def refuse(what: str) -> Callable[..., Any]:
        def guard(*args: Any, **kwargs: Any) -> Any:
            line = (
                f"{test_id} started a subprocess ({what}, from {_caller()}) but is in the unit tier: add the "
                "entry point it went through to INTEGRATION_ENTRY_POINTS (tests/helpers/tiers.py), used by "
                "tests/conftest.py"
            )
            violations.append(line)
            raise UnitTierProcessError(line)

        return guard

    targets: list[tuple[Any, str, str]] = [
        (subprocess.Popen, "_execute_child", "subprocess.Popen"),
        (os, "fork", "os.fork"),
        (os, "forkpty", "os.forkpty"),
        (os, "system", "os.system"),
        (os, "posix_spawn", "os.posix_spawn"),
        (os, "posix_spawnp", "os.posix_spawnp"),
        (multiprocessing.process.BaseProcess, "start", "multiprocessing"),
    ]
    for owner, attr, what in targets:
        if hasattr(owner, attr):
            patched.append(
                (owner, attr, owner.__dict__[attr] if attr in owner.__dict__ else getattr(owner, attr))
            )
            setattr(owner, attr, refuse(what))
    try:
        yield
    finally:
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)
