"""The sequence order depends on the sampling seed: two seeds order one block's units differently, so a
resampled run is not judged in the same order (``evalpipe.hashing.sequence_key``)."""

from __future__ import annotations

import hashlib

from evalpipe.hashing import block_order, sequence_key


def test_the_sequence_key_is_the_documented_hash_of_the_seed() -> None:
    expected = hashlib.sha256(b"7:sequence:gsm8k:s01").hexdigest()
    assert sequence_key(7, "gsm8k", "s01") == expected != sequence_key(8, "gsm8k", "s01")
    units = [("gsm8k", f"s{i:02d}") for i in range(20)]
    assert block_order(7, units) != block_order(8, units)
