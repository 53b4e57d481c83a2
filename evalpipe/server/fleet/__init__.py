"""A fleet of workers behind SGLang's router (``sglang-router``): find, verify and account for each worker.

evalpipe talks to one OpenAI endpoint; behind a router that endpoint is several servers, each with its own
resolved configuration, and the router's own ``/server_info`` is 404.  The modules here see through it:

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
  (used by ``server.kind: router`` and by an endpoint that is a router);
- ``watch`` — the fleet during the evaluation: a worker that dies, returns, joins or changes configuration
  is recorded with the time and the requests in flight, and a changed one follows ``on_mismatch`` at once;
- ``request_id`` — the ``X-Request-Id`` header derived from a request attempt's id;
- ``errors`` — the fleet's one-line errors, each mapped to an exit code by ``evalpipe.errors``;
- ``launcher`` — readiness of a router ("every worker listed healthy"), and a router process of its own for
  tests and scripts (importable without sglang-router installed).
"""
