"""Build a ``/server_info`` payload with the real SGLang 0.5.23 package, on a CPU-only machine.

The committed fixture ``tests/fixtures/sglang-0.5.23-server_info-glm-fp8.json`` is this script's output for
the argv evalpipe builds from ``configs/glm-fp8.yaml``.  Verification, redaction and report tests read it,
and the fake SGLang in ``tests/fake_sglang`` serves it, so that evalpipe's notion of where SGLang reports a
resolved value comes from SGLang itself rather than from a hand-written guess.

How to run it (a side venv outside the repository; nothing here is an evalpipe dependency)::

    python3 -m venv /work/sglang-venv
    /work/sglang-venv/bin/pip install --no-deps sglang==0.5.23
    /work/sglang-venv/bin/pip install torch==2.13.0            # the CPU wheel; never a CUDA build
    /work/sglang-venv/bin/pip install --no-deps triton
    /work/sglang-venv/bin/pip install numpy psutil requests packaging pydantic orjson pybase64 \
        pillow starlette msgspec pyzmq tqdm IPython aiohttp    # what `import sglang.srt.server_args` needs
    /work/sglang-venv/bin/python tools/make_sglang_server_info_fixture.py \
        --out tests/fixtures/sglang-0.5.23-server_info-glm-fp8.json \
        -- $(evalpipe server command configs/glm-fp8.yaml 2>/dev/null)

What is real and what is not (sglang 0.5.23, ``entrypoints/http_server.py::server_info`` and
``utils/common.py::build_server_info``)::

    {**build_server_info(server_args, scheduler_info),     # resolved_dict() + launch_command
                                                           #   + scheduler_info + kv_events
     "startup_time": ..., "internal_states": [...per DP rank...], "version": __version__,
     "frontend": "python"}   # then redact_watermark_secrets + msgspec_to_builtins

* ``ServerArgs`` comes from SGLang's own ``prepare_server_args(argv)``: its parser, its declared defaults,
  its ``_launch_command`` (which carries ``--api-key`` verbatim: SGLang redacts only watermark secrets).
  ``build_server_info``, ``redact_watermark_secrets``, ``msgspec_to_builtins``, ``disabled_l3_layout`` and
  ``compute_world_size`` are SGLang's functions, called as the server calls them.
* NOT run: ``ServerArgs.resolve_once()`` (the launcher's resolution pipeline).  It loads the checkpoint's
  ``config.json`` through transformers and picks kernels/sizes for the CUDA device it finds; neither the
  GLM checkpoint nor a GPU is here.  ``resolved_dict()`` of an unresolved record returns the raw input over
  the declared defaults (``arg_groups/overrides.py::resolution_result``), so the *keys and nesting* are the
  real ones while values that resolution derives (page size, memory fraction, CUDA-graph sizes, ...) are the
  pre-resolution defaults.  The values evalpipe verifies are the ones the argv sets explicitly.
* Scheduler facts that only a loaded model on a GPU produces are ``null`` here, with the shape taken from
  the source: ``Scheduler.get_init_info`` (``max_total_num_tokens``, ``max_req_input_len``) and, per DP rank,
  ``SchedulerInternalStateController.get_internal_state`` = ``resolved_server_args_dict()`` (the same
  resolved dict, no runtime overrides at startup) + ``world_size`` + ``startup_time`` +
  ``effective_max_running_requests_per_dp`` + ``last_gen_throughput`` + ``memory_usage``
  (``build_memory_usage`` keys).  ``avg_spec_accept_length`` is absent, as before the first decode step.
* Two values follow what a live SGLang (0.5.17 on the DSA path, ``tests/fixtures/sglang-0.5.17-dsa-live/``)
  reports where an unresolved CPU build cannot: ``page_size`` 64 for a DSA argv (``--attention-backend
  dsa``/``nsa``: the resolution SGLang 0.5.17 and 0.5.23 run forces it, "Setting page size to 64 for DeepSeek
  DSA"), and ``startup_time`` as the launch's phase durations — a dict (``load_weight``, ``kv_cache_allocation``,
  ``scheduler_e2e``, ``cuda_graph``; ``tokenizer_e2e`` at the top level), not a timestamp — with fixed
  numbers so the fixture is reproducible (``live_shape``).
* A planted ``--api-key`` (``PLANTED_API_KEY`` below) is appended to the argv: real SGLang then reports it in
  ``api_key`` (top level and in every ``internal_states`` entry) and inside ``launch_command``, which is
  what evalpipe's capture-time redaction must remove.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

PLANTED_API_KEY = "sk-evalpipe-PLANTED-fixture-key-0123456789abcdef"
#: A launch's phase durations in seconds, as a live SGLang reports ``startup_time`` (fixed: the fixture must be
#: byte-reproducible); the top level adds the tokenizer manager's.
STARTUP_TIME: dict[str, object] = {
    "load_weight": 12.5,
    "kv_cache_allocation": 0.5,
    "scheduler_e2e": 60.0,
    "cuda_graph": {"prefill": 0.0, "decode": 20.0, "target_verify": 0.0, "draft_prefill": 0.0,
                   "draft_decode": 0.0, "draft_extend": 0.0},
}
TOKENIZER_E2E = 75.0
MODULE = "sglang.launch_server"


def server_argv(command: list[str]) -> list[str]:
    """Everything after ``-m sglang.launch_server`` (the whole list when the module is absent)."""
    if MODULE in command:
        return command[command.index(MODULE) + 1 :]
    return list(command)


def build_payload(argv: list[str]) -> dict:
    from sglang.srt.mem_cache.hicache_storage import disabled_l3_layout
    from sglang.srt.sampling.watermarking.core import redact_watermark_secrets
    from sglang.srt.server_args import compute_world_size, prepare_server_args
    from sglang.srt.utils.common import build_server_info
    from sglang.srt.utils.msgspec_utils import msgspec_to_builtins
    from sglang.version import __version__

    server_args = prepare_server_args(argv)
    resolved = server_args.resolved_dict()
    page_size = resolved.get("page_size")
    scheduler_info = {  # Scheduler.get_init_info(); GPU-derived numbers unknown here
        "status": "ready",
        "max_total_num_tokens": None,
        "max_req_input_len": None,
        "startup_time": STARTUP_TIME,
        "hicache_object_layout": disabled_l3_layout("Hierarchical cache is disabled", page_size=page_size),
    }
    dp_size = int(resolved.get("dp_size") or 1)
    internal_states = []
    for _rank in range(dp_size):
        state = dict(resolved)  # resolved_server_args_dict(): no runtime overrides at startup
        state["world_size"] = compute_world_size(
            dp_size=dp_size, tp_size=int(resolved["tp_size"]), pp_size=int(resolved.get("pp_size") or 1)
        )
        state["startup_time"] = STARTUP_TIME
        state["effective_max_running_requests_per_dp"] = None
        state["last_gen_throughput"] = 0.0
        state["memory_usage"] = {  # build_memory_usage() keys; values need the loaded model on a GPU
            "weight": None,
            "kvcache": None,
            "startup_available": None,
            "token_capacity": None,
            "token_capacity_swa": None,
            "graph": {},
        }
        state.pop("custom_sigquit_handler", None)
        internal_states.append(state)
    payload = {
        **build_server_info(server_args, scheduler_info),
        "startup_time": STARTUP_TIME,
        "internal_states": internal_states,
        "version": __version__,
        "frontend": "python",
    }
    return live_shape(msgspec_to_builtins(redact_watermark_secrets(payload)))


def live_shape(payload: dict) -> dict:
    """The values a live server reports where the unresolved build cannot (module docstring): ``page_size``
    64 on the DSA path, ``startup_time`` as phase durations (the top level with ``tokenizer_e2e``)."""
    out = json.loads(json.dumps(payload))
    dsa = out.get("attention_backend") in ("dsa", "nsa")
    for state in [out, *out.get("internal_states", [])]:
        if dsa:
            state["page_size"] = 64
        state["startup_time"] = json.loads(json.dumps(STARTUP_TIME))
    out["startup_time"]["tokenizer_e2e"] = TOKENIZER_E2E
    return out


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="where to write the JSON payload")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the server command line")
    ns = parser.parse_args(args)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    argv = server_argv(command)
    if not argv:
        parser.error("no server argv after --")
    argv += ["--api-key", PLANTED_API_KEY]
    payload = build_payload(argv)
    text = json.dumps(payload, indent=1, default=str, ensure_ascii=False) + "\n"
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = ns.out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(ns.out)
    print(f"wrote {ns.out} ({len(payload)} top-level keys, {len(payload['internal_states'])} DP rank(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
