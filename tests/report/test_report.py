"""``contextkit report``: the page's content on a corpus session and a corpus folder, escaping of
what recordings carry, files that fail to load, the CLI. The browser test is
tests/report/test_report_browser.py."""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextkit.accounting import diagnose_cache, price_session
from contextkit.cli import app, main
from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.replay import find_session_files
from contextkit.report import ReportData, build_report, project_of, render_html
from contextkit.report._svg import Bar, Stack, bar_chart, stacked_columns
from report_pages import EVIL, write_hostile_session

SESSION = "spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
"""152 calls on Opus with one compaction, two subagent files (one the harness's compaction)."""
FOLDERS = ("spotter", "claude-code-log-synthetic")
"""Eight sessions, and a file that fails to load (edge_cases.jsonl, line 10)."""

runner = CliRunner()


@pytest.fixture(scope="module")
def one(corpus: Path) -> tuple[ReportData, str]:
    data = build_report([corpus / SESSION])
    return data, render_html(data)


@pytest.fixture(scope="module")
def folder(corpus: Path) -> tuple[ReportData, str]:
    roots = [corpus / f for f in FOLDERS]
    found = find_session_files(roots)
    data = build_report(list(found.files), roots=roots, skipped=found.skipped)
    return data, render_html(data)


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)


@pytest.mark.corpus
def test_a_session_report_holds_the_library_figures(
    corpus: Path, one: tuple[ReportData, str]
) -> None:
    data, page = one
    loaded = load(corpus / SESSION)
    sessions = loaded.sessions[0].all_sessions()
    assert [s.calls for s in data.sessions] == sorted(
        (len(s.calls) for s in sessions), reverse=True
    )
    main = data.sessions[0]
    assert main.compactions == sessions[0].compactions
    assert len(main.compactions) == 1
    ledger = price_session(sessions[0])
    assert ledger.recorded is not None
    assert main.basis == "recorded"
    assert main.cost_usd == pytest.approx(ledger.recorded.total_cost)
    assert main.read == tuple(int(x) for x in ledger.recorded.cache_read)
    diagnosis = diagnose_cache(sessions[0])
    assert diagnosis is not None
    assert main.hit_rate == pytest.approx(diagnosis.hit_rate)
    assert main.diagnosis is not None
    assert main.diagnosis.by_cause() == diagnosis.by_cause()
    # one sawtooth per session, its compaction drawn, a column group per call
    saw = [s for s in _svgs(page) if 'class="chart sawtooth"' in s]
    assert len(saw) == len(sessions)
    assert saw[0].count('class="compaction"') == 1
    assert saw[0].count("<g><title>call ") == main.calls
    # every section, the doctor's causes, the heaviest result, the what-ifs
    for anchor in ("time", "cost", "sessions", "cache", "context", "heavy", "whatif", "notes"):
        assert f"id={anchor}>" in page
    for cause in main.diagnosis.by_cause():
        assert f"<td>{cause}</td>" in page
    heavy = max((h for s in data.sessions for h in s.heaviest), key=lambda h: h.tokens)
    assert heavy.tool == "WebFetch"
    assert f"{heavy.tokens:,}" in page
    assert data.what_ifs is not None
    changes = [w["change"] for w in data.what_ifs["what_if"]]
    assert changes[0].startswith("+10 tools (")
    assert changes[0].endswith(" tokens)")
    assert changes[1:] == ["system prompt +2000 tokens", "cache off", "cache 1h"]
    assert all(f"<td>{c}</td>" in page for c in changes)
    assert data.strategies is None
    assert "--strategies</code>" in page


@pytest.mark.corpus
def test_the_page_is_self_contained(one: tuple[ReportData, str]) -> None:
    _, page = one
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "@import" not in page
    assert "url(" not in page
    assert page.count("<script") == 1  # the page's own toggles, nothing else


@pytest.mark.corpus
def test_a_folder_report_groups_by_session_model_and_project(
    corpus: Path, folder: tuple[ReportData, str]
) -> None:
    data, page = folder
    read = []
    for path in find_session_files([corpus / f for f in FOLDERS]).files:
        with contextlib.suppress(ContextkitError):
            read.append(load(path))
    tops = [t for f in read for t in f.sessions if any(s.calls for s in t.all_sessions())]
    expected = [s for t in tops for s in t.all_sessions() if s.calls]
    assert len(data.sessions) == len(expected) >= 8
    assert {s.project for s in data.sessions} == set(FOLDERS)
    assert {s.model for s in data.sessions} >= {"claude-opus-4-6", "claude-haiku-4-5-20251001"}
    # the orphan subagent file is a session of its own, in its project
    orphan = [s for s in data.sessions if "agent-afc096d" in s.name]
    assert len(orphan) == 1
    assert orphan[0].project == "spotter"
    # the file that fails to load is listed, with the reader's message naming file and line
    assert [Path(f.path).name for f in data.failures] == ["edge_cases.jsonl"]
    assert "edge_cases.jsonl:10" in data.failures[0].error
    assert "edge_cases.jsonl" in page
    assert "Not read (1 failed" in page
    # the per-project bars add up to the per-session costs
    known = [s.cost_usd for s in data.sessions if s.cost_usd is not None]
    assert math.isclose(sum(known), sum(s.cost_usd or 0 for s in data.sessions))
    charts = _svgs(page)
    titles = [re.search(r"<title>(.*?)</title>", c).group(1) for c in charts]  # type: ignore[union-attr]
    for name in (
        "cost per session",
        "cost per model",
        "cost per project",
        "tokens written per cause",
    ):
        assert name in titles
    assert sum("context per call of" in t for t in titles) == len(data.sessions)
    # sessions sorted by cost, the costliest first
    costs = [s.cost_usd or 0.0 for s in data.sessions]
    assert costs == sorted(costs, reverse=True)
    assert data.what_ifs is not None
    assert data.what_ifs["tickets"] == len(tops) < len(expected)  # the subagents ride along


@pytest.mark.corpus
def test_strategies_are_compared_when_asked(corpus: Path) -> None:
    specs = ("as-recorded", "none", "evict-tool-results")
    data = build_report([corpus / "spotter/tool_heavy.jsonl"], strategies=specs)
    assert data.strategies is not None
    assert sorted({r["strategy"] for r in data.strategies}) == sorted(specs)
    page = render_html(data)
    assert "total cost per strategy" in page
    for r in data.strategies:
        assert f"recall {r['summary']['recall']:.2f}" in page


def test_every_recorded_string_is_escaped(tmp_path: Path) -> None:
    bad = write_hostile_session(tmp_path / '<img src=x onerror="window.__pwned=3">.jsonl')
    data = build_report([bad])
    assert len(data.sessions) == 1
    assert data.sessions[0].heaviest[0].preview.startswith(EVIL)
    page = render_html(data)
    assert EVIL not in page
    assert "<img" not in page
    assert page.count("<script") == 1
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&quot;window.__pwned=3&quot;&gt;" in page  # the file's name


def test_files_that_fail_to_load_are_listed_not_fatal(tmp_path: Path) -> None:
    good = write_hostile_session(tmp_path / "good.jsonl")
    broken = tmp_path / "broken.json"
    broken.write_text('{"messages": [', encoding="utf-8")
    data = build_report([broken, good])
    assert [Path(f.path).name for f in data.failures] == ["broken.json"]
    assert len(data.sessions) == 1
    page = render_html(data)
    assert "broken.json" in page
    assert "Not read (1 failed, 0 skipped)" in page


def test_projects_follow_the_folders() -> None:
    root = Path("/data/projects")
    assert project_of(root / "-home-me-app" / "s.jsonl", [root]) == "-home-me-app"
    assert (
        project_of(root / "-home-me-app" / "s" / "subagents" / "a.jsonl", [root]) == "-home-me-app"
    )
    assert project_of(root / "s.jsonl", [root]) == "projects"
    assert project_of(Path("/elsewhere/x/s.jsonl"), [root]) == "x"


def test_charts_escape_and_draw() -> None:
    chart = bar_chart([Bar("<b>x</b>", 2.0), Bar("y", 0.0)], "t<", str)
    assert "<b>" not in chart
    assert "&lt;b&gt;x&lt;/b&gt;" in chart
    assert "<title>t&lt;</title>" in chart
    assert chart.count("<rect") == 2
    saw = stacked_columns([Stack(5, 2, 1), Stack(1, 0, 0), Stack(9, 1, 1)], "s", markers=(2,))
    assert saw.count('class="compaction"') == 1
    assert saw.count("<g><title>") == 3
    assert "no data" in bar_chart([], "empty", str)


def test_the_command_writes_the_page(tmp_path: Path) -> None:
    source = write_hostile_session(tmp_path / "s.jsonl")
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(source), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["output"] == str(out)
    assert doc["bytes"] == out.stat().st_size > 0
    assert doc["sessions"] == 1
    assert doc["calls"] == 2
    assert doc["failures"] == []
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_command_rejects_a_missing_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    monkeypatch.setattr(
        sys, "argv", ["contextkit", "report", str(missing), "-o", str(tmp_path / "r.html")]
    )
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "nope.jsonl" in err
    assert "Traceback" not in err
    assert not (tmp_path / "r.html").exists()
