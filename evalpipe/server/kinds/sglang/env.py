"""The SGLang installation the server will run with, inspected in a subprocess.

The server is launched with ``server.env`` on top of our environment (which may put a different SGLang
checkout on ``PYTHONPATH``), so the questions "which version?", "where is its source?" and "does its own
argument parser accept this argv?" are answered by a child interpreter with that same environment.
Nothing in this process imports SGLang.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Finds sglang without importing it: version from package metadata (or sglang/version.py for a plain
# checkout on PYTHONPATH), source directory from the import spec, PEP 610 direct_url for VCS installs.
_PROBE = r"""
import importlib.metadata as md, importlib.util, json, os, re, sys
out = {"importable": False, "version": None, "location": None, "direct_url": None, "packages": {}}
try:
    spec = importlib.util.find_spec("sglang")
except Exception as exc:
    spec = None
    out["error"] = f"{type(exc).__name__}: {exc}"
if spec is not None:
    out["importable"] = True
    locs = list(spec.submodule_search_locations or [])
    out["location"] = locs[0] if locs else (os.path.dirname(spec.origin) if spec.origin else None)
for name in json.loads(sys.argv[1]):
    try:
        out["packages"][name] = md.version(name)
    except md.PackageNotFoundError:
        out["packages"][name] = None
    except Exception as exc:
        out["packages"][name] = None
        out.setdefault("package_errors", {})[name] = f"{type(exc).__name__}: {exc}"
out["version"] = out["packages"].get("sglang")
# the CUDA release torch was built for, read from torch/version.py (importing torch takes seconds)
out["torch_cuda"] = None
try:
    tspec = importlib.util.find_spec("torch")
    tdir = list(tspec.submodule_search_locations or [])[0] if tspec is not None else None
    if tdir and os.path.isfile(os.path.join(tdir, "version.py")):
        m = re.search(r"^cuda(?:\s*:[^=]*)?\s*=\s*['\"]([^'\"]+)['\"]", open(os.path.join(tdir, "version.py"), encoding="utf-8").read(), re.M)
        out["torch_cuda"] = m.group(1) if m else None
except Exception as exc:
    out.setdefault("package_errors", {})["torch_cuda"] = f"{type(exc).__name__}: {exc}"
if out["version"] is None and out["location"]:
    vf = os.path.join(out["location"], "version.py")
    if os.path.isfile(vf):
        m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", open(vf, encoding="utf-8").read())
        out["version"] = m.group(1) if m else None
# Parser names from SGLang's dependency-free name modules (what --reasoning-parser/--tool-call-parser
# accept), read by path: importing the sglang package itself pulls in torch.
for key, rel, var in (
    ("reasoning_parsers", ("srt", "parser", "reasoning_parser_names.py"), "REASONING_PARSER_NAMES"),
    ("tool_call_parsers", ("srt", "function_call", "parser_names.py"), "TOOL_CALL_PARSER_NAMES"),
):
    out[key] = None
    path = os.path.join(out["location"], *rel) if out["location"] else None
    if path and os.path.isfile(path):
        try:
            import runpy
            names = runpy.run_path(path).get(var)
            out[key] = [str(n) for n in names] if isinstance(names, (list, tuple)) else None
        except Exception as exc:
            out.setdefault("package_errors", {})[key] = f"{type(exc).__name__}: {exc}"
try:
    dist = md.distribution("sglang")
    text = dist.read_text("direct_url.json")
    out["direct_url"] = json.loads(text) if text else None
except Exception:
    pass
print(json.dumps(out))
"""

# Dry-parse: SGLang's own ServerArgs.add_cli_args on a plain argparse parser; argv arrives on stdin so the
# API key never shows up on a command line.  Parsing only: constructing ServerArgs would touch GPUs/model.
_DRY_PARSE = r"""
import argparse, json, sys
argv = json.loads(sys.stdin.read())
try:
    from sglang.srt.server_args import ServerArgs
except ImportError as exc:
    print(json.dumps({"importable": False, "error": f"{type(exc).__name__}: {exc}"}))
    sys.exit(0)
parser = argparse.ArgumentParser(prog="sglang.launch_server")
ServerArgs.add_cli_args(parser)
parser.parse_args(argv)
print(json.dumps({"importable": True, "ok": True}))
"""

# SGLang's own DSA backend check, called as its argument resolution calls it (``srt/arg_groups/overrides.py``:
# 0.5.22+ ``_check_dsa_backend_constraints``, 0.5.17-0.5.21 ``_check_tilelang_dsa_fp8_kv``), with the kernels
# and KV dtype of the config.  A ValueError is SGLang's refusal, verbatim; any other exception means the check
# could not finish here (0.5.23's SM check asks the GPU).
_DSA_CHECK = r"""
import inspect, json, sys
a = json.loads(sys.stdin.read())
out = {"function": None, "refused": None, "error": None}
try:
    import sglang.srt.arg_groups.overrides as o
except BaseException as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))
    sys.exit(0)
fn = getattr(o, "_check_dsa_backend_constraints", None) or getattr(o, "_check_tilelang_dsa_fp8_kv", None)
if fn is None:
    out["error"] = "no DSA backend check in sglang.srt.arg_groups.overrides"
else:
    out["function"] = fn.__name__
    kw = {"hip": a["hip"]}
    if "dcp_size" in inspect.signature(fn).parameters:
        kw["dcp_size"] = a["dcp_size"]
    try:
        fn(a["kv"], a["prefill"], a["decode"], **kw)
    except ValueError as exc:
        out["refused"] = str(exc)
    except BaseException as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""

#: What ``provenance.json`` records of an SGLang server's environment: SGLang and the kernels and libraries
#: it runs on, by their distribution names — ``sglang-kernel`` (SGLang's kernels; ``sgl-kernel`` before it was
#: renamed, recorded too so either shows), ``tilelang`` (the TileLang DSA kernels), ``sgl-deep-gemm`` (the DSA
#: indexer's FP8 logits), ``sgl-flash-mla`` (FlashMLA, its own wheel from 0.5.23), ``flashinfer-python``.
DEFAULT_PACKAGES = (
    "sglang",
    "sglang-kernel",
    "sgl-kernel",
    "tilelang",
    "sgl-deep-gemm",
    "sgl-flash-mla",
    "flashinfer-python",
    "torch",
    "transformers",
)
#: The CUDA release the server's torch was built for (``torch.version.cuda``), recorded beside the packages.
TORCH_CUDA = "torch.version.cuda"


@dataclass
class SglangProbe:
    importable: bool
    version: str | None
    location: str | None
    direct_url: dict[str, Any] | None = None
    packages: dict[str, str | None] = field(default_factory=dict)
    error: str | None = None
    #: Names the installed SGLang accepts for ``--reasoning-parser`` / ``--tool-call-parser`` (from
    #: ``srt/parser/reasoning_parser_names.py`` and ``srt/function_call/parser_names.py``); None when that
    #: SGLang has no such module.
    reasoning_parsers: list[str] | None = None
    tool_call_parsers: list[str] | None = None
    #: ``torch.version.cuda`` of the server's torch (from its version.py); None without torch or a CPU build.
    torch_cuda: str | None = None


def probe_sglang(
    env: Mapping[str, str] | None = None, packages: tuple[str, ...] = DEFAULT_PACKAGES
) -> SglangProbe:
    """Version/location of SGLang (and versions of ``packages``) as seen by a child with ``env``."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(packages))],
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        return SglangProbe(False, None, None, error=f"probe failed: {tail[0]}")
    data = json.loads(proc.stdout)
    return SglangProbe(
        importable=bool(data.get("importable")),
        version=data.get("version"),
        location=data.get("location"),
        direct_url=data.get("direct_url"),
        packages=data.get("packages") or {},
        error=data.get("error"),
        reasoning_parsers=data.get("reasoning_parsers"),
        tool_call_parsers=data.get("tool_call_parsers"),
        torch_cuda=data.get("torch_cuda"),
    )


@dataclass
class DryParse:
    """Outcome of parsing an argv with the installed SGLang's own parser."""

    importable: bool
    ok: bool
    error: str | None = None
    inconclusive: bool = False  # the parser itself could not run (not a verdict on the argv)


def dry_parse(
    argv_after_module: list[str], env: Mapping[str, str] | None = None, timeout: float = 300
) -> DryParse:
    """Parse ``argv_after_module`` (everything after ``-m sglang.launch_server``) with SGLang's parser.

    ``importable=False`` when SGLang (or its ``server_args`` module) cannot be imported with ``env``.
    ``ok=False`` with argparse's message (which names the flag) on an unknown flag or a bad choice.
    """
    proc = subprocess.run(
        [sys.executable, "-c", _DRY_PARSE],
        input=json.dumps(argv_after_module),
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    last = (proc.stdout or "").strip().splitlines()[-1:] or [""]
    if proc.returncode == 0:
        try:
            data = json.loads(last[0])
        except json.JSONDecodeError:
            return DryParse(importable=True, ok=True)
        if not data.get("importable", True):
            return DryParse(importable=False, ok=True, error=data.get("error"))
        return DryParse(importable=True, ok=True)
    err_lines = [ln for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
    if proc.returncode == 2 and err_lines and ": error: " in err_lines[-1]:
        return DryParse(importable=True, ok=False, error=err_lines[-1].split(": error: ", 1)[1])
    tail = err_lines[-1] if err_lines else f"exit code {proc.returncode}"
    return DryParse(
        importable=True, ok=False, error=f"SGLang's argument parser could not run: {tail}", inconclusive=True
    )


@dataclass(frozen=True)
class DsaCheck:
    """SGLang's own DSA backend check on the config's kernels: which function answered, its refusal (verbatim),
    or why it could not be called or finish here."""

    function: str | None
    refused: str | None
    error: str | None


def sglang_dsa_check(
    env: Mapping[str, str] | None,
    kv_cache_dtype: str,
    prefill: str | None,
    decode: str | None,
    *,
    hip: bool,
    dcp_size: int,
    timeout: float = 300,
) -> DsaCheck:
    """Call the installed SGLang's DSA backend check in a child with the server's environment."""
    args = {"kv": kv_cache_dtype, "prefill": prefill, "decode": decode, "hip": hip, "dcp_size": dcp_size}
    proc = subprocess.run(
        [sys.executable, "-c", _DSA_CHECK],
        input=json.dumps(args),
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    last = (proc.stdout or "").strip().splitlines()[-1:] or [""]
    try:
        data = json.loads(last[0])
    except json.JSONDecodeError:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return DsaCheck(None, None, f"the check could not run: {tail[0]}")
    return DsaCheck(data.get("function"), data.get("refused"), data.get("error"))
