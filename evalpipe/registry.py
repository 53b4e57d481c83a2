"""One registry for every kind of plugin: benchmarks and server kinds, found the same way.

A plugin is a module declaring one object under a fixed name (``BENCHMARK``, ``KIND``) — an instance of the
plugin's class carrying its own name.  ``Registry[T]`` collects them, in this order:

1. the built-ins, each a module of evalpipe, in the order given (the order the config schema lists them);
2. installed packages' entry points in the registry's group (``[project.entry-points."evalpipe.benchmarks"]
   my_bench = "my_evals.my_bench"``: the name is the plugin's, the value the module declaring the object),
   by name — installing the package is all it takes, in every process;
3. for a registry that has one, the modules an environment variable lists (comma-separated import paths), in
   that order, for a module that is not installed.

Every refusal is one ``ConfigError`` line naming where the registration came from: a module that is missing,
declares nothing or declares a plugin of another name, an entry point whose value is not a module, an
installed plugin taking a built-in's name, a name registered twice.  A registry's owner
(``evalpipe.benchmarks``, ``evalpipe.server.kinds.registry``) holds it as :class:`Registered`, built once, on
the first lookup: importing the owner loads no plugin, and a bad registration fails the first command that
asks for one.

This module imports nothing of evalpipe but ``errors``: the registries' owners sit in the plugin layer and
hand it their class and modules.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
from types import MappingProxyType, ModuleType
from typing import Generic, TypeVar, cast

from evalpipe.errors import ConfigError

T = TypeVar("T")


@dataclass(frozen=True)
class Registration:
    """Where a plugin module was named: ``origin`` for messages, ``module`` to import (a built-in's: its name,
    imported by the owner), ``name`` it must have (None: whatever the module declares, for a module an
    environment variable lists)."""

    origin: str
    module: str
    name: str | None
    builtin: bool = False


class Registry(Generic[T]):
    """Plugins of one sort (``sort``: "benchmark", "server kind") by name, in registration order.

    ``attribute``: the name each plugin module declares its object under; ``cls``: the object's class (abstract, often: hence ``type``);
    ``name_of``: the name an object carries; ``builtins``: the built-ins' names, in order, and
    ``import_builtin`` the owner's import of one (``import_module(f"evalpipe.benchmarks.{name}")``: written in
    the owner, where the import graph's walk reads it); ``group``: the entry-point group; ``environment``: the
    variable listing extra modules (None: none); ``module_named_after``: whether a module's last component
    must be its plugin's name.
    """

    def __init__(
        self,
        *,
        sort: str,
        attribute: str,
        cls: type,
        name_of: Callable[[T], str],
        builtins: Sequence[str],
        import_builtin: Callable[[str], ModuleType],
        group: str,
        environment: str | None = None,
        module_named_after: bool = False,
    ) -> None:
        self.sort, self.attribute, self.cls, self.name_of = sort, attribute, cls, name_of
        self.builtins, self.import_builtin = tuple(builtins), import_builtin
        self.group, self.environment = group, environment
        self.module_named_after = module_named_after

    # ------------------------------------------------------------------ where plugins are named
    def registrations(self) -> list[Registration]:
        """Every registration in order: the built-ins, the installed entry points by name, the environment's."""
        out = [Registration("evalpipe", name, name, builtin=True) for name in self.builtins]
        builtin_names = set(self.builtins)
        for ep in sorted(entry_points(group=self.group), key=lambda ep: ep.name):
            dist = ep.dist.name if ep.dist is not None else "an installed package"
            origin = f"entry point {self.group}:{ep.name} of {dist}"
            if ep.name in builtin_names:
                raise ConfigError(
                    f"{origin}: {ep.name!r} is a built-in {self.sort}; an installed {self.sort} needs a name "
                    "of its own"
                )
            if ep.attr or (self.module_named_after and ep.name != ep.module.rpartition(".")[2]):
                named = f", named after the {self.sort}" if self.module_named_after else ""
                raise ConfigError(
                    f"{origin}: the value must be the module declaring {self.attribute}{named} "
                    f'(e.g. {ep.name} = "my_package.{ep.name}"), got {ep.value!r}'
                )
            out.append(Registration(origin, ep.module, ep.name))
        if self.environment is not None:
            listed = [p.strip() for p in os.environ.get(self.environment, "").split(",") if p.strip()]
            out += [Registration(self.environment, path, None) for path in listed]
        return out

    # ------------------------------------------------------------------ loading
    def _module(self, reg: Registration) -> ModuleType:
        if reg.builtin:
            return self.import_builtin(reg.module)
        try:  # an installed package's module or one the environment lists: never an evalpipe module
            return import_module(reg.module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (reg.module == exc.name or reg.module.startswith(exc.name + ".")):
                where = (
                    "is it on PYTHONPATH?"
                    if reg.origin == self.environment
                    else "is its package installed whole?"
                )
                raise ConfigError(
                    f"{reg.origin}: {self.sort} module {reg.module!r} not found ({where})"
                ) from None
            raise

    def _declared(self, reg: Registration) -> T:
        found = getattr(self._module(reg), self.attribute, None)
        if not isinstance(found, self.cls):
            raise ConfigError(
                f"{reg.origin}: module {reg.module} declares no {self.attribute} (a {self.cls.__name__} instance)"
            )
        obj = cast(T, found)
        declared = self.name_of(obj)
        expected = reg.name
        if expected is None and self.module_named_after:
            expected = reg.module.rpartition(".")[2]
        if expected is not None and declared != expected:
            raise ConfigError(
                f"{reg.origin}: module {reg.module} declares {self.sort} {declared!r}; it must declare "
                f"{self.attribute}, a {self.cls.__name__} named {expected!r}"
            )
        return obj

    def build(self) -> Mapping[str, T]:
        """Every plugin by name, in registration order (read-only); ConfigError on a bad registration."""
        found: dict[str, T] = {}
        where: dict[str, str] = {}
        for reg in self.registrations():
            obj = self._declared(reg)
            name = self.name_of(obj)
            if name in found:
                also = f"{reg.origin}: {reg.module}" if reg.origin == self.environment else reg.origin
                raise ConfigError(f"{self.sort} {name!r} is registered twice ({where[name]}; {also})")
            found[name], where[name] = obj, reg.origin
        return MappingProxyType(found)


class Registered(Mapping[str, T]):
    """A registry as its owner holds it: a read-only mapping, ``build`` called once, on the first lookup
    (a failed build is not kept: the next lookup fails the same way); a failed lookup names what is
    registered."""

    def __init__(self, sort: str, build: Callable[[], Mapping[str, T]]) -> None:
        self.sort, self._build = sort, build
        self._built: Mapping[str, T] | None = None

    @property
    def _plugins(self) -> Mapping[str, T]:
        if self._built is None:
            self._built = self._build()
        return self._built

    def __getitem__(self, name: str) -> T:
        plugins = self._plugins
        try:
            return plugins[name]
        except KeyError:
            raise KeyError(f"no {self.sort} named {name!r} (registered: {', '.join(plugins)})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._plugins)

    def __len__(self) -> int:
        return len(self._plugins)
