"""explorer.html from files alone (no browser): the escaped data block and its CSP, the size tiers, the
``evalpipe explore`` command, and ``audit --reviews`` refusing a file that does not fit the run."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import random
import re
from pathlib import Path

import pytest
from helpers.scored_runs import one_stratum_manifest
from helpers.text_runs import Answer, write_text_run

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.explorer import ExplorerData, SampleCard
from evalpipe.cli.main import main
from evalpipe.compare import AAPair, Arms, Bootstrap, PairedDesign, compare_runs
from evalpipe.explore import build_paired_explorer, build_run_explorer
from evalpipe.hashing import sha256_hex
from evalpipe.run.compare_files import write_compare

HOSTILE = (
    "</script><script>alert(1)</script> <img src=x onerror=alert(1)> \u2028 \u2029 ' & javascript:alert(1)"
)


def _pair(root: Path, n: int, *, flips: int, trace: int, hostile: bool = False) -> Path:
    """``n`` GSM8K samples; the first ``flips`` regress in the test arm; every answer carries a trace."""
    ids = [f"q{i:04d}" for i in range(n)]
    noise = random.Random(n)
    manifest = one_stratum_manifest(3, {"gsm8k": ids})
    keys = [(e.benchmark, e.source_id) for e in manifest.entries]
    control = {
        k: Answer("The answer is 42.", True, reasoning=_trace(noise, trace), extracted="42") for k in keys
    }
    test = {
        k: Answer(
            HOSTILE if hostile else "The answer is 41.", False, reasoning=_trace(noise, trace), extracted="41"
        )
        if i < flips
        else Answer("The answer is 42.", True, reasoning=_trace(noise, trace), extracted="42")
        for i, k in enumerate(keys)
    }
    write_text_run(root / "control", manifest, control, tag="c")
    write_text_run(root / "test", manifest, test, tag="t")
    return root


def _trace(noise: random.Random, chars: int) -> str:
    """Reasoning that gzip cannot shrink much (hex of random bytes), as long traces of a real model are not
    runs of one letter."""
    return noise.randbytes(chars // 2 + 1).hex()[:chars]


def _compare(root: Path) -> object:
    return compare_runs(PairedDesign(Arms(root / "test", root / "control", "test", "control"), bootstrap=Bootstrap(resamples=200)))


def _data(html: str) -> ExplorerData:
    m = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S)
    assert m is not None
    return ExplorerData.model_validate_json(m.group(1))


def _card(packed: str) -> SampleCard:
    return SampleCard.model_validate_json(gzip.decompress(base64.b64decode(packed)))


def test_page_escapes_the_data_and_allows_only_its_own_script(tmp_path: Path) -> None:
    root = _pair(tmp_path, 4, flips=1, trace=10, hostile=True)
    built = build_paired_explorer(_compare(root), root)  # type: ignore[arg-type]
    html = built.path.read_text()
    block = html[html.index('id="explorer-data">') : html.index("</script>")]
    assert not any(ch in block[len('id="explorer-data">') :] for ch in "<>&'\u2028\u2029")
    data = _data(html)
    flip = data.samples[0]
    assert (flip.key, flip.flip) == ("gsm8k/" + flip.source_id, "regression")
    assert HOSTILE in flip.search and _card(flip.card).arms[1].answer == HOSTILE
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    script = html[html.rindex("<script>") + len("<script>") : html.rindex("</script>")]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = csp.group(1).replace("&#x27;", "'")
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy
    assert "connect-src 'none'" in policy and "unsafe" not in policy
    assert [d.label for d in data.arms] == ["control", "test"]


def test_size_tiers_keep_flips_whole_and_point_to_the_rest(tmp_path: Path) -> None:
    root = _pair(tmp_path, 30, flips=3, trace=40_000)
    whole = build_paired_explorer(_compare(root), root)  # type: ignore[arg-type]
    assert whole.record.truncated == 0 and whole.record.tier == "every text whole"
    limit = whole.record.bytes // 2
    cut = build_paired_explorer(_compare(root), root, limit_bytes=limit)  # type: ignore[arg-type]
    assert cut.record.bytes <= limit < whole.record.bytes
    data = _data(cut.path.read_text())
    with gzip.open(RunDir(root / "test").responses_log, "rt") as fh:
        bodies = [json.loads(line)["body"] for line in fh]
    for s in data.samples:
        card = _card(s.card)
        test_arm = card.arms[1]
        if s.flip == "regression":
            assert not s.truncated and len(test_arm.reasoning) == 40_000 and test_arm.reasoning_cut is None
            continue
        assert s.truncated and test_arm.reasoning_cut is not None
        ptr = test_arm.reasoning_cut
        assert ptr.responses_line is not None
        whole_text = json.loads(bodies[ptr.responses_line - 1])["choices"][0]["message"]["reasoning_content"]
        assert ptr.chars == 40_000 and ptr.kept_head == 4000
        assert test_arm.reasoning.startswith(whole_text[:4000]) and test_arm.reasoning.endswith(
            whole_text[-4000:]
        )
        body = bodies[ptr.responses_line - 1]
        assert json.loads(body)["id"] == next(a.attempt_id for a in test_arm.attempts if a.used)
        assert ptr.body_sha256 == sha256_hex(body)
    assert cut.record.truncated == 27 and len(cut.record.truncated_ids) == 27


def test_explore_command_rebuilds_the_page_and_prints_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _pair(tmp_path, 3, flips=1, trace=5)
    write_compare(_compare(root), root)  # type: ignore[arg-type]
    (root / "explorer.html").unlink()
    main(["explore", str(root)])
    assert capsys.readouterr().out.splitlines()[-1] == str(root / "explorer.html")
    assert _data((root / "explorer.html").read_text()).mode == "paired"
    md = (root / "compare.md").read_text()
    assert re.search(r"\[explorer\.html\]\(<explorer\.html>\) \(3 samples, \d+ kB; nothing truncated\)", md)
    main(["explore", str(root / "test")])
    assert capsys.readouterr().out.splitlines()[-1] == str(root / "test" / "explorer.html")
    single = _data((root / "test" / "explorer.html").read_text())
    assert single.mode == "single" and single.samples[0].failure == ["wrong"]
    assert build_run_explorer(root / "control").record.samples == 3
    with pytest.raises(SystemExit) as exc:
        main(["explore", str(tmp_path / "nothing")])
    assert exc.value.code == 2
    assert "neither a run directory" in capsys.readouterr().err


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.rglob("*"))}


def test_explore_out_writes_the_page_there_and_nothing_into_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out FILE``: the page of a paired root or of one arm goes to FILE; the run it reads is left as it was
    (a reviewer's read-only copy of a published run); a folder or a missing parent is one line, exit 2."""
    root = _pair(tmp_path / "run", 3, flips=1, trace=5)
    write_compare(_compare(root), root)  # type: ignore[arg-type]
    (root / "explorer.html").unlink()
    before = _tree(root)
    page = tmp_path / "pages" / "pair.html"
    page.parent.mkdir()
    main(["explore", str(root), "--out", str(page)])
    assert capsys.readouterr().out.splitlines()[-1] == str(page)
    assert _data(page.read_text()).mode == "paired"
    main(["explore", str(root / "test"), "--out", str(tmp_path / "pages" / "arm.html")])
    assert _data((tmp_path / "pages" / "arm.html").read_text()).mode == "single"
    assert _tree(root) == before
    for bad in (tmp_path / "pages", tmp_path / "missing" / "x.html"):
        with pytest.raises(SystemExit) as exc:
            main(["explore", str(root), "--out", str(bad)])
        assert exc.value.code == 2
        assert capsys.readouterr().err.startswith(f"error: --out {bad}: give a file in an existing directory")
    assert _tree(root) == before


def _reviews(manifest_sha: str, **change: object) -> dict[str, object]:
    review = {"benchmark": "gsm8k", "source_id": "q0000", "verdict": "noise", "note": ""}
    review.update(change.pop("review", {}))  # type: ignore[call-overload]
    return {"schema_version": 1, "manifest_sha256": manifest_sha, "exported_at": "2026-12-05T00:00:00+00:00",
            "reviews": [review], **change}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"review": {"source_id": "nope"}}, "reviews.0: gsm8k/nope is not a sample of this run"),
        ({"review": {"verdict": "fine"}}, "reviews.0.verdict: Input should be"),
        ({"reviewer": "x"}, "reviewer: Extra inputs are not permitted"),
        ({"manifest_sha256": "0" * 64}, "manifest_sha256: 000000000000… is not this run's manifest"),
        ({"schema_version": 9}, "schema_version 9 is newer than this evalpipe understands"),
    ],
)
def test_a_reviews_file_that_does_not_fit_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, object], says: str
) -> None:
    root = _pair(tmp_path, 2, flips=1, trace=5)
    run = root / "test"
    path = tmp_path / "reviews.json"
    path.write_text(json.dumps(_reviews(sha256_hex(RunDir(run).manifest.read_bytes()), **change)))
    with pytest.raises(SystemExit) as exc:
        main(["audit", str(run), "--reviews", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and says in err
    assert not RunDir(run).reviews.exists()


def test_an_unreadable_response_log_leaves_the_audit_whole_and_says_why(tmp_path: Path) -> None:
    from evalpipe.run.audit import audit_run

    run = _pair(tmp_path, 2, flips=1, trace=5) / "test"
    first = audit_run(run)
    assert first.explorer is not None and first.explorer.samples == 2
    rd = RunDir(run)
    rd.responses_log.write_bytes(b"\x1f\x8b\x08 not gzip" + rd.responses_log.read_bytes())
    again = audit_run(run)
    assert again.explorer is None and not rd.explorer_html.exists()
    assert again.limitations[-1].startswith("explorer.html was not written: ")
    assert "corrupt gzip member at byte 0" in again.limitations[-1]
    assert "explorer.html was not written" in (run / "report.md").read_text()


def test_a_sample_the_a_a_repeat_also_flipped_is_marked_noise(tmp_path: Path) -> None:
    root = _pair(tmp_path, 4, flips=1, trace=5)
    manifest = one_stratum_manifest(3, {"gsm8k": [f"q{i:04d}" for i in range(4)]})
    keys = [(e.benchmark, e.source_id) for e in manifest.entries]
    again = {k: Answer("The answer is 42.", i != 0, extracted="42") for i, k in enumerate(keys)}
    write_text_run(root / "again", manifest, again, tag="a")
    result = compare_runs(
        PairedDesign(Arms(root / "test", root / "control"), aa=AAPair(root / "again"), bootstrap=Bootstrap(resamples=200))
    )
    data = _data(build_paired_explorer(result, root).path.read_text())
    marked = {s.key: s.aa_flip for s in data.samples}
    assert marked == {f"{k[0]}/{k[1]}": i == 0 for i, k in enumerate(keys)}
    assert [b.aa_flips for b in data.stats] == [1]
