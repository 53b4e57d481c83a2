"""The server-kind registry: ``server_kind(name)`` for every name of ``ServerKind``.

Each name of the ``ServerKind`` literal (``evalpipe.server.kinds``) is the module
``evalpipe/server/kinds/<name>.py``, which declares ``KIND``; loading refuses a module whose ``KIND`` is not
a :class:`Kind` of that name, so a registration cannot silently point at the wrong module.
"""

from __future__ import annotations

from importlib import import_module

from evalpipe.server.kinds import KIND_NAMES
from evalpipe.server.kinds.base import Kind

__all__ = ["Kind", "kinds", "server_kind"]


def _load(name: str) -> Kind:
    kind = getattr(import_module(f"evalpipe.server.kinds.{name}"), "KIND", None)
    if not isinstance(kind, Kind) or kind.name != name:
        raise RuntimeError(f"evalpipe/server/kinds/{name}.py must declare KIND, a Kind named {name!r}")
    return kind


_REGISTRY: dict[str, Kind] = {name: _load(name) for name in KIND_NAMES}


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
