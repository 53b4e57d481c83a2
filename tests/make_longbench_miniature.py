"""Writes evalpipe/selftest/data/longbench_v2/data.jsonl: an invented LongBench-v2 miniature.

Native schema (``_id, domain, sub_domain, difficulty, length, question, choice_A…D, answer, context``),
one item per length × difficulty.  Each context is an invented harbour ledger of tens of thousands of
characters (short ≈ 30k, medium ≈ 60k, long ≈ 120k — far below real LongBench-v2 lengths, which run from
8k to 2M words); the question is answerable from one entry (easy) or two entries combined (hard) buried
in the ledger.  It exercises the pipeline with long prompts; it measures nothing about a model.

Run ``python tests/make_longbench_miniature.py`` to rewrite it; a test checks the file matches.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "evalpipe" / "selftest" / "data" / "longbench_v2" / "data.jsonl"
SIZES = {"short": 30_000, "medium": 60_000, "long": 120_000}
SHIPS = [
    "Grey Heron",
    "Salt Lantern",
    "Amber Finch",
    "Northern Quill",
    "Tidewright",
    "Copper Gull",
    "Marrow Star",
]
PORTS = ["Olmsted", "Varrick", "Fennhold", "Brisk Harbour", "Lowmere", "Castellan", "Drummock", "Iyla"]
GOODS = ["crates of copper wire", "barrels of lamp oil", "bales of wool", "sacks of barley", "chests of tea"]
MONTHS = ["Thaw", "Seedfall", "Highsun", "Harvest", "Emberwane", "Frostgate"]


def entry(rng: random.Random, n: int) -> str:
    return (
        f"Entry {n:05d}. On day {rng.randint(1, 28)} of {rng.choice(MONTHS)}, the ship '{rng.choice(SHIPS)}' "
        f"carried {rng.randint(3, 90)} {rng.choice(GOODS)} from {rng.choice(PORTS)} to {rng.choice(PORTS)}. "
        f"The harbourmaster noted fair weather and a crew of {rng.randint(4, 30)}.\n"
    )


def item(index: int, length: str, difficulty: str) -> dict[str, str]:
    rng = random.Random(f"longbench-miniature:{index}")
    lines: list[str] = []
    n = 0
    while sum(map(len, lines)) < SIZES[length]:
        lines.append(entry(rng, n))
        n += 1
    ship = f"Lantern of {['Ash', 'Brine', 'Cedar', 'Dusk', 'Ember', 'Fjord'][index]}"
    first, second = rng.randint(10, 60), rng.randint(10, 60)
    a, b = len(lines) // 3, (2 * len(lines)) // 3
    lines[a] = (
        f"Entry {a:05d}. On day 9 of Harvest, the ship '{ship}' carried {first} casks of blue dye from "
        "Olmsted to Varrick. The harbourmaster noted a storm warning.\n"
    )
    lines[b] = (
        f"Entry {b:05d}. On day 17 of Emberwane, the ship '{ship}' carried {second} casks of blue dye from "
        "Varrick to Lowmere. The harbourmaster noted a late arrival.\n"
    )
    if difficulty == "easy":
        question = f"According to the ledger, how many casks of blue dye did the ship '{ship}' carry from Olmsted to Varrick?"
        right = first
    else:
        question = f"According to the ledger, how many casks of blue dye did the ship '{ship}' carry in total over both of its voyages?"
        right = first + second
    wrong = [right + d for d in (-7, 5, 11, -3, 2) if right + d > 0 and right + d != right][:3]
    options = [right, *wrong]
    letter = "ABCD"[index % 4]
    options.remove(right)
    options.insert(index % 4, right)
    return {
        "_id": f"lbv2-mini-{index:02d}-{length}-{difficulty}",
        "domain": "Long Structured Data Understanding",
        "sub_domain": "Table QA",
        "difficulty": difficulty,
        "length": length,
        "question": question,
        "choice_A": str(options[0]),
        "choice_B": str(options[1]),
        "choice_C": str(options[2]),
        "choice_D": str(options[3]),
        "answer": letter,
        "context": "The harbour ledger of Olmsted county (invented).\n\n" + "".join(lines),
    }


def content() -> str:
    cells = [(length, difficulty) for length in SIZES for difficulty in ("easy", "hard")]
    return "".join(json.dumps(item(i, *cell), ensure_ascii=False) + "\n" for i, cell in enumerate(cells))


if __name__ == "__main__":
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(content(), encoding="utf-8")
    sys.stdout.write(f"{OUT}: {OUT.stat().st_size} bytes\n")
