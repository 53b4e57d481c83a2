"""Load + hash + select throughput on an LCB-scale synthetic dataset, as a ratio to plain sha256.

Builds N LiveCodeBench-shaped records with ~S MB of test-case text each in a temp directory, then in one
run measures (a) ``hashlib.sha256`` over the file's bytes and (b) evalpipe's full path: read the JSONL,
canonicalise, hash every record, fingerprint, and select 6 per difficulty.  Reports bytes/s of both and
the ratio (b)/(a).  Goal: >= 0.5.

    python perf/bench_sampling.py [--records 500] [--mb-per-record 1.0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import string
import tempfile
import time
from pathlib import Path


def build_dataset(directory: Path, records: int, mb_per_record: float, seed: int = 0) -> Path:
    rng = random.Random(seed)
    path = directory / "livecodebench" / "synthetic.jsonl"
    path.parent.mkdir(parents=True)
    alphabet = string.ascii_letters + string.digits + " \n"
    # one random block reused with per-record offsets: realistic text, cheap to generate
    block = "".join(rng.choice(alphabet) for _ in range(1 << 16))
    target = int(mb_per_record * 1_000_000)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(records):
            tests = []
            size = 0
            while size < target:
                start = rng.randrange(len(block) - 4096)
                inp = block[start : start + 2048]
                tests.append({"input": inp, "output": str(rng.randrange(10**9)), "testtype": "stdin"})
                size += len(inp) + 16
            rec = {
                "question_title": f"Problem {i}",
                "question_content": f"Solve problem {i}.\n" + block[:512],
                "platform": "atcoder",
                "question_id": f"syn{i:05d}",
                "contest_id": f"c{i // 7}",
                "contest_date": "2025-01-01T00:00:00",
                "starter_code": "",
                "difficulty": ("easy", "medium", "hard")[i % 3],
                "public_test_cases": json.dumps(tests),
                "metadata": "{}",
            }
            fh.write(json.dumps(rec) + "\n")
    return path


def time_plain_sha256(path: Path) -> float:
    t0 = time.perf_counter()
    data = path.read_bytes()
    hashlib.sha256(data).hexdigest()
    return time.perf_counter() - t0


def time_evalpipe(path: Path) -> tuple[float, int]:
    from evalpipe.config.models import SamplingRule
    from evalpipe.samplers.loading import load_local
    from evalpipe.samplers.run import select_benchmark

    plan = SamplingRule(benchmark="live_code_bench", stratify_by="difficulty", per_stratum=6)
    t0 = time.perf_counter()
    data = load_local("live_code_bench", path.parent)
    _ = data.eval.fingerprint
    _, selected = select_benchmark(data, plan, 42, few_shot=0, pinned=None, allow_drift=False)
    return time.perf_counter() - t0, len(selected)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=500)
    ap.add_argument("--mb-per-record", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalpipe-bench-") as tmp:
        path = build_dataset(Path(tmp), args.records, args.mb_per_record)
        size = path.stat().st_size
        plain, ours = [], []
        for _ in range(args.repeat):
            plain.append(time_plain_sha256(path))
            t, n = time_evalpipe(path)
            ours.append(t)
        p, o = statistics.median(plain), statistics.median(ours)
        print(f"dataset: {args.records} records, {size / 1e6:.0f} MB ({n} selected)")
        print(f"plain sha256          : {size / p / 1e6:8.1f} MB/s  (median of {args.repeat}: {p:.2f} s)")
        print(f"evalpipe load+hash+sel: {size / o / 1e6:8.1f} MB/s  (median of {args.repeat}: {o:.2f} s)")
        ratio = p / o
        print(f"ratio evalpipe/plain  : {ratio:.2f}  (goal >= 0.50: {'met' if ratio >= 0.5 else 'NOT met'})")


if __name__ == "__main__":
    main()
