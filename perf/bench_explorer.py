"""explorer.html at scale: a synthetic 2,000-sample paired run with 60,000-character reasoning traces.

Why: the explorer is one file that must open from ``file://``; a long-reasoning model's run is what makes it
big.  The goals (issue 31): the page builds in < 10 s, stays under its size limit (default 20 MB; flips whole,
the rest cut to head and tail), and opens and applies a filter in a real browser in < 2 s.  A benchmark, not a
timed test: it prints the figures and whether each goal was met.

    .venv/bin/python perf/bench_explorer.py [--samples 2000] [--trace 60000] [--flips 0.05] [--keep DIR]

Each arm is written as the pipeline lays it out (``tests/helpers/text_runs.py``: outcomes, requests, one
gzip member per response, EvalScope's prediction rows); traces are drawn from a 2,000-word vocabulary so they
compress like text, not like one repeated letter.  The browser is Debian's Chromium through Playwright
(``make browser-deps``); the figures are the median of three page loads.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.browser import chromium, open_page
from helpers.scored_runs import one_stratum_manifest
from helpers.text_runs import Answer, write_text_run

from evalpipe.artifacts import RunDir
from evalpipe.compare import Arms, Bootstrap, PairedDesign, compare_runs
from evalpipe.explore import DEFAULT_LIMIT_BYTES, build_paired_explorer


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(2000)]


def _traces(rng: random.Random, words: list[str], chars: int, n: int) -> list[str]:
    """``n`` distinct traces of ``chars`` characters (each sample prefixes its own id, so no two are equal)."""
    out = []
    for _ in range(n):
        text = " ".join(rng.choices(words, k=chars // 5))
        out.append((text * (chars // max(1, len(text)) + 1))[:chars])
    return out


def build_pair(root: Path, samples: int, trace: int, flip_share: float, seed: int = 31) -> Path:
    rng = random.Random(seed)
    words = _traces(rng, _vocabulary(rng), trace, 64)
    ids = {"math": [f"m{i:05d}" for i in range(samples // 2)], "gpqa": [f"g{i:05d}" for i in range(samples - samples // 2)]}  # fmt: skip
    manifest = one_stratum_manifest(seed, ids)
    control: dict[tuple[str, str], Answer] = {}
    test: dict[tuple[str, str], Answer] = {}
    for i, e in enumerate(manifest.entries):
        key = (e.benchmark, e.source_id)
        base = f"{e.source_id}: " + words[i % len(words)]
        right = rng.random() < 0.7
        control[key] = Answer(
            f"The answer is \\boxed{{{i}}}.", right, reasoning=base[:trace], extracted=str(i)
        )
        roll = rng.random()
        if roll < flip_share / 2:  # a regression or an improvement: the test arm flips the control's score
            test[key] = Answer(
                f"So it is \\boxed{{{i + 1}}}.", not right, reasoning=base[::-1][:trace], extracted=str(i + 1)
            )
        elif roll < flip_share:  # the budget ran out while thinking
            test[key] = Answer("", False, reasoning=base[:trace], finish_reason="length")
        else:
            test[key] = Answer(control[key].text, right, reasoning=base[:trace], extracted=str(i))
    write_text_run(root / "control", manifest, control, tag="c")
    write_text_run(root / "test", manifest, test, tag="t")
    return root


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--trace", type=int, default=60_000)
    ap.add_argument("--flips", type=float, default=0.05, help="share of samples whose test arm differs")
    ap.add_argument("--keep", type=Path, default=None, help="build here and keep the files")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "pair"
        t0 = time.perf_counter()
        build_pair(root, args.samples, args.trace, args.flips)
        t1 = time.perf_counter()
        result = compare_runs(
            PairedDesign(Arms(root / "test", root / "control", "test", "control"), bootstrap=Bootstrap(resamples=1000))
        )
        t2 = time.perf_counter()
        built = build_paired_explorer(result, root)
        t3 = time.perf_counter()
        rec = built.record
        raw = sum(p.stat().st_size for p in root.rglob(RunDir(root).responses_log.name))
        print(f"synthetic pair: {args.samples} samples x 2 arms, {args.trace:,}-character traces "
              f"(responses.jsonl.gz {raw / 1e6:.1f} MB together), written in {t1 - t0:.1f} s, compared in {t2 - t1:.1f} s")  # fmt: skip
        print(f"build: {t3 - t2:.2f} s (goal < 10 s: {'met' if t3 - t2 < 10 else 'MISSED'})")
        print(f"size: {rec.bytes / 1e6:.2f} MB of {rec.limit_bytes / 1e6:.0f} MB "
              f"(goal <= limit: {'met' if rec.bytes <= DEFAULT_LIMIT_BYTES else 'MISSED'}); {rec.tier}; "
              f"{rec.truncated} of {rec.samples} samples truncated")  # fmt: skip
        opens, filters, cards = [], [], []
        with chromium() as browser:
            for _ in range(3):
                start = time.perf_counter()
                opened = open_page(browser, built.path)
                loaded = time.perf_counter()
                page = opened.page
                page.select_option("select[name=flip]", "regression")
                page.wait_for_function("() => location.hash.includes('flip=regression')")
                page.wait_for_function("() => [...document.querySelectorAll('#queue li')].every(li => li.textContent.startsWith('regression'))")  # fmt: skip
                filtered = time.perf_counter()
                page.keyboard.press("j")
                page.wait_for_function("() => document.querySelector('#card h2') && location.hash.split('?')[0] === '#' + document.querySelectorAll('#queue li')[1].dataset.key")  # fmt: skip
                carded = time.perf_counter()
                assert not opened.dialogs and not opened.errors, (opened.dialogs, opened.errors)
                opens.append(loaded - start)
                filters.append(filtered - loaded)
                cards.append(carded - filtered)
                opened.close()
        total = statistics.median(o + f for o, f in zip(opens, filters, strict=True))
        print(f"browser (median of 3): open {statistics.median(opens):.2f} s, filter to the regressions "
              f"{statistics.median(filters):.2f} s, next flipped card (decompressed) {statistics.median(cards):.2f} s; "
              f"open + filter {total:.2f} s (goal < 2 s: {'met' if total < 2 else 'MISSED'})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
