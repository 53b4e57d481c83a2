"""Serving speed next to accuracy: a paired end-to-end benchmark of every variant's server.

``evalpipe.config.speed`` (the ``speed:`` section) → ``run`` (each round is one run of a real client —
SGLang's ``bench_serving`` or EvalScope's ``evalscope perf`` — against the server's own URL, raw files kept)
→ ``model`` (``speed.json``) → ``compare`` (test/control ratio of the median across rounds, round bootstrap).
Only ``clients/`` knows a client's flags and output files; ``tokenizer`` turns a GGUF's metadata into the
local tokenizer directory both clients need.
"""
