"""``evalpipe.hashing.attempt_seed``: the request seed of one attempt at one sample."""

from __future__ import annotations

import hashlib

from evalpipe.hashing import ATTEMPT_SEED_MASK, attempt_seed


def test_attempts_of_one_sample_get_distinct_seeds() -> None:
    seeds = [attempt_seed(42, "gsm8k", "1234", a) for a in range(8)]
    assert len(set(seeds)) == 8  # a constant (one seed for every attempt) fails here


def test_samples_get_distinct_seeds() -> None:
    seeds = {attempt_seed(42, "gsm8k", str(i), 0) for i in range(200)}
    assert len(seeds) == 200


def test_same_inputs_same_seed_so_every_arm_sends_the_same() -> None:
    """The arms of a paired run share (seed, benchmark, source_id, attempt): nothing arm-specific enters."""
    assert attempt_seed(42, "gsm8k", "1234", 1) == attempt_seed(42, "gsm8k", "1234", 1)
    assert attempt_seed(42, "gsm8k", "1234", 1) != attempt_seed(43, "gsm8k", "1234", 1)
    assert attempt_seed(42, "gsm8k", "1234", 1) != attempt_seed(42, "math_500", "1234", 1)


def test_known_values_pinned() -> None:
    """The definition, and values pinned so that a change of it (which would change every request a resumed
    or extended run sends) is seen."""
    digest = hashlib.sha256(b"42:attempt-seed:gsm8k:7:1").digest()
    assert attempt_seed(42, "gsm8k", "7", 1) == int.from_bytes(digest[:8], "big") & 0x7FFF_FFFF
    assert [attempt_seed(42, "gsm8k", "7", a) for a in range(3)] == [35798802, 536068798, 874178379]


def test_seeds_are_positive_31_bit() -> None:
    seeds = [
        attempt_seed(s, "ifeval", str(i), a) for s in (0, 42, 2**40) for i in range(50) for a in range(4)
    ]
    assert all(isinstance(x, int) and 0 <= x <= ATTEMPT_SEED_MASK for x in seeds)
    assert max(x for x in seeds if x is not None) > 2**30  # the full 31 bits are used


def test_no_seed_sends_none() -> None:
    assert attempt_seed(None, "gsm8k", "7", 0) is None
    assert attempt_seed(None, "gsm8k", "7", 1) is None
