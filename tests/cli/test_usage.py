"""``contextkit usage``: what was spent by day, week, month, session, project, model or 5-hour
block, on corpus files, against the figures the other commands give for the same files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.accounting import UsageRow, usage_blocks
from contextkit.cli import app
from contextkit.cli.usage import project_of
from contextkit.session import Usage

runner = CliRunner()


def _usage(*args: str | Path) -> dict[str, Any]:
    result = runner.invoke(app, ["usage", "--json", *map(str, args)])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.corpus
def test_the_total_is_the_recorded_bill(corpus: Path) -> None:
    """packmind: 56 calls, every one with usage: the total is the bill inspect reports, and the
    37 calls whose output was counted from content are counted apart."""
    path = corpus / "packmind-claude" / "s-cc-3a3c81d623-0.jsonl"
    doc = _usage(path)
    total = doc["total"]
    assert total["calls"] == 56
    assert total["basis"] == "recorded"
    assert total["outputs_counted_from_content"] == 37
    inspected = runner.invoke(app, ["inspect", "--json", str(path)])
    (session,) = json.loads(inspected.stdout)["sessions"]
    assert total["cost_usd"] == pytest.approx(session["recorded"]["cost_usd"], rel=1e-9)
    assert [r["key"] for r in doc["rows"]] == ["2026-02-12"]


@pytest.mark.corpus
def test_days_follow_the_time_zone_and_the_range(corpus: Path) -> None:
    """entire-claude s-89 ran 2026-01-23 from 10:00 to 20:00 UTC: one day in UTC, two in Tokyo
    (UTC+9, past midnight at 15:00 UTC); --since/--until keep the days asked for."""
    path = corpus / "entire-claude" / "s-89-7eb280e769-12.jsonl"
    utc = _usage(path)
    assert [r["key"] for r in utc["rows"]] == ["2026-01-23"]
    tokyo = _usage(path, "--timezone", "Asia/Tokyo")
    assert [r["key"] for r in tokyo["rows"]] == ["2026-01-23", "2026-01-24"]
    assert sum(r["calls"] for r in tokyo["rows"]) == utc["total"]["calls"] == 288
    late = _usage(path, "--timezone", "Asia/Tokyo", "--since", "20260124")
    assert [r["key"] for r in late["rows"]] == ["2026-01-24"]
    none = _usage(path, "--until", "2026-01-22")
    assert none["rows"] == []
    assert none["total"]["calls"] == 0


@pytest.mark.corpus
def test_views_of_the_same_calls_add_up_alike(corpus: Path) -> None:
    folder = corpus / "entire-claude"
    totals = {}
    for by in ("day", "week", "month", "session", "project", "model", "block"):
        doc = _usage(folder, "--by", by)
        assert sum(r["calls"] for r in doc["rows"]) == doc["total"]["calls"]
        assert sum(r["cost_usd"] for r in doc["rows"]) == pytest.approx(doc["total"]["cost_usd"])
        totals[by] = (doc["total"]["calls"], round(doc["total"]["cost_usd"], 6))
    assert len(set(totals.values())) == 1
    by_project = _usage(folder, "--by", "project")
    assert [r["key"] for r in by_project["rows"]] == ["entire-claude"]


@pytest.mark.corpus
def test_a_file_without_usage_is_labelled_simulated(corpus: Path) -> None:
    doc = _usage(corpus / "codemie-gemini")
    assert doc["total"]["basis"] == "simulated"
    assert doc["total"]["cache_write_tokens"] == 0  # Gemini's implicit cache bills no writes
    assert doc["total"]["unpriced_calls"] == 0


def _row(hour: float) -> UsageRow:
    when = datetime(2026, 3, 1, tzinfo=UTC).timestamp() + hour * 3600
    at = datetime.fromtimestamp(when, UTC)
    return UsageRow(at, "s", "p", "m", Usage(input_tokens=1), 1.0, True)


def test_blocks_open_at_the_hour_of_their_first_call_and_run_five_hours() -> None:
    rows = [_row(h) for h in (9.5, 10.0, 14.4, 14.6, 20.0, 21.0)]
    blocks = usage_blocks(rows, UTC)
    assert [(b.key, b.calls) for b in blocks] == [
        ("2026-03-01 09:00 - 14:00", 2),
        ("2026-03-01 14:00 - 19:00", 2),
        ("2026-03-01 20:00 - 01:00", 2),
    ]


def test_bad_options_are_clear_errors(tmp_path: Path) -> None:
    for args in (
        ["--by", "fortnight"],
        ["--timezone", "Mars/Phobos"],
        ["--since", "2026-13-01"],
    ):
        result = runner.invoke(app, ["usage", str(tmp_path), *args])
        assert result.exit_code == 2, (args, result.output)


def test_the_project_of_a_claude_code_file() -> None:
    home = Path("/home/me/.claude/projects")
    assert project_of(home / "-Users-alex-workspace-cli" / "s.jsonl") == "workspace-cli"
    assert project_of(home / "-home-me-src-app" / "s" / "subagents" / "a.jsonl") == "src-app"
    assert project_of(Path("/data/spotter/s.jsonl")) == "spotter"
