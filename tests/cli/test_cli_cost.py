"""``contextkit cost``: JSON shape, what-if rows, profile and fit modes, clean errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.estimate import FIT_TOLERANCE, FitCheck, load_profile

DOCS = Path(__file__).resolve().parents[2] / "docs" / "examples"
runner = CliRunner()


def _json(args: list[str]) -> dict[str, Any]:
    result = runner.invoke(app, ["cost", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_profile_json_has_the_documented_keys() -> None:
    data = _json(
        [
            "--profile",
            str(DOCS / "support-agent.toml"),
            "--tickets",
            "2000",
            "--add-tools",
            "5",
            "--tool-tokens",
            "75",
            "--cache",
            "off",
        ]
    )
    for key in ("tickets", "mean_usd", "p50_usd", "p90_usd", "max_usd", "breakdown", "what_if"):
        assert key in data
    assert data["tickets"] == 2000
    assert data["p50_usd"] <= data["p90_usd"] <= data["max_usd"]
    changes = [row["change"] for row in data["what_if"]]
    assert changes == ["+5 tools (375 tokens)", "cache off"]
    tools, off = data["what_if"]
    assert tools["delta_usd"] > 0
    assert off["delta_usd"] > 0
    assert tools["delta_usd"] == pytest.approx(tools["mean_usd"] - data["mean_usd"])
    assert tools["delta_pct"] == pytest.approx(100 * tools["delta_usd"] / data["mean_usd"])
    assert data["closed_form"]["no_cache_usd"] == pytest.approx(off["mean_usd"], rel=0.05)


def test_profile_seed_is_reproducible() -> None:
    args = ["--profile", str(DOCS / "support-agent.toml"), "--tickets", "500", "--seed", "4"]
    assert _json(args)["mean_usd"] == _json(args)["mean_usd"]


def test_table_output_and_plot(tmp_path: Path) -> None:
    png = tmp_path / "cost.png"
    result = runner.invoke(
        app,
        [
            "cost",
            "--profile",
            str(DOCS / "support-agent.toml"),
            "--tickets",
            "300",
            "--system-tokens",
            "+400",
            "--plot",
            str(png),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Cost per ticket" in result.stdout
    assert "system prompt +400 tokens" in result.stdout
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cache", "2h"], "--cache must be off, 5m or 1h"),
        (["--system-tokens", "lots"], "--system-tokens takes a signed integer"),
        (["--strategy", "none"], "--strategy replays recorded sessions"),
    ],
)
def test_bad_flags_exit_2_with_a_message(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["cost", "--profile", str(DOCS / "support-agent.toml"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_profile_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('model = "claude-sonnet-4-5"\nuser_turns = {dist = "poisson"}\n')
    result = runner.invoke(app, ["cost", "--profile", str(bad)])
    assert result.exit_code == 2
    assert "bad.toml" in result.output
    assert "user_turns" in result.output


def test_no_path_searches_the_default_locations_and_nothing_found_exits_0(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": "", "HERMES_HOME": ""}
    result = runner.invoke(app, ["cost"], env=env)
    assert result.exit_code == 0
    assert "nothing found in the default locations" in result.output


def test_fit_without_paths_is_an_error() -> None:
    result = runner.invoke(app, ["cost", "--fit"])
    assert result.exit_code == 2
    assert "--fit needs session PATHs" in result.output


@pytest.mark.corpus
def test_recordings_json_and_fit(corpus: Path, tmp_path: Path) -> None:
    folder = corpus / "spotter"
    data = _json([str(folder), "--add-tools", "3", "--cache", "off"])
    assert data["source"] == "recordings"
    assert data["tickets"] == 5
    assert data["recorded"]["tickets"] == 5
    assert {t["calls"] for t in data["per_ticket"]} >= {156, 1}  # 152 + 3 + 1 subagent calls
    assert [r["change"].split(" (")[0] for r in data["what_if"]] == ["+3 tools", "cache off"]
    out = tmp_path / "fitted.toml"
    result = runner.invoke(app, ["cost", "--fit", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr  # each fitted mean within 15% of its recordings
    # spotter mixes Opus and Haiku tickets: one profile per model, not every call as Opus
    opus = load_profile(tmp_path / "fitted-claude-opus-4-6.toml")
    haiku = load_profile(tmp_path / "fitted-claude-haiku-4-5-20251001.toml")
    assert (opus.model, haiku.model) == ("claude-opus-4-6", "claude-haiku-4-5-20251001")
    assert opus.system_tokens > 10_000
    assert not out.exists()
    assert "check: fitted mean" in result.stdout
    mean = _json(["--profile", str(tmp_path / "fitted-claude-opus-4-6.toml"), "--tickets", "500"])
    assert mean["mean_usd"] > 0


@pytest.mark.corpus
def test_fit_checks_each_profile_against_its_recordings(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "viewer.toml"
    args = ["cost", "--fit", str(corpus / "claude-code-viewer"), "-o", str(out), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (profile,) = json.loads(result.stdout)["profiles"]
    assert profile["path"] == str(out)  # one model: the file named
    check = profile["check"]
    assert check["tickets"] == 2
    assert check["basis"] == "recorded"
    ratio = check["fitted_mean_usd"] / check["recordings_mean_usd"] - 1
    assert check["error"] == pytest.approx(ratio)
    assert check["within_tolerance"] == (abs(ratio) <= FIT_TOLERANCE)


def test_a_fit_check_flags_a_mean_off_by_more_than_15_percent() -> None:
    off = FitCheck("m", 3, fitted_mean_usd=2.3, recordings_mean_usd=1.0, basis="recorded")
    assert off.error == pytest.approx(1.3)
    assert not off.ok
    near = FitCheck("m", 3, fitted_mean_usd=1.1, recordings_mean_usd=1.0, basis="recorded")
    assert near.ok
    assert not FitCheck("m", 1, None, 1.0, "simulated").ok
