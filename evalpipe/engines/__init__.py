"""The OpenAI-compatible servers evalpipe ships, each started as ``python -m evalpipe.engines.<module>``.

- ``answer_key_server`` (with ``answer_key``, the gold answers and planted faults it answers from) — the
  self-test server behind ``server.kind: answer_key``: the pipeline end to end without a model;
- ``replay_server`` (with ``replay_queues``, the recorded responses per prompt) — a sign-off bundle's responses
  served back (``server.kind: replay``, ``evalpipe replay``);
- ``llamacpp`` — a real model on a CPU or GPU through xllamacpp (``server.kind: command``; ``make
  demo-model``), with ``/server_info`` the way SGLang reports it;
- ``http_base`` — the aiohttp base all three share (OpenAI routes, readiness, signals).

Engines are processes the server kinds launch by module path: a run's stages import none of them
(``evalpipe benchmarks`` reads the answer key to show what the self-test answers).
"""
