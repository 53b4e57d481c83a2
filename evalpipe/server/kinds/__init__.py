"""Server kinds: how evalpipe brings up (or attaches to) the server a run talks to — one module per kind.

``ServerKind`` below *is* the registry: each name is a module of this package declaring ``KIND``, an instance
of :class:`evalpipe.server.kinds.base.Kind`, and ``registry.server_kind(name)`` loads it.  The order is the
order of ``server.kind`` in the config schema.  Everything outside this package asks the kind (its argv,
readiness paths, preflight rules, what its ``/server_info`` can verify, how the report describes it) and
never branches on the name.

This module imports nothing: the config and artifact models build their ``kind`` field from the literal,
and the kind modules read those models (a cycle otherwise).
"""

from __future__ import annotations

from typing import Literal, get_args

ServerKind = Literal["sglang", "answer_key", "endpoint", "replay", "command", "router"]

#: The registered kind names, in registry order.
KIND_NAMES: tuple[str, ...] = get_args(ServerKind)

__all__ = ["KIND_NAMES", "ServerKind"]
