"""The model server: its kinds (``kinds/``), their preflight rules, lifecycle, readiness, verification.

``kinds/`` says what each ``server.kind`` launches and verifies; ``lifecycle`` brings it up and always stops
it (``readiness`` polls it, ``verify`` checks what it resolved); ``preflight`` (with ``preflight_rules`` and
the ``raw_fp8`` policy) refuses a launch before any GPU time is spent; ``chat_template`` says what a request
carries for the thinking mode; ``fetch`` holds the blocking HTTP calls evalpipe makes to a server (readiness,
the fleet's routers and workers, the speed stage's context check); ``http_base`` is the aiohttp base of the
servers evalpipe runs itself.  Request recording is ``evalpipe.recording``.  Submodules are imported
explicitly by their users so that importing this package stays cheap; nothing here imports SGLang.
"""
