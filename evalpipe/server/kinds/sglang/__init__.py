"""``server.kind: sglang`` — everything evalpipe knows about SGLang's server, in one folder.

- ``kind`` — the kind itself (``KIND``): argv, preflight, readiness and verification as SGLang does them;
- ``flags`` — SGLang's command line and ``/server_info`` vocabulary: the argv built for the installed version,
  the resolved values a config expects, their normalisation (also read by verification, the fleet's verdict
  and the lifecycle, whose servers answer in SGLang's terms);
- ``env`` — the SGLang installation a launch would use (version, packages, ``dry_parse`` of the argv) and the
  server's environment;
- ``raw_fp8`` — the raw-FP8 KV-cache policy (TileLang DSA kernels, unscaled ``fp8_e4m3``) preflight enforces.

This ``__init__`` imports nothing, so a module that needs SGLang's vocabulary (``flags``) does not load the kind;
the kind registry imports ``kind`` itself.
"""
