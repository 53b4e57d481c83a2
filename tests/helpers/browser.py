"""A real headless browser for the explorer's tests: Debian's Chromium driven by Playwright for Python.

``make test`` installs both (the Makefile's ``browser-deps``: the ``chromium`` package; ``playwright`` from
the dev extra); Playwright's own browser download is never used (``executable_path``).  ``open_page`` records
what a page did besides rendering: every request it made, every dialog it opened, every script error — the
XSS test asserts they stay empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1400, "height": 1000}


@contextmanager
def chromium() -> Iterator[Browser]:
    """One headless Chromium (a process: the integration tier)."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).is_file(), f"{CHROMIUM} missing: run make test (installs Debian's chromium)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Opened:
    page: Page
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.page.context.close()


def open_page(browser: Browser, path: Path, fragment: str = "", *, downloads: bool = False) -> Opened:
    """``path`` opened from ``file://`` in a fresh context, once its script has drawn the first sample."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=downloads)  # type: ignore[arg-type]
    page = context.new_page()
    opened = Opened(page)
    page.on("request", lambda r: opened.requests.append(r.url))
    page.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    page.goto(path.resolve().as_uri() + fragment)
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    return opened


def screenshot(page: Page, out: Path) -> Path:
    """The flip queue and the open card as a PNG (the README's picture is one of these)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out), full_page=False)
    return out
