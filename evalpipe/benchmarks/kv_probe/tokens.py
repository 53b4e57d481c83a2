"""Token positions as the served model sees them: its ``tokenizer.json`` and the chat template beside it.

An evidence offset is the index of the evidence's first token in the served prompt (chat template +
EvalScope's prompt template + context), which is what decides the KV page it lands in.  Without a tokenizer
the probe counts whitespace-separated words, and says so in every record (``tokenizer: words``).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalpipe.errors import DataError
from evalpipe.hashing import sha256_hex

SENTINEL = "\x00KVPROBE\x00"
WORDS = "words"


class TokenCounter(Protocol):
    name: str  # "words" or the tokenizer.json sha256

    def starts(self, text: str) -> list[int]:
        """The character offset where each token of ``text`` starts."""
        ...


@dataclass
class WordCounter:
    """Whitespace-separated words as tokens: the fallback when no tokenizer is named."""

    name: str = WORDS

    def starts(self, text: str) -> list[int]:
        return [m.start() for m in re.finditer(r"\S+", text)]


@dataclass
class FileTokenizer:
    """A ``tokenizers`` tokenizer read from ``tokenizer.json`` (no special tokens added around the text)."""

    path: Path
    name: str = ""
    _tok: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # import cost: tokenizers (~14 modules), only on this path
        from tokenizers import Tokenizer

        data = self.path.read_bytes()
        self.name = sha256_hex(data)
        self._tok = Tokenizer.from_str(data.decode("utf-8"))

    def starts(self, text: str) -> list[int]:
        enc = self._tok.encode(text, add_special_tokens=False)
        return [start for start, _ in enc.offsets]

    def ids(self, text: str) -> list[int]:
        """The token ids of ``text`` (no special tokens added around it)."""
        return list(self._tok.encode(text, add_special_tokens=False).ids)


def token_at(starts: list[int], char: int) -> int:
    """Index of the token that covers character ``char`` (the last token starting at or before it)."""
    return max(0, bisect.bisect_right(starts, char) - 1)


def chat_prefix(directory: Path | None) -> str:
    """What the chat template puts before a single user message's text (empty without a template)."""
    return chat_frame(directory)[0]


def chat_frame(directory: Path | None) -> tuple[str, str]:
    """What the chat template puts before and after a single user message's text, the generation prompt
    included (both empty without a template)."""
    if directory is None:
        return "", ""
    template = directory / "chat_template.jinja"
    if not template.is_file():
        return "", ""

    # import cost: jinja2, markupsafe (~24 modules), only on this path
    import jinja2

    config_path = directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)  # as transformers renders chat templates
    rendered = env.from_string(template.read_text(encoding="utf-8")).render(
        messages=[{"role": "user", "content": SENTINEL}],
        add_generation_prompt=True,
        bos_token=config.get("bos_token") or "",
        eos_token=config.get("eos_token") or "",
    )
    head, tail = rendered.split(SENTINEL, 1)
    return head, tail


def resolve_tokenizer(value: str | None, base: Path) -> tuple[TokenCounter, str]:
    """The counter a spec's ``tokenizer`` names and the chat-template prefix of its directory."""
    if value is None:
        words: TokenCounter = WordCounter()
        return words, ""
    directory = tokenizer_directory(value, base, field="kv_probe tokenizer")
    return FileTokenizer(directory / "tokenizer.json"), chat_prefix(directory)


def tokenizer_directory(value: str, base: Path, *, field: str) -> Path:
    """The directory with ``tokenizer.json`` that ``value`` names (``gguf:FILE``/``gguf:smollm2``, or a path
    relative to ``base``); ``DataError`` naming ``field`` when there is none."""
    if value.startswith("gguf:"):
        # import cost: the GGUF tokenizer resolver (argparse, gettext), only for a gguf: tokenizer
        from evalpipe.tokenizer import TokenizerError, resolve

        try:
            resolved = resolve(value, base, field=field)
        except TokenizerError as exc:
            raise DataError(exc.message) from None
        assert resolved is not None  # a non-None spec resolves to a directory
        directory = resolved.directory
    else:
        directory = Path(value).expanduser()
        directory = directory if directory.is_absolute() else base / directory
    if not (directory / "tokenizer.json").is_file():
        raise DataError(f"{field} {value}: {directory}/tokenizer.json not found")
    return directory
