"""The haystack: plain sentences generated here from small word lists written for the probe (no corpus,
no download, nothing copied).  Like RULER's "noise" haystack it carries no facts a question could ask
about; none of its words is an answer word or a key (tasks.py), so only the evidence can answer.
"""

from __future__ import annotations

from evalpipe.benchmarks.kv_probe.tasks import Draw

ADJECTIVES = (
    "quiet", "bright", "narrow", "gentle", "ancient", "busy", "distant", "golden", "humble", "patient",
    "sudden", "tired", "wide", "small", "warm", "early", "heavy", "simple", "steady", "clever",
)  # fmt: skip
NOUNS = (
    "farmer", "river", "village", "teacher", "garden", "road", "market", "sailor", "forest", "window",
    "baker", "valley", "letter", "bridge", "child", "doctor", "meadow", "story", "traveler", "cloud",
)  # fmt: skip
VERBS = (
    "walks past", "looks at", "waits near", "thinks about", "remembers", "passes", "finds", "follows",
    "returns to", "listens to", "paints", "visits", "leaves", "watches", "crosses",
)  # fmt: skip
ENDINGS = (
    "in the morning", "after the rain", "before dinner", "every spring", "at noon", "once again",
    "without a word", "for a while", "in the evening", "on the way home",
)  # fmt: skip


def sentences(draw: Draw, count: int) -> list[str]:
    """``count`` filler sentences (about nine tokens each)."""
    out = []
    for _ in range(count):
        out.append(
            f"The {draw.pick(ADJECTIVES)} {draw.pick(NOUNS)} {draw.pick(VERBS)} the "
            f"{draw.pick(ADJECTIVES)} {draw.pick(NOUNS)} {draw.pick(ENDINGS)}."
        )
    return out
