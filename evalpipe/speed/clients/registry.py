"""The speed-client registry: ``speed_client(name)`` for every registered client (``evalpipe.registry``).

A client is a module of this package declaring ``CLIENT``, a :class:`~evalpipe.speed.clients.base.ClientPlugin`
(its name and how a run makes one); an installed package adds one with an entry point in the group
``evalpipe.speed_clients`` (``my_client = "my_package.my_client"``), registered after the built-ins by name, and
``speed.client: my_client`` resolves to it.  ``evalpipe.speed.run`` asks the registry and never names a client.
Built on the first lookup, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import ModuleType

from evalpipe.registry import Registered, Registry
from evalpipe.speed.clients.base import ClientPlugin

#: The built-in clients in registry order, each the module declaring its ``CLIENT``.
BUILTIN_CLIENT_MODULES = {"sglang": "sglang_bench", "evalscope": "evalscope_perf"}
CLIENT_ENTRY_POINT_GROUP = "evalpipe.speed_clients"

__all__ = ["BUILTIN_CLIENT_MODULES", "CLIENT_ENTRY_POINT_GROUP", "clients", "speed_client"]


def _import_builtin(name: str) -> ModuleType:
    return import_module(f"evalpipe.speed.clients.{BUILTIN_CLIENT_MODULES[name]}")


def _build() -> Mapping[str, ClientPlugin]:
    return Registry(
        sort="speed client",
        attribute="CLIENT",
        cls=ClientPlugin,
        name_of=lambda plugin: plugin.name,
        builtins=tuple(BUILTIN_CLIENT_MODULES),
        import_builtin=_import_builtin,
        group=CLIENT_ENTRY_POINT_GROUP,
    ).build()


_REGISTRY: Registered[ClientPlugin] = Registered("speed client", _build)


def speed_client(name: str) -> ClientPlugin:
    """The client registered as ``name`` (KeyError naming the registered ones otherwise)."""
    return _REGISTRY[name]


def clients() -> tuple[ClientPlugin, ...]:
    """Every registered client, in registry order."""
    return tuple(_REGISTRY.values())
