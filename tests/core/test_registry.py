"""``Registry[T]`` (``evalpipe/registry.py``), the one way benchmarks and server kinds are found: the order
(built-ins, entry points by name, the environment's), and each refusal one line naming where it came from.
The entry-point paths are exercised with installed distributions in test_benchmark_entry_points.py and
test_server_kind_entry_points.py; here the environment and the built-ins, with synthetic plugin modules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import pytest

from evalpipe.errors import ConfigError
from evalpipe.registry import Registered, Registry

ENV = "EVALPIPE_TEST_PLUGIN_MODULES"


@dataclass(frozen=True)
class Widget:
    name: str


def _registry(builtins: tuple[str, ...] = ("alpha", "beta")) -> Registry[Widget]:
    return Registry(
        sort="widget",
        attribute="WIDGET",
        cls=Widget,
        name_of=lambda w: w.name,
        builtins=builtins,
        import_builtin=lambda name: import_module(f"widgets_builtin.{name}"),
        group="evalpipe.test_widgets_no_such_group",
        environment=ENV,
        module_named_after=True,
    )


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "widgets_builtin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    header = f"from {__name__} import Widget\n"
    for name in ("alpha", "beta"):
        (pkg / f"{name}.py").write_text(header + f"WIDGET = Widget({name!r})\n")
    (tmp_path / "gamma.py").write_text(header + "WIDGET = Widget('gamma')\n")
    (tmp_path / "misnamed.py").write_text(header + "WIDGET = Widget('alpha')\n")
    (tmp_path / "empty.py").write_text("WIDGET = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(ENV, raising=False)
    return tmp_path


def test_builtins_then_the_environments_modules_in_order(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert list(_registry().build()) == ["alpha", "beta"]
    monkeypatch.setenv(ENV, " gamma , ")
    built = _registry().build()
    assert list(built) == ["alpha", "beta", "gamma"] and built["gamma"] == Widget("gamma")


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ("widgets_builtin.alpha", "widget 'alpha' is registered twice (evalpipe; "
                                  f"{ENV}: widgets_builtin.alpha)"),
        ("no_such_widget", f"{ENV}: widget module 'no_such_widget' not found (is it on PYTHONPATH?)"),
        ("misnamed", f"{ENV}: module misnamed declares widget 'alpha'; it must declare WIDGET, a Widget named "
                     "'misnamed'"),
        ("empty", f"{ENV}: module empty declares no WIDGET (a Widget instance)"),
    ],
)  # fmt: skip
def test_a_bad_registration_is_one_line_naming_it(
    modules: Path, monkeypatch: pytest.MonkeyPatch, listed: str, message: str
) -> None:
    monkeypatch.setenv(ENV, listed)
    with pytest.raises(ConfigError, match=re.escape(message)):
        _registry().build()


def test_a_missing_dependency_of_a_plugin_is_not_mistaken_for_a_missing_plugin(
    modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (modules / "needs_dep.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.setenv(ENV, "needs_dep")
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        _registry().build()


def test_a_lookup_that_fails_names_what_is_registered(modules: Path) -> None:
    registered = Registered("widget", _registry().build)
    assert registered["beta"] == Widget("beta") and registered.get("delta") is None and len(registered) == 2
    with pytest.raises(KeyError, match=re.escape("no widget named 'delta' (registered: alpha, beta)")):
        registered["delta"]


def test_a_registry_is_built_once_on_the_first_lookup(modules: Path) -> None:
    builds: list[int] = []

    def build() -> dict[str, Widget]:
        builds.append(1)
        return dict(_registry().build())

    registered = Registered("widget", build)
    assert builds == []  # holding a registry loads no plugin
    assert registered["alpha"] == Widget("alpha") and list(registered) == ["alpha", "beta"]
    assert builds == [1]


def test_a_composing_kind_holds_the_registry_it_came_from_without_being_changed() -> None:
    from evalpipe.server.kinds.registry import server_kind
    from evalpipe.server.kinds.router import KIND as MODULE_ROUTER
    from evalpipe.server.kinds.router import RouterKind

    router = server_kind("router")
    assert isinstance(router, RouterKind) and router is not MODULE_ROUTER and router.kind_of("command") is server_kind("command")
    with pytest.raises(RuntimeError, match="ask the kind registry"):
        MODULE_ROUTER.kind_of("command")  # the module's own instance was never bound
