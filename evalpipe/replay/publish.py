"""``evalpipe publish RUN_DIR BUNDLE_DIR`` — a small, committable sign-off bundle.

The bundle keeps run-directory file names (so every reader works on it unchanged) and holds what a
reviewer needs: the claim (summary.json, report.md), the spine (manifest.json, sampled_ids.csv, run.json,
config.yaml), provenance and the redacted server config, and the request/response log to replay the
evaluation without a GPU.  No dataset content is copied (licenses differ): replay re-reads the pinned
datasets.  Absolute local paths in ``sources.json`` are not published.  A secret scan must pass first.
"""

from __future__ import annotations

import hashlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

from evalpipe import __version__
from evalpipe.artifacts import RunDir, read_model, write_model
from evalpipe.artifacts.schema.bundle import BundleFile, BundleIndex
from evalpipe.audit.secret_scan import scan_paths
from evalpipe.errors import ArtifactError, EvalpipeError
from evalpipe.recording.responses import read_response_records

DEFAULT_CAP_BYTES = 20 * 1024 * 1024
BUNDLE_INDEX = "bundle.json"


def bundle_paths(rd: RunDir) -> list[tuple[Path, bool]]:
    """(path, required) of every file a bundle carries."""
    return [
        (rd.summary, True),
        (rd.report_md, True),
        (rd.report_html, False),
        (rd.sampled_ids, True),
        (rd.manifest, True),
        (rd.run_record, True),
        (rd.config_copy, True),
        (rd.provenance, False),
        (rd.server_verification, False),
        (rd.server_info, False),
        (rd.model_info, False),
        (rd.server_launch, False),
        (rd.outcomes, True),
        (rd.cache_repairs, False),
        (rd.requests_log, True),
        (rd.responses_log, True),
    ]


class PublishRefused(EvalpipeError):
    """The run cannot be published as it is (missing files, secrets, over the size cap)."""


def publish(run_dir: Path, bundle_dir: Path, *, cap_bytes: int = DEFAULT_CAP_BYTES) -> BundleIndex:
    rd = RunDir(Path(run_dir))
    missing = [
        str(p.relative_to(rd.root)) for p, required in bundle_paths(rd) if required and not p.is_file()
    ]
    if missing:
        raise PublishRefused(
            f"{rd.root}: cannot publish, missing {', '.join(missing)} (run the audit first?)"
        )
    present = [p for p, _ in bundle_paths(rd) if p.is_file()]
    hits = scan_paths(rd.root, present)
    if hits:
        raise PublishRefused(
            "refusing to publish: secret-looking values found",
            details=[f"{h.path} {h.where}: {h.kind}" for h in hits],
        )
    total = sum(p.stat().st_size for p in present)
    if total > cap_bytes:
        raise PublishRefused(
            f"bundle would be {total / 1e6:.1f} MB, over the cap of {cap_bytes / 1e6:.1f} MB (raise --max-mb)"
        )
    out = RunDir(Path(bundle_dir))
    if out.root.exists() and any(out.root.iterdir()):
        raise PublishRefused(f"{out.root}: not empty; publish into a new directory")
    files: list[BundleFile] = []
    for src in present:
        rel = src.relative_to(rd.root)
        dst = out.root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        data = dst.read_bytes()
        files.append(BundleFile(path=str(rel), bytes=len(data), sha256=hashlib.sha256(data).hexdigest()))
    try:
        responses = len(read_response_records(out.responses_log))
    except ArtifactError as exc:
        raise PublishRefused(f"responses log unreadable: {exc.message}") from None
    index = BundleIndex(
        run_id=rd.root.name,
        published_at=datetime.now(UTC).isoformat(timespec="seconds"),
        evalpipe_version=__version__,
        files=files,
        total_bytes=sum(f.bytes for f in files),
        cap_bytes=cap_bytes,
        responses=responses,
    )
    write_model(out.root / BUNDLE_INDEX, index)
    return index


def check_bundle(bundle_dir: Path) -> list[str]:
    """Files of a bundle whose content no longer matches ``bundle.json`` (tampering, corruption)."""
    root = Path(bundle_dir)
    index_path = root / BUNDLE_INDEX
    if not index_path.is_file():
        return []
    index = read_model(index_path, BundleIndex)
    problems = []
    for f in index.files:
        p = root / f.path
        if not p.is_file():
            problems.append(f"{f.path}: missing")
        elif hashlib.sha256(p.read_bytes()).hexdigest() != f.sha256:
            problems.append(f"{f.path}: content differs from bundle.json")
    return problems
