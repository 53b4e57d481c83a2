"""A router found behind ``kind: endpoint`` (or ``--endpoint``): its workers verified as a launched fleet's.

The endpoint kind attaches and asks :meth:`RouterClient.is_router`; when the endpoint is a router, this is
the rest: the workers ``server.router.workers`` names (URLs only — nothing is launched when attaching), and
the fleet session over them with the attach settings of ``server.router`` (its version, when the config
states it: the router reports none over HTTP).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from evalpipe.errors import ConfigError

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig
    from evalpipe.server.kinds.base import ServeContext, ServerHandle
    from evalpipe.server.kinds.router.client import RouterClient
    from evalpipe.server.kinds.router.session import PlannedWorker


@contextlib.contextmanager
def attached_fleet(ctx: ServeContext, handle: ServerHandle, client: RouterClient) -> Iterator[ServerHandle]:
    """The fleet behind the attached router ``handle`` (``client`` its client) verified before any sample and
    accounted for after (:func:`evalpipe.server.kinds.router.session.fleet_session`)."""
    # import cost: the fleet session's modules, only for a fleet (the kinds stay cheap to import)
    from evalpipe.server.kinds.router.session import fleet_session

    settings = ctx.server.router_settings()
    with fleet_session(
        ctx,
        handle,
        client,
        planned=_expected_workers(ctx, ctx.server),
        router_version=settings.version,
        version_source="config" if settings.version else "unknown",
        policy=None,
        launched=False,
    ) as fleet_handle:
        yield fleet_handle


def _expected_workers(ctx: ServeContext, server: ServerConfig) -> list[PlannedWorker]:
    """The workers ``server.router.workers`` says must be behind the router (URLs only: nothing is launched
    when attaching; a ``kind`` entry is refused)."""
    from evalpipe.server.kinds.router.session import PlannedWorker, attached_view  # import cost: as above

    router = server.router
    planned = []
    for i, worker in enumerate(router.workers if router is not None else []):
        if worker.url is None:
            raise ConfigError(
                f"server.router.workers[{i}]: kind: endpoint launches nothing; name a running worker's url "
                "(or use kind: router to launch the router and its workers)"
            )
        url = worker.url.rstrip("/")
        view = attached_view(server, url)
        planned.append(PlannedWorker(url, ctx.member(str(i), view), view))
    return planned
