"""Helpers of the HTML report's tests (not a test module): a recording with hostile strings, and a
headless chromium driven by selenium.

The browser: Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them); selenium
is told where both are, so it never looks for (or downloads) a browser or a driver of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVIL = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
"""Markup a recording may carry (a tool result, a tool name, a model): the page must show it as
text. Either payload running sets ``window.__pwned``."""


def write_hostile_session(path: Path) -> Path:
    """An ``anthropic`` request/response file of two calls with usage, whose tool name, tool input,
    tool result, model and texts are markup (:data:`EVIL`)."""
    tool = {"name": f"grep{EVIL}", "description": EVIL, "input_schema": {"type": "object"}}
    use = {"type": "tool_use", "id": "toolu_1", "name": f"grep{EVIL}", "input": {"q": EVIL}}
    first = [{"role": "user", "content": f"find it {EVIL}"}]
    second = [
        *first,
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": EVIL * 40}],
        },
    ]
    records = []
    for k, (messages, stop) in enumerate(((first, "tool_use"), (second, "end_turn"))):
        content = [use] if stop == "tool_use" else [{"type": "text", "text": f"done {EVIL}"}]
        usage = {"input_tokens": 900 + 400 * k, "output_tokens": 40, "cache_read_input_tokens": 0}
        response = {
            "id": f"msg_{k}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
            "stop_reason": stop,
            "usage": usage,
        }
        request = {
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 1024,
            "system": f"you are {EVIL}",
            "tools": [tool],
            "messages": messages,
        }
        records.append(json.dumps({"request": request, "response": response}))
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    return path


FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,2000",
)


def chromium_paths() -> tuple[str, str] | None:
    """(browser, driver) when both are installed."""
    browser = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def start_chromium(browser: str, driver: str, profile: Path) -> Any:
    """A headless chromium (as root: no sandbox) that keeps its console log for ``get_log``."""
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium manager: never download anything
    from selenium import webdriver  # noqa: PLC0415  (a dev dependency, only for this test)
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


_CHARTS_JS = """
return Array.from(document.querySelectorAll('svg')).map(function (svg) {
  var box = svg.getBoundingClientRect();
  var drawn = svg.querySelectorAll('rect, line, path, circle, text').length;
  var title = svg.querySelector('title');
  return {w: box.width, h: box.height, drawn: drawn, title: title ? title.textContent : ''};
});
"""
_LOAD_JS = """
var nav = performance.getEntriesByType('navigation')[0];
return {load_ms: nav.loadEventEnd - nav.startTime,
        overflow_px: document.documentElement.scrollWidth - window.innerWidth,
        resources: performance.getEntriesByType('resource').map(function (r) { return r.name; })};
"""


@dataclass(frozen=True)
class PageCheck:
    load_ms: float
    resources: list[str]
    """URLs the page fetched beyond itself (a self-contained page fetches none)."""
    charts: list[dict[str, Any]]
    """Per ``<svg>`` after every section was expanded: its box, drawn elements and title."""
    overflow_px: int
    """How far the page is wider than the window (0 or less: it fits)."""
    log: list[dict[str, Any]]
    """The browser's console log."""
    screenshot: Path


def check_page(driver: Any, page: Path, screenshot: Path) -> PageCheck:
    """Open ``page``, expand every per-session chart, measure and photograph it."""
    driver.get(page.resolve().as_uri())
    loaded = driver.execute_script(_LOAD_JS)
    for button in driver.find_elements("css selector", 'button[data-open="1"]'):
        button.click()
    time.sleep(0.2)  # let the opened sections lay out
    charts = driver.execute_script(_CHARTS_JS)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(screenshot))
    return PageCheck(
        load_ms=float(loaded["load_ms"]),
        resources=list(loaded["resources"]),
        charts=list(charts),
        overflow_px=int(loaded["overflow_px"]),
        log=list(driver.get_log("browser")),
        screenshot=screenshot,
    )
