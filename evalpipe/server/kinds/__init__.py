"""Server kinds: how evalpipe brings up (or attaches to) the server a run talks to — one module per kind.

``BuiltinKind`` below is the built-ins' registry order: each built-in name is a module of this package declaring
``KIND``, an instance of :class:`evalpipe.server.kinds.base.Kind`, and ``registry.server_kind(name)`` loads it;
an installed package adds one through the entry-point group ``evalpipe.server_kinds``.  Everything outside this
package asks the kind (its argv, readiness paths, preflight rules, what its ``/server_info`` can verify, how
the report describes it) and never branches on the name.  The config and the artifacts name a kind with a
plain string (``evalpipe.config.registry_names.ServerKindName``); ``evalpipe.resolve`` looks it up here.
"""

from __future__ import annotations

from typing import Literal, get_args

#: The built-in server kinds, in registry order (adding one: a name here and its module in this package).
BuiltinKind = Literal["sglang", "answer_key", "endpoint", "replay", "command", "router"]
BUILTIN_KIND_NAMES: tuple[str, ...] = get_args(BuiltinKind)

#: Entry-point group of installed packages' server kinds (name = the kind, value = the module declaring
#: ``KIND``).
KIND_ENTRY_POINT_GROUP = "evalpipe.server_kinds"


__all__ = ["BUILTIN_KIND_NAMES", "KIND_ENTRY_POINT_GROUP", "BuiltinKind"]
