"""A reviewer's verdicts on the flips (``reviews.json``): checked against the run, kept, recorded.

``evalpipe audit RUN --reviews FILE`` checks the file (the model, the run's manifest, every sample one of
the run's) and keeps a copy as ``RUN/reviews.json``; every audit then records that copy in ``summary.json``
from the run directory alone, so a later audit without the option keeps the verdicts.  A file that does not
fit is a usage error naming the file and the field (exit 2).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from evalpipe.artifacts import RunDir, atomic_write_bytes, upgraded
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.reviews import REVIEW_VERDICTS, ReviewsFile, ReviewsRecord
from evalpipe.errors import ArtifactError, ConfigError
from evalpipe.hashing import sha256_hex


def parse_reviews(path: Path, data: bytes, manifest: Manifest, manifest_sha256: str) -> ReviewsFile:
    """The reviews in ``data`` (read from ``path``), or ``ConfigError`` naming the field that does not fit."""
    try:
        raw = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None
    try:
        raw = upgraded(path, raw, ReviewsFile)  # a newer version refused, an older one lifted
    except ArtifactError as exc:
        raise ConfigError(exc.message) from None
    try:
        reviews = ReviewsFile.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {err['msg']}") from None
    if reviews.manifest_sha256 != manifest_sha256:
        raise ConfigError(
            f"{path}: manifest_sha256: {reviews.manifest_sha256[:12]}… is not this run's manifest "
            f"({manifest_sha256[:12]}…): the verdicts are about other samples"
        )
    known = {(e.benchmark, e.source_id) for e in manifest.entries}
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(reviews.reviews):
        key = (r.benchmark, r.source_id)
        if key not in known:
            raise ConfigError(f"{path}: reviews.{i}: {r.benchmark}/{r.source_id} is not a sample of this run")
        if key in seen:
            raise ConfigError(f"{path}: reviews.{i}: {r.benchmark}/{r.source_id} has two verdicts")
        seen.add(key)
    return reviews


def keep_reviews(source: Path, rundir: RunDir, manifest: Manifest) -> None:
    """Check ``source`` against the run and copy it to ``RUN/reviews.json`` (atomically, bytes unchanged)."""
    source = Path(source)
    if not source.is_file():
        raise ConfigError(f"--reviews {source}: no such file")
    data = source.read_bytes()
    parse_reviews(source, data, manifest, sha256_hex(rundir.manifest.read_bytes()))
    atomic_write_bytes(rundir.reviews, data)


def reviews_record(rundir: RunDir, manifest: Manifest) -> ReviewsRecord | None:
    """``summary.reviews`` from ``RUN/reviews.json``; None without one."""
    if not rundir.reviews.is_file():
        return None
    data = rundir.reviews.read_bytes()
    reviews = parse_reviews(rundir.reviews, data, manifest, sha256_hex(rundir.manifest.read_bytes()))
    counts = Counter(str(r.verdict) for r in reviews.reviews)
    return ReviewsRecord(
        file=rundir.reviews.name,
        sha256=sha256_hex(data),
        exported_at=reviews.exported_at,
        counts={v: counts.get(v, 0) for v in REVIEW_VERDICTS},
        reviews=reviews.reviews,
    )
