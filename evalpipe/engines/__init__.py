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

#: Module paths these servers were started by before they lived here.  A config naming one (``server.command``,
#: a variant's ``command`` override) is refused by the resolve step with the path to use instead, on its YAML
#: line — rather than launching a process that dies with ``No module named …``.
FORMER_MODULES: dict[str, str] = {
    "evalpipe.server.llamacpp": "evalpipe.engines.llamacpp",
    "evalpipe.selftest.answer_key_server": "evalpipe.engines.answer_key_server",
    "evalpipe.replay.server": "evalpipe.engines.replay_server",
}
