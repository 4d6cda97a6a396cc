"""Every command's table fits the terminal: at 80 and at 200 columns (forced through ``COLUMNS``,
as a terminal sets it) no line is wider than the terminal and no figure is split across lines or
cut short. Each figure is looked up whole in the output, formatted as the table formats it, from
the command's own ``--json``; ``--wide`` prints whole figures."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import _app as cli_app
from contextkit.cli import _tables as tables
from contextkit.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures"
WIDTHS = (80, 200)
SESSION = "claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
STRATEGIES = ("-s", "as-recorded", "-s", "none", "-s", "evict-tool-results")


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Consoles rebuilt for each run, so ``COLUMNS`` takes effect."""
    yield
    monkeypatch.setattr(cli_app.console, "_console", None)
    monkeypatch.setattr(cli_app.err_console, "_console", None)


def _run(width: int, *args: str, code: int = 0) -> str:
    cli_app.console._console = None  # type: ignore[attr-defined]
    cli_app.err_console._console = None  # type: ignore[attr-defined]
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == code, result.output
    return result.stdout


def _json(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def _fits(out: str, width: int) -> None:
    lines = out.splitlines()
    assert lines, "no output"
    too_wide = [line for line in lines if len(line) > width]
    assert not too_wide, f"{len(too_wide)} line(s) over {width} columns: {too_wide[0]!r}"
    cut = re.search(r"[\d$,.]…|…[\d$]", out)
    assert cut is None, f"a figure cut short: {out[max(0, cut.start() - 20) : cut.end() + 20]!r}"


def _whole(out: str, figures: list[str]) -> None:
    """Each figure appears whole on one line, as a cell of its own."""
    for figure in figures:
        pattern = r"(?<![\w$.,+-])" + re.escape(figure) + r"(?![\w.,%])"
        assert re.search(pattern, out), f"{figure!r} not whole in:\n{out}"


def test_short_figures_and_paths() -> None:
    assert tables.tokens(987) == "987"
    assert tables.tokens(12_345) == "12.3k"
    assert tables.tokens(536_000) == "536k"
    assert tables.tokens(15_912_334) == "15.9M"
    assert tables.tokens(15_912_334, wide=True) == "15,912,334"
    assert tables.money(7.2913) == "$7.29"
    assert tables.money(0.04213) == "$0.042"
    assert tables.money(7.2913, wide=True) == "$7.2913"
    assert tables.money(None) == "unknown"
    long = "/home/someone/.claude/projects/-home-someone-work/session-with-a-long-name.jsonl"
    short = tables.short_path(long)
    assert short.startswith("…/")
    assert long.endswith(short[2:])
    assert len(short) <= tables.PATH_WIDTH
    assert tables.short_path(long, wide=True) == long
    assert tables.short_path("a/b.jsonl") == "a/b.jsonl"


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.usefixtures("columns")
def test_compare_folder_fits_with_totals_and_best(corpus: Path) -> None:
    folder = str(corpus / "claude-code-viewer")
    rows = _json("compare", folder, *STRATEGIES)["results"]
    sessions = {(r["path"], r["session_id"]) for r in rows}
    for width in WIDTHS:
        out = _run(width, "compare", folder, *STRATEGIES)
        _fits(out, width)
        assert f"totals over {len(sessions)} session(s)" in out
        assert "best" in out
        recorded = [r["summary"] for r in rows if r["strategy"] == "as-recorded"]
        alike = [s["simulated_cost_usd"] or s["cost_usd"] for s in recorded]
        _whole(out, [tables.money(c) for c in alike])  # per session: priced as the strategies
        bills = [s["cost_usd"] for s in recorded]
        _whole(out, [tables.money(sum(bills))])  # the totals: the recorded bill
        assert "the recorded bill: $" in out
        for strategy in ("none", "evict-tool-results"):
            total = sum(r["summary"]["cost_usd"] for r in rows if r["strategy"] == strategy)
            _whole(out, [tables.money(total)])
    wide = _run(200, "compare", folder, *STRATEGIES, "--wide")
    _whole(wide, [f"{r['summary']['cache_read']:,}" for r in rows])
    _whole(wide, [tables.money(r["summary"]["cost_usd"], wide=True) for r in rows])


@pytest.mark.corpus
@pytest.mark.usefixtures("columns")
def test_replay_fits(corpus: Path) -> None:
    path = str(corpus / SESSION)
    summary = _json("replay", path, "-s", "evict-tool-results")["summary"]
    keys = ("input_tokens", "cache_read", "cache_write", "peak_context_tokens")
    for width in WIDTHS:
        out = _run(width, "replay", path, "-s", "evict-tool-results")
        _fits(out, width)
        _whole(out, [tables.tokens(summary[k]) for k in keys])
        _whole(out, [tables.money(summary["cost_usd"]), f"{summary['recall']:.3f}"])
    wide = _run(200, "replay", path, "-s", "evict-tool-results", "--wide")
    _whole(wide, [f"{summary[k]:,}" for k in keys])


@pytest.mark.corpus
@pytest.mark.usefixtures("columns")
def test_cost_and_what_ifs_fit(corpus: Path) -> None:
    path = str(corpus / SESSION)
    args = ("cost", path, "--add-tools", "5", "--cache", "1h")
    data = _json(*args)
    for width in WIDTHS:
        out = _run(width, *args)
        _fits(out, width)
        _whole(out, [tables.money(data[k]) for k in ("mean_usd", "p90_usd", "max_usd")])
        _whole(out, [tables.signed_money(w["delta_usd"]) for w in data["what_if"]])
    wide = _run(200, *args, "--wide")
    _whole(wide, [tables.money(data["mean_usd"], wide=True)])


@pytest.mark.usefixtures("columns")
def test_cost_of_a_profile_fits() -> None:
    profile = str(Path(__file__).parents[2] / "docs" / "examples" / "support-agent.toml")
    args = ("cost", "--profile", profile, "--tickets", "200", "--seed", "1", "--add-tools", "5")
    data = _json(*args)
    for width in WIDTHS:
        out = _run(width, *args)
        _fits(out, width)
        _whole(out, [tables.money(data[k]) for k in ("mean_usd", "p50_usd", "p90_usd")])


@pytest.mark.corpus
@pytest.mark.usefixtures("columns")
def test_inspect_fits(corpus: Path) -> None:
    path = str(corpus / SESSION)
    (entry,) = _json("inspect", path, "--cache")["sessions"]
    for width in WIDTHS:
        out = _run(width, "inspect", path, "--cache")
        _fits(out, width)
        for side in ("simulated", "recorded"):
            _whole(out, [tables.tokens(entry[side][k]) for k in ("cache_read", "output")])
            _whole(out, [tables.money(entry[side]["cost_usd"])])


@pytest.mark.usefixtures("columns")
def test_validate_fits() -> None:
    path = str(FIXTURES / "validate" / "dangling.jsonl")
    files = _json("validate", path, code=1)["files"]
    for width in WIDTHS:
        out = _run(width, "validate", path, code=1)
        _fits(out, width)
        for v in files[0]["violations"]:
            first, last = v["first_call"], v["last_call"]
            _whole(out, [f"call {first}" if first == last else f"calls {first}-{last}"])
