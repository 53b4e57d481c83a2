"""The server-kind registry: ``server_kind(name)`` for every name of ``KIND_NAMES``.

Each built-in name (``evalpipe.server.kinds.BuiltinKind``) is the module
``evalpipe/server/kinds/<name>.py``, which declares ``KIND``; an installed package adds a kind with an entry
point in the group ``evalpipe.server_kinds`` (``my_kind = "my_package.my_kind"``: the kind's name, the module
declaring ``KIND``), registered after the built-ins by name — the config's ``server.kind`` accepts it and the
pipeline asks it like any other.  Loading refuses a module whose ``KIND`` is not a :class:`Kind` of that name,
so a registration cannot silently point at the wrong module, and an installed kind that takes a built-in name.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType

from evalpipe.errors import ConfigError
from evalpipe.server.kinds import BUILTIN_KIND_NAMES, KIND_ENTRY_POINT_GROUP, KIND_NAMES
from evalpipe.server.kinds.base import Kind

__all__ = ["Kind", "kinds", "server_kind"]


def _installed() -> dict[str, EntryPoint]:
    """Installed packages' kinds (``evalpipe.server_kinds`` entry points), by name."""
    return {ep.name: ep for ep in entry_points(group=KIND_ENTRY_POINT_GROUP)}


def _load(name: str, installed: dict[str, EntryPoint]) -> Kind:
    if name in BUILTIN_KIND_NAMES:
        if name in installed:
            ep = installed[name]
            raise ConfigError(
                f"entry point {KIND_ENTRY_POINT_GROUP}:{name} of {ep.dist.name if ep.dist else 'a package'}: "
                f"{name!r} is a built-in server kind; an installed kind needs a name of its own"
            )
        where = f"evalpipe/server/kinds/{name}.py"
        kind = getattr(import_module(f"evalpipe.server.kinds.{name}"), "KIND", None)
    else:
        ep = installed[name]
        where = f"entry point {KIND_ENTRY_POINT_GROUP}:{name} of {ep.dist.name if ep.dist else 'a package'}"
        if ep.attr:
            raise ConfigError(f"{where}: the value must be the module declaring KIND, got {ep.value!r}")
        kind = getattr(_installed_module(ep.module, where), "KIND", None)
    if not isinstance(kind, Kind) or kind.name != name:
        raise ConfigError(f"{where} must declare KIND, a Kind named {name!r}")
    return kind


def _installed_module(module: str, where: str) -> ModuleType:
    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise ConfigError(
                f"{where}: module {module!r} not found (is its package installed whole?)"
            ) from None
        raise


_INSTALLED = _installed()
_REGISTRY: dict[str, Kind] = {name: _load(name, _INSTALLED) for name in KIND_NAMES}


def server_kind(name: str) -> Kind:
    """The kind registered as ``name`` (KeyError naming the registered ones otherwise)."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no server kind named {name!r} (registered: {', '.join(_REGISTRY)})") from None


def kinds() -> tuple[Kind, ...]:
    """Every registered kind, in registry order."""
    return tuple(_REGISTRY.values())


for _kind in _REGISTRY.values():  # composite kinds (the router) look their members' kinds up here
    _kind.bind_registry(server_kind)
