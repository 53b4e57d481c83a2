"""The server-kind registry: ``server_kind(name)`` for every registered kind (``evalpipe.registry``).

Each built-in name (``evalpipe.server.kinds.BuiltinKind``) is the module ``evalpipe/server/kinds/<name>.py`` (or,
for a kind with a folder of its own, that folder's face ``<name>/__init__.py``), which declares ``KIND``; an installed package adds a kind with an entry point in the group
``evalpipe.server_kinds`` (``my_kind = "my_package.my_kind"``: the kind's name, the module declaring ``KIND``),
registered after the built-ins by name — the config's ``server.kind`` resolves to it and the pipeline asks it
like any other.  Loading refuses a module whose ``KIND`` is not a :class:`Kind` of that name, so a
registration cannot silently point at the wrong module, and an installed kind that takes a built-in name.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import MappingProxyType, ModuleType

from evalpipe.registry import Registered, Registry
from evalpipe.server.kinds import BUILTIN_KIND_NAMES, KIND_ENTRY_POINT_GROUP
from evalpipe.server.kinds.base import Kind

__all__ = ["Kind", "kinds", "server_kind"]

def _import_builtin(name: str) -> ModuleType:
    """A built-in kind's module: ``kinds/<name>.py``, or the face of a kind with a folder of its own
    (``kinds/<name>/__init__.py``, which offers the ``KIND`` its ``kind.py`` declares)."""
    return import_module(f"evalpipe.server.kinds.{name}")


def _build() -> Mapping[str, Kind]:
    """Every kind, in registry order, each as :meth:`Kind.with_members` makes it: a kind composing others
    (the router) holds this registry's lookup from its construction on."""
    plugins = Registry[Kind](
        sort="server kind",
        attribute="KIND",
        cls=Kind,
        name_of=lambda kind: kind.name,
        builtins=BUILTIN_KIND_NAMES,
        import_builtin=_import_builtin,
        group=KIND_ENTRY_POINT_GROUP,
    ).build()
    return MappingProxyType({name: kind.with_members(server_kind) for name, kind in plugins.items()})


#: Every registered kind by name (built on the first lookup).
_REGISTRY: Registered[Kind] = Registered("server kind", _build)


def server_kind(name: str) -> Kind:
    """The kind registered as ``name`` (KeyError naming the registered ones otherwise)."""
    return _REGISTRY[name]


def kinds() -> tuple[Kind, ...]:
    """Every registered kind, in registry order."""
    return tuple(_REGISTRY.values())
