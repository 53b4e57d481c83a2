"""``punkt_tab_available`` answers as ``nltk.data.find`` does, and without importing NLTK when nothing on disk
could hold the tables (``evalpipe.server.nltk_data``: the import is most of a run's own start-up)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from evalpipe.server import nltk_data
from evalpipe.server.nltk_data import default_search_paths, may_hold_punkt_tab, punkt_tab_available


def _nltk_finds(paths: list[str]) -> bool:
    import nltk.data

    try:
        nltk.data.find(nltk_data.PUNKT_TAB_RESOURCE, paths=paths)
    except LookupError:
        return False
    return True


def _layouts(tmp: Path) -> dict[str, list[str]]:
    """Search paths: nothing, the folder, the zip NLTK looks inside, a folder without the English tables,
    and a zip file as a search path itself."""
    roots = {name: tmp / name for name in ("empty", "folder", "zipped", "decoy")}
    for root in roots.values():
        root.mkdir()
    (roots["folder"] / "tokenizers" / "punkt_tab" / "english").mkdir(parents=True)
    (roots["zipped"] / "tokenizers").mkdir()
    with zipfile.ZipFile(roots["zipped"] / "tokenizers" / "punkt_tab.zip", "w") as z:
        z.writestr("punkt_tab/english/", "")
        z.writestr("punkt_tab/english/README", "tables")
    (roots["decoy"] / "tokenizers" / "punkt_tab" / "german").mkdir(parents=True)
    archive = tmp / "data.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("tokenizers/punkt_tab/english/", "")
    return {**{name: [str(root)] for name, root in roots.items()}, "archive": [str(archive)]}


def test_nltks_own_search_path_is_covered() -> None:
    """Every directory NLTK searches by default is among those checked before NLTK is imported: the shortcut
    never calls missing what NLTK would find (fails when an NLTK release adds a location)."""
    import nltk.data

    assert set(nltk.data.path) <= set(default_search_paths())


def test_nltk_data_entries_come_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLTK_DATA", f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert default_search_paths()[:2] == [str(tmp_path / "a"), str(tmp_path / "b")]


def test_every_layout_answers_as_nltk_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layouts = _layouts(tmp_path)
    want = {name: _nltk_finds(paths) for name, paths in layouts.items()}
    # the zips go to NLTK, whatever it makes of them (this release refuses both); the rest are plain
    assert (want["empty"], want["folder"], want["decoy"]) == (False, True, False)
    monkeypatch.delitem(sys.modules, "nltk.data")  # as in a fresh `evalpipe run`: NLTK not imported yet
    assert {name: punkt_tab_available(paths) for name, paths in layouts.items()} == want


def test_nothing_on_disk_is_missing_without_importing_nltk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layouts = _layouts(tmp_path)
    assert {name: may_hold_punkt_tab(paths) for name, paths in layouts.items()} == {
        "empty": False, "folder": True, "zipped": True, "decoy": True, "archive": True,
    }  # fmt: skip

    def no_import(paths: object) -> bool:
        raise AssertionError("NLTK was asked although nothing on disk could hold punkt_tab")

    monkeypatch.setattr(nltk_data, "_nltk_finds", no_import)
    monkeypatch.delitem(sys.modules, "nltk.data", raising=False)
    assert punkt_tab_available(layouts["empty"]) is False
    monkeypatch.setenv("NLTK_DATA", layouts["empty"][0])
    monkeypatch.setattr(nltk_data, "default_search_paths", lambda: layouts["empty"])
    assert punkt_tab_available() is False
