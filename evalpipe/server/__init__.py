"""The model server: its kinds (``kinds/``), their preflight rules, lifecycle, readiness, verification, proxy.

``kinds/`` says what each ``server.kind`` launches and verifies; ``lifecycle`` brings it up and always stops
it (``readiness`` polls it, ``verify`` checks what it resolved); ``preflight`` (with ``preflight_rules`` and
the ``raw_fp8`` policy) refuses a launch before any GPU time is spent; ``proxy`` records every request;
``http_base`` is the aiohttp base of the servers evalpipe runs itself.  Submodules are imported explicitly by
their users so that importing this package stays cheap; nothing here imports SGLang.
"""
