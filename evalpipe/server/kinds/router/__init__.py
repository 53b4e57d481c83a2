"""``server.kind: router`` — everything evalpipe knows about SGLang's router (``sglang-router``), in a folder.

evalpipe talks to one OpenAI endpoint; behind a router that endpoint is several servers, each with its own
resolved configuration, and the router's own ``/server_info`` is 404.  The modules here see through it:

- ``kind`` — the kind itself (``KIND``): the router launched in front of its workers, launched or running;
- ``sglang_router`` — the only module that knows sglang-router: its endpoints, ``/workers`` JSON, metric
  names, command line, and how it forwards request fields (measured against 0.3.2);
- ``client`` — recognise a router, list its workers (``URL@rank`` folded, URLs rewritten where the
  evaluation host reaches them under another address), fetch each worker's ``/server_info`` directly,
  per-worker request counters;
- ``verdict`` — every worker against the config and the workers against each other, one line per problem
  naming the worker and the field (pure);
- ``snapshot`` — the ``fleet.json`` snapshots and the joined/left/changed comparison;
- ``probe`` — whether the request fields evalpipe relies on reach the workers with their effect intact;
- ``session`` — a fleet for the length of a run: verified before any sample, accounted for after
  (used by ``server.kind: router`` and, through ``attach``, by an endpoint that is a router);
- ``attach`` — a router found behind ``kind: endpoint``: the workers the config names and the session;
- ``watch`` — the fleet during the evaluation: a worker that dies, returns, joins or changes configuration
  is recorded with the time and the requests in flight, and a changed one follows ``on_mismatch`` at once;
- ``errors`` — the fleet's one-line errors, each mapped to an exit code by ``evalpipe.errors``;
- ``launcher`` — readiness of a router ("every worker listed healthy"), and a router process of its own for
  tests and scripts (importable without sglang-router installed).

Outside this folder only this face is imported (``tools/layers.py`` checks it): the kind registry finds
``KIND`` here (and a worker's launch settings, :func:`worker_launch_server`); ``kind: endpoint`` asks
:class:`RouterClient` whether it attached to a router and hands it to :func:`attached_fleet`; the server
lifecycle runs the fleet watch the session leaves on the handle (typed there as ``kinds.base.FleetWatching``,
so the generic code names no type of this folder) and stops a run with :class:`FleetChanged`; the audit words
its findings with the router's facts (:data:`ROUTER_NAME`, :data:`ATTRIBUTION`, :data:`VERSION_NOT_REPORTED`).
The session, probe and launcher stay unimported until a fleet starts (they cost ~40 modules).
"""

from evalpipe.server.kinds.router.attach import attached_fleet
from evalpipe.server.kinds.router.client import RouterClient
from evalpipe.server.kinds.router.errors import FleetChanged
from evalpipe.server.kinds.router.kind import KIND, RouterKind, worker_launch_server
from evalpipe.server.kinds.router.sglang_router import ATTRIBUTION, ROUTER_NAME, VERSION_NOT_REPORTED

__all__ = [
    "ATTRIBUTION",
    "KIND",
    "ROUTER_NAME",
    "VERSION_NOT_REPORTED",
    "FleetChanged",
    "RouterClient",
    "RouterKind",
    "attached_fleet",
    "worker_launch_server",
]
