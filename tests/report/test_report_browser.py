"""The HTML report in a real headless browser (Debian's chromium and chromium-driver, selenium):
the page loads without console errors and fetches nothing, every chart renders (each ``<svg>`` has
a box and drawn elements, the per-session charts opened with the page's own "expand all"), markup
from a recording never runs, and a screenshot is taken (saved under pytest's tmp path).

Marked ``browser``: without chromium these tests skip, unless CI is set (then they fail)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contextkit.replay import find_session_files
from contextkit.report import build_report, render_html
from report_pages import (
    PageCheck,
    check_page,
    chromium_paths,
    start_chromium,
    write_hostile_session,
)

pytestmark = pytest.mark.browser

SESSION = "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
FOLDERS = ("spotter", "claude-code-log-synthetic")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    paths = chromium_paths()
    if paths is None:
        why = "chromium and chromedriver are not on PATH (apt-get install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)
    browser = start_chromium(*paths, tmp_path_factory.mktemp("chromium-profile"))
    yield browser
    browser.quit()


def _write(page: str, out: Path) -> Path:
    out.write_text(page, encoding="utf-8")
    return out


def _assert_renders(check: PageCheck, page: str) -> None:
    errors = [entry for entry in check.log if entry["level"] == "SEVERE"]
    assert errors == [], errors
    assert check.resources == []  # self-contained: nothing fetched beyond the file itself
    assert check.overflow_px <= 0  # no horizontal scrolling: long names and results wrap
    assert len(check.charts) == len(re.findall(r"<svg\b", page)) > 0
    blank = [c for c in check.charts if not (c["w"] > 0 and c["h"] > 0 and c["drawn"] > 0)]
    assert blank == [], blank
    shot = check.screenshot.read_bytes()
    assert shot.startswith(PNG)
    assert len(shot) > 10_000


def _report(files: list[Path], out: Path, **kwargs: Any) -> tuple[str, Path, float]:
    start = time.perf_counter()
    page = render_html(build_report(files, **kwargs))
    return page, _write(page, out), time.perf_counter() - start


@pytest.mark.corpus
def test_a_session_report_renders(driver: Any, corpus: Path, tmp_path: Path) -> None:
    page, path, seconds = _report([corpus / SESSION], tmp_path / "session.html")
    check = check_page(driver, path, tmp_path / "session.png")
    _assert_renders(check, page)
    print(  # the figures the report quotes (-s shows them)
        f"\nsession report: {len(page.encode()):,} bytes, generated in {seconds:.1f} s, "
        f"loaded in {check.load_ms:.0f} ms, {len(check.charts)} charts, {check.screenshot}"
    )


@pytest.mark.corpus
def test_a_folder_report_renders(driver: Any, corpus: Path, tmp_path: Path) -> None:
    roots = [corpus / f for f in FOLDERS]
    found = find_session_files(roots)
    page, path, seconds = _report(
        list(found.files), tmp_path / "folder.html", roots=roots, skipped=found.skipped
    )
    check = check_page(driver, path, tmp_path / "folder.png")
    _assert_renders(check, page)
    assert (
        driver.execute_script(
            "return document.querySelectorAll('details.session:not([open])').length"
        )
        == 0
    )
    print(
        f"\nfolder report: {len(page.encode()):,} bytes, generated in {seconds:.1f} s, "
        f"loaded in {check.load_ms:.0f} ms, {len(check.charts)} charts, {check.screenshot}"
    )


def test_markup_from_a_recording_never_runs(driver: Any, tmp_path: Path) -> None:
    bad = write_hostile_session(tmp_path / '<img src=x onerror="window.__pwned=3">.jsonl')
    page, path, _ = _report([bad], tmp_path / "hostile.html")
    check = check_page(driver, path, tmp_path / "hostile.png")
    _assert_renders(check, page)
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.execute_script("return document.images.length") == 0
    shown = driver.find_element("css selector", "#heavy + p + div.scroll pre").text
    assert shown.startswith("<script>window.__pwned = 1</script>")


def test_the_check_sees_console_errors_and_blank_charts(driver: Any, tmp_path: Path) -> None:
    """The checks above can fail: a page that logs an error and draws an empty chart is caught."""
    page = (
        "<!DOCTYPE html><html><body><svg width='0' height='0'></svg>"
        "<script>console.error('broken')</script></body></html>"
    )
    check = check_page(driver, _write(page, tmp_path / "bad.html"), tmp_path / "bad.png")
    assert any(e["level"] == "SEVERE" and "broken" in e["message"] for e in check.log)
    assert check.charts == [{"w": 0, "h": 0, "drawn": 0, "title": ""}]
    with pytest.raises(AssertionError):
        _assert_renders(check, page)
