"""A fleet of workers behind SGLang's router (``sglang-router``): find, verify and account for each worker.

evalpipe talks to one OpenAI endpoint; behind a router that endpoint is several servers, each with its own
resolved configuration, and the router's own ``/server_info`` is 404.  The modules here see through it:

- ``sglang_router`` — the only module that knows sglang-router: its endpoints, ``/workers`` JSON, metric
  names, command line, and how it forwards request fields (measured against 0.3.2);
- ``client`` — recognise a router, list its workers (``URL@rank`` folded, URLs rewritten where the
  evaluation host reaches them under another address), fetch each worker's ``/server_info`` directly,
  per-worker request counters;
- ``snapshot`` — the ``fleet.json`` snapshots and the joined/left/changed comparison;
- ``probe`` — whether the request fields evalpipe relies on reach the workers with their effect intact;
- ``request_id`` — the ``X-Request-Id`` header derived from a request attempt's id;
- ``launcher`` — start and stop a router process (importable without sglang-router installed).
"""
