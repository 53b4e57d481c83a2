"""Overhead of evalpipe's recording proxy: added latency (p50/p99) and throughput ratio proxied/direct.

One run, loopback only, bounded: a local aiohttp upstream answering OpenAI-style chat completions (in its
own process), a load generator at fixed concurrency (in its own process), and the recording proxy running
as in production (background thread of this process, writing requests.jsonl + responses.jsonl.gz to a
temporary run directory).  Direct and proxied passes are interleaved over several rounds and the medians
reported, so a noisy neighbour hits both sides alike.

    .venv/bin/python perf/bench_proxy.py [--requests 2000] [--concurrency 64] [--service-ms 0]

``--service-ms`` adds an upstream service time per request, uniform in [0.5x, 1.5x] (0 = the fastest
possible upstream, which measures pure proxy cost under CPU saturation; a real model server takes tens of
milliseconds to minutes per request).  The proxy's own CPU per request is reported too: unlike latency
and throughput it does not depend on how busy the machine is.  Latencies are measured per request
minus the service time the upstream reports (``X-Service-Time``), so random service times do not blur the
comparison.
Goal: <= 0.5 ms p50 added latency and >= 0.95x requests/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1]))

BODY = {
    "model": "bench",
    "messages": [
        {"role": "system", "content": "You are a helpful assistant. " * 8},
        {"role": "user", "content": "Solve the following grade-school math problem step by step. " * 12},
    ],
    "max_tokens": 512,
    "temperature": 0.0,
    "seed": 42,
}
ANSWER = "The answer is 42. " * 12


# --- upstream (subprocess) ---------------------------------------------------------------------
def serve(port_file: str, service_ms: float) -> None:
    from aiohttp import web

    delay = service_ms / 1000.0

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        slept = delay * random.uniform(0.5, 1.5) if delay else 0.0
        if slept:  # varied like real generation times, so a closed loop does not march in lockstep
            await asyncio.sleep(slept)
        return web.json_response(
            {
                "id": body.get("rid") or "x",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 300, "completion_tokens": 60, "total_tokens": 360},
            },
            headers={"X-Service-Time": f"{slept:.9f}"},  # lets the client subtract the simulated work
        )

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(main())


# --- load generator (subprocess) ---------------------------------------------------------------
def load(url: str, n: int, concurrency: int) -> None:
    import aiohttp

    payload = json.dumps(BODY).encode()

    async def main() -> None:
        lat: list[float] = []
        errors = 0
        todo = iter(range(n))
        conn = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=conn) as session:

            async def worker() -> None:
                nonlocal errors
                for _ in todo:
                    t0 = time.perf_counter()
                    async with session.post(
                        url, data=payload, headers={"Content-Type": "application/json"}
                    ) as resp:
                        await resp.read()
                        if resp.status != 200:
                            errors += 1
                        service = float(resp.headers.get("X-Service-Time", "0"))
                    lat.append(time.perf_counter() - t0 - service)

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            wall = time.perf_counter() - t0
        print(json.dumps({"latencies": lat, "wall": wall, "errors": errors}))

    asyncio.run(main())


# --- driver ------------------------------------------------------------------------------------
def _run_load(url: str, n: int, concurrency: int) -> dict:
    out = subprocess.run(
        [sys.executable, str(HERE), "--load", url, "--requests", str(n), "--concurrency", str(concurrency)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    data = json.loads(out.stdout)
    lat = sorted(data["latencies"])
    return {
        "p50_ms": 1000 * lat[len(lat) // 2],
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "rps": len(lat) / data["wall"],
        "errors": data["errors"],
    }


def _cpu_seconds(pid: int) -> float:
    """user+system CPU of a process (Linux /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drive(n: int, concurrency: int, rounds: int, service_ms: float) -> dict:
    from evalpipe.artifacts import RunDir, read_jsonl
    from evalpipe.recording.proxy import recording_proxy

    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port"
        upstream = subprocess.Popen(
            [sys.executable, str(HERE), "--serve", str(port_file), "--service-ms", str(service_ms)],
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30
            while not port_file.exists() or not port_file.read_text():
                if time.monotonic() > deadline or upstream.poll() is not None:
                    raise SystemExit("upstream did not start")
                time.sleep(0.05)
            base = f"http://127.0.0.1:{port_file.read_text()}"
            rundir = RunDir(Path(tmp) / "run")
            direct, proxied = [], []
            with recording_proxy(base, rundir) as proxy:
                # warm both paths (connection pools, imports, JIT-free but page cache etc.)
                urllib.request.urlopen(
                    urllib.request.Request(
                        proxy.base_url + "/v1/chat/completions",
                        data=json.dumps(BODY).encode(),
                        headers={"Content-Type": "application/json"},
                    )
                ).read()
                _run_load(base + "/v1/chat/completions", min(n, 500), concurrency)
                _run_load(proxy.base_url + "/v1/chat/completions", min(n, 500), concurrency)
                recorder_pid = proxy._proxy.recorder.proc.pid
                cpu_proxy = cpu_recorder = 0.0
                for _ in range(rounds):
                    direct.append(_run_load(base + "/v1/chat/completions", n, concurrency))
                    p0, r0 = time.process_time(), _cpu_seconds(recorder_pid)
                    proxied.append(_run_load(proxy.base_url + "/v1/chat/completions", n, concurrency))
                    proxy.flush()
                    cpu_proxy += time.process_time() - p0
                    cpu_recorder += _cpu_seconds(recorder_pid) - r0
                attempts = proxy.attempts
            rows = read_jsonl(rundir.requests_log)
            resp_bytes = rundir.responses_log.stat().st_size
        finally:
            os.killpg(upstream.pid, 9)
            upstream.wait()

    def med(rs: list[dict], k: str) -> float:
        return statistics.median(r[k] for r in rs)

    return {
        "requests_per_pass": n,
        "concurrency": concurrency,
        "rounds": rounds,
        "service_ms": service_ms,
        "direct": {k: round(med(direct, k), 3) for k in ("p50_ms", "p99_ms", "rps")},
        "proxied": {k: round(med(proxied, k), 3) for k in ("p50_ms", "p99_ms", "rps")},
        "added_p50_ms": round(med(proxied, "p50_ms") - med(direct, "p50_ms"), 3),
        "added_p99_ms": round(med(proxied, "p99_ms") - med(direct, "p99_ms"), 3),
        "rps_ratio": round(med(proxied, "rps") / med(direct, "rps"), 3),
        # CPU the proxy costs per request, independent of how busy the machine is
        "proxy_loop_cpu_ms_per_request": round(1000 * cpu_proxy / (n * rounds), 3),
        "recorder_cpu_ms_per_request": round(1000 * cpu_recorder / (n * rounds), 3),
        "errors": sum(r["errors"] for r in direct + proxied),
        "attempts_received": attempts,
        "attempts_logged": len(rows),
        "responses_gz_bytes": resp_bytes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000, help="requests per pass")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved direct/proxied passes")
    ap.add_argument("--service-ms", type=float, default=0.0, help="upstream service time per request")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--load", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.service_ms)
        return
    if args.load:
        load(args.load, args.requests, args.concurrency)
        return
    result = drive(args.requests, args.concurrency, args.rounds, args.service_ms)
    print(json.dumps(result, indent=2))
    goal = result["added_p50_ms"] <= 0.5 and result["rps_ratio"] >= 0.95
    print(
        f"added latency p50 {result['added_p50_ms']:.3f} ms, p99 {result['added_p99_ms']:.3f} ms; "
        f"throughput proxied/direct {result['rps_ratio']:.3f}x — goal (<= 0.5 ms, >= 0.95x) "
        f"{'met' if goal else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
