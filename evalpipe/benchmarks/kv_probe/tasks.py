"""The probe tasks: what evidence goes into the context, the question asked, and the answers exact match
accepts.  RULER-style (Hsieh et al. 2024) needle, multi-key, multi-value and variable-tracking tasks, plus
three a 135M model can do at a few hundred tokens (a word, a two-digit value, a repeated key).

Every choice is a ``Draw`` from sha256(seed, item id, counter): the same spec and id give the same item on
any machine and Python version.  Words and names are written here for the probe (no dataset).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import pairwise, permutations

from evalpipe.benchmarks.kv_probe.spec import TaskName

# answer words: concrete lowercase nouns, none of them in the filler vocabulary (filler.py)
ANSWER_WORDS = (
    "apple", "anchor", "banjo", "candle", "cactus", "dolphin", "falcon", "garlic", "guitar", "hammer",
    "harbor", "igloo", "jacket", "kettle", "ladder", "lemon", "magnet", "mirror", "needle", "orange",
    "otter", "parrot", "pepper", "pillow", "pumpkin", "rabbit", "rocket", "saddle", "tomato", "trumpet",
    "tulip", "violin", "walnut", "wagon", "zebra", "basket", "button", "copper", "marble", "velvet",
)  # fmt: skip
# keys for the keyed tasks (RULER's "special magic number for KEY")
KEY_WORDS = (
    "amber-fox", "blue-heron", "cold-spring", "dry-canyon", "east-tower", "far-island", "gray-owl",
    "high-meadow", "iron-gate", "jade-lake", "keen-arrow", "long-bridge", "misty-peak", "north-wind",
    "old-mill", "pale-moon", "quiet-bay", "red-cliff", "silver-creek", "tall-pine",
)  # fmt: skip
VAR_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"


class Draw:
    """Deterministic choices for one item: the n-th draw is sha256(seed:item:n)."""

    def __init__(self, seed: int, item: str) -> None:
        self._prefix = f"{seed}:{item}:"
        self._n = 0

    def below(self, n: int) -> int:
        digest = hashlib.sha256(f"{self._prefix}{self._n}".encode()).digest()
        self._n += 1
        return int.from_bytes(digest[:8], "big") % n

    def pick(self, options: tuple[str, ...]) -> str:
        return options[self.below(len(options))]

    def distinct(self, options: tuple[str, ...], k: int) -> list[str]:
        out: list[str] = []
        while len(out) < k:
            choice = self.pick(options)
            if choice not in out:
                out.append(choice)
        return out

    def number(self, lo: int, hi: int) -> int:
        return lo + self.below(hi - lo + 1)


@dataclass(frozen=True)
class TaskItem:
    """The evidence sentences (the first is the one the question asks about), the question and every
    answer exact match accepts (already in TriviaQA's normalised form: lowercase, single spaces)."""

    evidence: tuple[str, ...]
    question: str
    answers: tuple[str, ...]


def _stated(value: str, statement: str) -> tuple[str, ...]:
    """The value alone, and the value stated as the question's own sentence (TriviaQA's normal form: lowercase,
    no article, no punctuation) — exact match accepts either, as TriviaQA accepts an answer's aliases.  Why: a
    small model answers "The special magic number is 48." rather than "ANSWER: 48"; EvalScope 1.14's
    ``acc`` with ``allow_inclusion`` matches whole alternatives, not substrings, so without the stated form a
    right retrieval would score 0 (measured: SmolLM2-135M, 16 of 16 right retrievals scored 0)."""
    return (value, statement)


def _all_orders(values: list[str]) -> tuple[str, ...]:
    return tuple(" ".join(p) for p in permutations(values))


def build(task: TaskName, draw: Draw) -> TaskItem:
    if task == "word":
        w = draw.pick(ANSWER_WORDS)
        return TaskItem(
            (f"The special magic word is {w}.",),
            "What is the special magic word?",
            _stated(w, f"special magic word is {w}"),
        )
    if task == "two_digit":
        n = str(draw.number(10, 99))
        return TaskItem(
            (f"The special magic number is {n}.",),
            "What is the special magic number?",
            _stated(n, f"special magic number is {n}"),
        )
    if task == "repeated_key":
        w = draw.pick(ANSWER_WORDS)
        sentence = f"The special magic word is {w}."
        return TaskItem(
            (sentence, sentence, sentence), "What is the special magic word?", _stated(w, f"special magic word is {w}")
        )
    if task == "single_key":
        key, n = draw.pick(KEY_WORDS), str(draw.number(100000, 999999))
        return TaskItem(
            (f"One of the special magic numbers for {key} is: {n}.",),
            f"What is the special magic number for {key}?",
            _stated(n, f"special magic number for {key.replace('-', ' ')} is {n}"),
        )
    if task == "multi_key":
        keys = draw.distinct(KEY_WORDS, 4)
        values = [str(draw.number(100000, 999999)) for _ in keys]
        evidence = tuple(
            f"One of the special magic numbers for {k} is: {v}." for k, v in zip(keys, values, strict=True)
        )
        return TaskItem(
            evidence,
            f"What is the special magic number for {keys[0]}?",
            _stated(values[0], f"special magic number for {keys[0].replace('-', ' ')} is {values[0]}"),
        )
    if task == "multi_value":
        key = draw.pick(KEY_WORDS)
        values = [str(draw.number(100000, 999999)) for _ in range(3)]
        evidence = tuple(f"One of the special magic numbers for {key} is: {v}." for v in values)
        return TaskItem(
            evidence,
            f"What are all the special magic numbers for {key}? List them separated by spaces.",
            _all_orders(values),
        )
    # variable_tracking: a chain of assignments; the question names the last variable
    names = ["".join(draw.pick(tuple(VAR_LETTERS)) for _ in range(5)) for _ in range(4)]
    value = str(draw.number(10000, 99999))
    chain = [f"VAR {names[0]} = {value}."] + [f"VAR {b} = VAR {a}." for a, b in pairwise(names)]
    return TaskItem(tuple(chain), f"What is the value of VAR {names[-1]}?", (value,))
