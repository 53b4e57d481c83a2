"""A full disk under the run directory: one line naming the file, the stage and the free space, exit 5, every
file left whole, and ``--resume`` on a larger file system completes with the outcomes of an uninterrupted run
(every sample answered with its gold answer by the scripted server: ok, once, on its own prompt).

The end-to-end test runs ``evalpipe run`` on a small tmpfs mounted inside a user + mount namespace
(``unshare -Urm``: no privileges beyond what CI has), filled by ``dd`` as soon as the first request is recorded;
the run directory is copied out before the namespace ends and copied into a larger tmpfs at the same path for
the resume.  The unit tests refuse writes part-way (a stand-in ``os.write`` that writes half, then raises
ENOSPC) to show that no partial record is ever left, and cut torn tails as a crash would leave them.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.config import write_config
from test_run_cli import EVALPIPE, REPO, ScriptedProcess, gsm8k, gsm8k_rules

from evalpipe.artifacts import JsonlAppender, RunDir, read_jsonl
from evalpipe.artifacts.disk import repair_torn_tail, stage
from evalpipe.errors import ArtifactError, DiskFull, ExitCode
from evalpipe.recording import recorder as recorder_mod
from evalpipe.recording.recorder import Recorder, RefusedWrite
from evalpipe.recording.responses import complete_members_end, read_response_records
from evalpipe.run.torn_files import repair_torn_files

SAMPLES = 4
#: Outcome fields that decide a sample's result (ids of attempts, latencies and the attempt list differ from
#: an uninterrupted run by construction: the resumed run re-asked what was not cached).
SAME = ("benchmark", "subset", "index", "source_id", "stratum", "prediction_present", "review_present",
        "n_predictions", "n_reviews", "stop_reason", "prompt_sha256", "score", "scores", "extracted_answer",
        "gold_answer", "failure_class", "failure_detail")  # fmt: skip


def _half_then_enospc(monkeypatch: pytest.MonkeyPatch, module: Any, after: int = 0) -> None:
    """``module.os.write`` writes ``after`` calls normally, then half of the next buffer and raises ENOSPC
    (a file system that fills during the write)."""
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] <= after:
            return real(fd, data)
        if calls["n"] == after + 1:
            real(fd, bytes(data)[: max(1, len(data) // 2)])
            return len(data) // 2 or 1
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(module.os, "write", write)


def test_a_refused_append_leaves_no_partial_line_and_names_file_stage_and_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalpipe.artifacts import disk

    path = tmp_path / "log.jsonl"
    with JsonlAppender(path) as log:
        log.append({"n": 1})
        _half_then_enospc(monkeypatch, disk)
        with stage("outcomes"), pytest.raises(DiskFull) as caught:
            log.append({"n": 2, "pad": "x" * 1000})
    monkeypatch.undo()
    assert path.read_bytes() == b'{"n": 1}\n'
    assert caught.value.exit_code == ExitCode.NO_SPACE == 5
    assert re.fullmatch(
        rf"No space left on device \(ENOSPC\) writing {re.escape(str(path))} \(stage outcomes; "
        r"\d+\.\d (GiB|MiB|KiB) free on its file system\)",
        caught.value.message,
    ), caught.value.message


def test_the_recorder_cuts_both_files_back_when_the_request_line_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The response member is written first; when the request line after it is refused, the member goes too
    (a requests.jsonl line always has its body on disk, and neither file holds half a record)."""
    from evalpipe.artifacts import disk

    rd = RunDir(tmp_path / "run")
    rec = Recorder(rd)
    meta = ["a-000000", 0, 1.0, 2.0, 1.0, "POST", "/v1/chat/completions", 200, "application/json", None,
            False, None, False, "x-1", 0.0, 1.0, None]  # fmt: skip
    body = json.dumps({"id": "a-000000", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}]})
    rec.record(meta, b'{"messages": []}', body.encode())
    sizes = (rd.requests_log.stat().st_size, rd.responses_log.stat().st_size)
    _half_then_enospc(monkeypatch, disk, after=1)  # the member goes through, the request line is cut
    with pytest.raises(RefusedWrite) as caught:
        rec.record([*meta[:1], 1, *meta[2:]], b'{"messages": []}', body.encode())
    monkeypatch.undo()
    rec.close()
    assert caught.value.path == rd.requests_log and caught.value.errno == errno.ENOSPC
    assert (rd.requests_log.stat().st_size, rd.responses_log.stat().st_size) == sizes
    assert [r["attempt_id"] for r in read_jsonl(rd.requests_log)] == ["a-000000"]
    assert list(read_response_records(rd.responses_log)) == ["a-000000"]
    assert recorder_mod.DISK_FULL_EXIT == 75


def test_resume_cuts_torn_tails_and_logs_them_but_refuses_damage_before_the_last_record(
    tmp_path: Path,
) -> None:
    rd = RunDir(tmp_path / "run")
    rd.root.mkdir()
    rd.requests_log.write_text('{"a": 1}\n{"a": 2}\n{"a": ', encoding="utf-8")
    member = gzip.compress(b'{"attempt_id": "x", "status": 200, "body": "ok"}\n')
    rd.responses_log.write_bytes(member + member[: len(member) // 2])
    cache = rd.evalscope_dir / "gsm8k" / "predictions" / "m" / "gsm8k_main.jsonl"
    cache.parent.mkdir(parents=True)
    cache.write_text(
        '{"index": 0}\n{"index": 1', encoding="utf-8"
    )  # EvalScope's: the cache check's to repair
    said = repair_torn_files(rd)
    assert said == [
        "resume: cut a torn last record from requests.jsonl (6 bytes; written when the run stopped)",
        f"resume: cut a torn last record from responses.jsonl.gz ({len(member) // 2} bytes; "
        "written when the run stopped)",
    ]
    assert rd.requests_log.read_text() == '{"a": 1}\n{"a": 2}\n'
    assert rd.responses_log.read_bytes() == member
    assert cache.read_text() == '{"index": 0}\n{"index": 1'
    logged = [r["file"] for r in read_jsonl(rd.torn_repairs)]
    assert logged == ["requests.jsonl", "responses.jsonl.gz"]
    assert repair_torn_files(rd) == []  # nothing left to cut
    # damage before the last record is refused by the readers with a line, never parsed or cut
    rd.requests_log.write_text('{"a": 1}\n{"a": \n{"a": 3}\n', encoding="utf-8")
    assert repair_torn_tail(rd.requests_log) == 0
    with pytest.raises(ArtifactError, match=r"requests\.jsonl:2: malformed JSON line"):
        read_jsonl(rd.requests_log)
    rd.responses_log.write_bytes(member[:20] + b"\0" * 20 + member)
    with pytest.raises(ArtifactError, match="corrupt gzip member at byte 0"):
        complete_members_end(rd.responses_log)


def _in_namespace(mount: Path, size: str, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` (sh) inside a new user + mount namespace with a ``size`` tmpfs mounted at ``mount``."""
    prelude = f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(mount))} || exit 97\n"
    return subprocess.run(
        ["unshare", "-Urm", "sh", "-c", prelude + script],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip


def _outcomes(run: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in (run / "outcomes.jsonl").read_text().splitlines()]
    return [{k: r.get(k) for k in SAME} for r in rows]


def test_a_disk_that_fills_mid_run_stops_it_in_one_line_and_resume_on_a_larger_one_completes(
    tmp_path: Path, shared_datasets: Path
) -> None:
    rules = [{**r, "delay_s": 0.2} for r in gsm8k_rules(shared_datasets)]  # time to fill between answers
    server = ScriptedProcess(tmp_path, rules)
    mount = tmp_path / "mnt"
    mount.mkdir()
    run, full, resumed = mount / "run", tmp_path / "full", tmp_path / "resumed"
    try:
        url = server.start()
        config = write_config(tmp_path / "run.yaml", benchmarks=gsm8k(SAMPLES), name="disk-full",
                              generation={"concurrency": 1, "max_tokens": {"gsm8k": 128}})  # fmt: skip
        common = [*EVALPIPE, "run", str(config), "--endpoint", url, "--dataset-root", str(shared_datasets)]

        # 1. a 16 MiB tmpfs, filled to the last block once the first attempt is in requests.jsonl
        filler = (f"( while [ ! -s {run}/requests.jsonl ]; do sleep 0.05; done; "
                  f"dd if=/dev/zero of={mount}/filler bs=64k 2>/dev/null; "
                  f"dd if=/dev/zero of={mount}/filler-small bs=512 2>/dev/null ) &\n")  # fmt: skip
        first = _in_namespace(mount, "16m", filler + f"{shlex.join([*common, '--out', str(run)])}\nrc=$?\n"
                              f"wait; cp -a {run} {full}; exit $rc\n")  # fmt: skip
        assert first.returncode == ExitCode.NO_SPACE, first.stdout[-2000:] + first.stderr[-3000:]
        resume_cmd = f"evalpipe run {config} --resume {run} --endpoint {url} --dataset-root {shared_datasets}"
        (line,) = [x for x in first.stderr.splitlines() if x.strip()]
        assert re.fullmatch(
            rf"No space left on device \(ENOSPC\) writing {re.escape(str(run))}/\S+ \(stage evalscope; "
            rf"0 bytes free on its file system\): run directory {re.escape(str(run))}; resume with: "
            + re.escape(resume_cmd),
            line,
        ), line
        # every log is whole: no torn line or member, nothing a reader would refuse
        rd = RunDir(full)
        recorded = read_jsonl(rd.requests_log)
        assert not recorded.torn_last_line and 1 <= len(recorded) < SAMPLES
        assert not read_response_records(rd.responses_log).torn_last_member
        assert set(read_response_records(rd.responses_log)) == {r["attempt_id"] for r in recorded}
        for path in [*full.glob("*.jsonl"), *(full / "evalscope").rglob("*.jsonl*")]:
            data = path.read_bytes()
            assert not data or data.endswith(b"\n"), path
            assert not read_jsonl(path).torn_last_line, path
        assert not (full / "outcomes.jsonl").exists()

        # 2. the same path on a 256 MiB tmpfs: --resume completes
        second = _in_namespace(mount, "256m", f"cp -a {full} {run} || exit 98\n"
                               f"{resume_cmd.replace('evalpipe', shlex.join(EVALPIPE), 1)}\nrc=$?\n"
                               f"cp -a {run} {resumed}; exit $rc\n")  # fmt: skip
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
        # the outcomes of an uninterrupted run: the scripted server answers each question with its gold
        # answer, so every sample is ok, once, on its own prompt
        rows = _outcomes(resumed)
        assert [(r["failure_class"], r["n_predictions"], r["n_reviews"]) for r in rows] == [
            ("ok", 1, 1)
        ] * SAMPLES
        assert all(r["extracted_answer"] == r["gold_answer"] and r["score"] == 1.0 for r in rows), rows
        manifest = json.loads((resumed / "manifest.json").read_text())
        assert [r["source_id"] for r in rows] == [e["source_id"] for e in manifest["entries"]]
        # every sample answered; asked again only when the disk filled around its answer: recorded but not
        # cached by EvalScope (the audit's duplicate request), or answered but no longer recordable (concurrency
        # 1: at most one of each)
        total = len(server.requests())
        in_log = read_jsonl(RunDir(resumed).requests_log)
        assert in_log[: len(recorded)] == list(recorded)  # the resume appended after the whole records
        assert SAMPLES <= len(in_log) <= total <= SAMPLES + 2, (len(recorded), len(in_log), total)
    finally:
        server.stop()
