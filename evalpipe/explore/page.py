"""``explorer.html`` as one self-contained page that opens from ``file://``.

Model output is hostile text (promptfoo#308 is what happens otherwise), so:

* the data travels in ``<script type="application/json">``, serialised with ``<``, ``>``, ``&``, ``'`` and
  U+2028/U+2029 escaped as ``\\uXXXX`` — no answer can close the element or start markup;
* the script (plain JS, ``assets/explorer.js``) writes model text with ``textContent`` only, never as HTML;
* a Content-Security-Policy ``<meta>`` allows exactly the page's one inline script and one inline style (by
  their sha256) and nothing else: no other script, no network (``default-src 'none'``), no form, no base.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from html import escape
from importlib.resources import files

from evalpipe.artifacts.schema.explorer import ExplorerData

_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027", "\u2028": "\\u2028", "\u2029": "\\u2029"}  # fmt: skip


@cache
def _asset(name: str) -> str:
    return files("evalpipe.explore").joinpath("assets", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def embed_json(json_text: str) -> str:
    """JSON safe inside ``<script type="application/json">``: the characters that could end the element,
    open markup or end a line in a JS parser written as escapes (they occur only inside JSON strings, where
    the escape stands for the same character)."""
    for ch, rep in _JSON_ESCAPES.items():
        json_text = json_text.replace(ch, rep)
    return json_text


def content_security_policy() -> str:
    script, style = _asset("explorer.js"), _asset("explorer.css")
    return (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )


def render_page(data: ExplorerData) -> str:
    script, style = _asset("explorer.js"), _asset("explorer.css")
    payload = embed_json(data.model_dump_json())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(content_security_policy())}">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{escape(data.title)}</title><style>{style}</style></head>\n<body>\n"
        "<noscript>This page needs JavaScript (no network: everything is in this file).</noscript>\n"
        f'<script type="application/json" id="explorer-data">{payload}</script>\n'
        f"<script>{script}</script>\n</body></html>\n"
    )
