"""The ``X-Request-Id`` each evaluation request carries, derived from its attempt id.

Behind a router no response names the worker that answered, and sglang-router 0.3.2 drops the body
``rid`` evalpipe sets on chat requests (so an SGLang worker's response ``id`` no longer is the attempt
id).  The router does forward a client's ``X-Request-Id`` to the worker (as ``X-Request-ID``) and echoes
it in the response, including on its own retries; so the recording proxy sends one per attempt, and a
worker's access log or trace can be joined back to ``requests.jsonl`` by it.  The value is a pure
function of the attempt id, so nothing new needs storing to make the join.
"""

from __future__ import annotations

import re

HEADER = "X-Request-Id"
PREFIX = "evalpipe-"
#: The proxy's attempt ids are ``<8 hex>-<6 digits>``; anything of visible, header-safe characters is
#: accepted so the function does not depend on that format.
_SAFE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def x_request_id(attempt_id: str) -> str:
    """``"1a2b3c4d-000017"`` → ``"evalpipe-1a2b3c4d-000017"``; ValueError for an id a header cannot carry."""
    if not _SAFE.match(attempt_id):
        raise ValueError(f"attempt id {attempt_id!r}: not usable in an {HEADER} header")
    return PREFIX + attempt_id


def attempt_id_of(header_value: str) -> str | None:
    """The attempt id an ``X-Request-Id`` value was derived from; None for a value evalpipe did not set."""
    if not header_value.startswith(PREFIX):
        return None
    rest = header_value[len(PREFIX) :]
    return rest if _SAFE.match(rest) else None
