"""A test double of SGLang, put on PYTHONPATH by evalpipe's server tests (never installed).

``python -m sglang.launch_server ARGS`` starts a small aiohttp server that behaves like SGLang where
evalpipe depends on it (/health 503 then 200, /server_info, /model_info, /v1/chat/completions honouring
``rid``) and misbehaves on request through FAKE_SGLANG_* environment variables (see launch_server).
"""

from sglang.version import __version__

__all__ = ["__version__"]
