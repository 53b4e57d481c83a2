"""``python -m sglang.bench_serving ARGS`` — the test double of SGLang's serving benchmark.

It accepts the flags evalpipe's speed client passes (the same names as SGLang 0.5.17's and 0.5.23's
``sglang.benchmark.serving``), sends the warm-up and every prompt as a chat request to the server (so the
server sees the load), calls ``/flush_cache`` after the warm-up when asked, and writes one result line in the
shape a live SGLang 0.5.17 wrote (``tests/fixtures/sglang-0.5.17-live/bench_serving-auto.jsonl``): the same
keys, with the counts of this run (prompts, fixed input and output lengths) and the server's ``/server_info``.
``FAKE_BENCH_FAIL_ALL`` makes every request fail: like SGLang it then writes no line at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request
from pathlib import Path

LIVE_LINE = Path(__file__).resolve().parents[2] / "fixtures" / "sglang-0.5.17-live" / "bench_serving-auto.jsonl"


def _post(url: str, body: dict | None) -> int:
    req = urllib.request.Request(
        url, data=json.dumps(body or {}).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()
        return resp.status


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="sglang.bench_serving")
    for flag in ("--backend", "--base-url", "--model", "--dataset-name", "--tokenizer", "--output-file",
                 "--extra-request-body"):  # fmt: skip
        ap.add_argument(flag)
    for flag in ("--random-input-len", "--random-output-len", "--num-prompts", "--max-concurrency",
                 "--warmup-requests", "--seed", "--ready-check-timeout-sec"):  # fmt: skip
        ap.add_argument(flag, type=int)
    ap.add_argument("--random-range-ratio", type=float)
    for flag in ("--output-details", "--disable-tqdm", "--flush-cache"):
        ap.add_argument(flag, action="store_true")
    args = ap.parse_args(argv)
    base = args.base_url.rstrip("/")
    started = time.monotonic()
    failed = bool(os.environ.get("FAKE_BENCH_FAIL_ALL"))
    for _ in range(args.warmup_requests or 0):
        _post(base + "/v1/chat/completions", {"model": args.model, "messages": [{"role": "user", "content": "w"}]})
    if args.flush_cache:
        _post(base + "/flush_cache", None)
    if not failed:
        for i in range(args.num_prompts):
            _post(base + "/v1/chat/completions", {"model": args.model, "messages": [{"role": "user", "content": str(i)}]})
    if failed:
        print("All requests failed", flush=True)
        return 0
    duration = max(time.monotonic() - started, 1e-3)
    line = json.loads(LIVE_LINE.read_text(encoding="utf-8").splitlines()[0])
    n, i_len, o_len = args.num_prompts, args.random_input_len, args.random_output_len
    with urllib.request.urlopen(base + "/server_info", timeout=30) as resp:
        line["server_info"] = json.loads(resp.read())
    line.update(
        backend=args.backend, dataset_name=args.dataset_name, random_input_len=i_len, random_output_len=o_len,
        random_range_ratio=args.random_range_ratio, max_concurrency=args.max_concurrency, duration=duration,
        completed=n, total_input_tokens=n * i_len, total_input_text_tokens=n * i_len, total_output_tokens=n * o_len,
        total_output_tokens_retokenized=n * o_len, request_throughput=n / duration,
        input_throughput=n * i_len / duration, output_throughput=n * o_len / duration,
        total_throughput=n * (i_len + o_len) / duration, max_concurrent_requests=args.max_concurrency,
    )  # fmt: skip
    if args.output_details:
        line.update(input_lens=[i_len] * n, output_lens=[o_len] * n, errors=[""] * n)
    with open(args.output_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
