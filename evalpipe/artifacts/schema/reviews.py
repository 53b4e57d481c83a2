"""``reviews.json`` — a reviewer's verdicts on flips, exported from ``explorer.html``.

The explorer is offline: the reviewer marks each flip a regression, a grader error or noise, with a note,
and downloads the verdicts as this file.  ``evalpipe audit RUN --reviews FILE`` validates it against the
run's manifest, keeps a copy as ``RUN/reviews.json`` (so every later audit reads it from the run directory
alone) and records it in ``summary.json`` and the report.  Verdicts are a human's reading of the evidence:
they change no score and no gate.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row

ReviewVerdict = Literal["regression", "grader_error", "noise"]
REVIEW_VERDICTS: tuple[str, ...] = get_args(ReviewVerdict)

#: How the two arms of a paired sample differ (the explorer's queue order): the test arm wrong where the
#: control was right, the reverse, the same score with different answers, or nothing to tell them apart.
FlipKind = Literal["regression", "improvement", "answers_differ", "same"]


class SampleReview(Row):
    benchmark: str
    source_id: str
    verdict: ReviewVerdict
    note: str = Field(default="", description="The reviewer's reason, free text.")
    flip: FlipKind | None = Field(default=None, description="What the explorer showed for the sample.")


class ReviewsFile(Artifact):
    schema_version: int = 1
    manifest_sha256: str = Field(
        description="sha256 of the manifest.json the reviewed explorer was built on."
    )
    label_test: str | None = Field(default=None, description="The arm under test, as the explorer named it.")
    label_control: str | None = None
    exported_at: str = Field(description="UTC ISO-8601, the reviewer's clock.")
    reviews: list[SampleReview]


class ReviewsRecord(Row):
    """What ``summary.json`` records of the run's ``reviews.json``."""

    file: str = Field(description="Relative to the run directory.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    exported_at: str
    counts: dict[str, int] = Field(description="Verdict → samples.")
    reviews: list[SampleReview]
