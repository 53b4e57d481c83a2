"""Server kinds: how evalpipe brings up (or attaches to) the server a run talks to — one module per kind.

``KIND_NAMES`` below is the registry's order: each built-in name is a module of this package declaring
``KIND``, an instance of :class:`evalpipe.server.kinds.base.Kind`, and ``registry.server_kind(name)`` loads it;
an installed package adds one through the entry-point group ``evalpipe.server_kinds``.  Everything outside this
package asks the kind (its argv, readiness paths, preflight rules, what its ``/server_info`` can verify, how
the report describes it) and never branches on the name.  The config and the artifacts name a kind with a
plain string (``evalpipe.config.registry_names.ServerKindName``); ``evalpipe.resolve`` looks it up here.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Literal, get_args

#: The built-in server kinds, in registry order (adding one: a name here and its module in this package).
BuiltinKind = Literal["sglang", "answer_key", "endpoint", "replay", "command", "router"]
BUILTIN_KIND_NAMES: tuple[str, ...] = get_args(BuiltinKind)

#: Entry-point group of installed packages' server kinds (name = the kind, value = the module declaring
#: ``KIND``).
KIND_ENTRY_POINT_GROUP = "evalpipe.server_kinds"


def _installed_kind_names() -> tuple[str, ...]:
    return tuple(
        sorted({ep.name for ep in entry_points(group=KIND_ENTRY_POINT_GROUP)} - set(BUILTIN_KIND_NAMES))
    )


#: The registered kind names, in registry order: the built-ins, then installed packages' by name.
KIND_NAMES: tuple[str, ...] = BUILTIN_KIND_NAMES + _installed_kind_names()

__all__ = ["BUILTIN_KIND_NAMES", "KIND_ENTRY_POINT_GROUP", "KIND_NAMES", "BuiltinKind"]
