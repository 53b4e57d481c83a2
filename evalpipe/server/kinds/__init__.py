"""Server kinds: how evalpipe brings up (or attaches to) the server a run talks to — one module per kind.

``ServerKind`` below *is* the registry: each name is a module of this package declaring ``KIND``, an instance
of :class:`evalpipe.server.kinds.base.Kind`, and ``registry.server_kind(name)`` loads it.  The order is the
order of ``server.kind`` in the config schema.  Everything outside this package asks the kind (its argv,
readiness paths, preflight rules, what its ``/server_info`` can verify, how the report describes it) and
never branches on the name.

The literal itself lives in ``evalpipe.artifacts.schema.server``, below the config and artifact models that
build their ``kind`` field from it (the kind modules read those models: a cycle otherwise); adding a kind is
one name there and one module here.
"""

from __future__ import annotations

from evalpipe.artifacts.schema.server import KIND_NAMES, ServerKind

__all__ = ["KIND_NAMES", "ServerKind"]
