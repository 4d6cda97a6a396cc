"""``contextkit demo``: exits 0, writes the plots, JSON shape, determinism, no network access."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contextkit.cli import app
from contextkit.demo import (
    BASELINE,
    TICKET_CLASSES,
    TICKET_PARTS,
    DemoResult,
    demo_spec,
    pick_best,
    run_demo,
)
from contextkit.replay import can_be_best
from contextkit.strategies import PRESETS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SMALL = 40
"""Calls in the example the quick tests run (the default is 150)."""


@pytest.fixture(scope="module")
def small() -> DemoResult:
    return run_demo(demo_spec(calls=SMALL, seed=3))


def _dead_network_env(tmp_path: Path) -> dict[str, str]:
    """The environment with proxies pointed at a closed port and no provider keys."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = f"http://127.0.0.1:{port}"
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[key] = dead
    env["NO_PROXY"] = env["no_proxy"] = ""
    env["HOME"] = str(tmp_path)  # no user config or credentials either
    return env


def _cli() -> list[str]:
    return [sys.executable, "-c", "from contextkit.cli import main; main()"]


def test_default_demo_offline_exits_0_and_is_meaningful(tmp_path: Path) -> None:
    """The command as a user runs it, in a subprocess that cannot reach any network."""
    out = tmp_path / "plots"
    run = subprocess.run(
        [*_cli(), "demo", "--json", "--out", str(out)],
        env=_dead_network_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "Warning" not in run.stderr, run.stderr  # e.g. a tokenizer that tried to download
    data = json.loads(run.stdout)
    _check_shape(data)
    assert data["example"]["calls"] == 150
    none = data["strategies"][0]
    # Sized so the full tape reaches the window: otherwise there is nothing to compare.
    assert none["peak_context_tokens"] >= 0.9 * data["window_tokens"]
    assert data["best"]["strategy"] not in (None, BASELINE)
    assert data["best"]["saved_usd"] > 0
    for path in data["plots"]:
        assert Path(path).parent == out
        assert Path(path).read_bytes()[:8] == PNG_MAGIC


def _check_shape(data: dict[str, Any]) -> None:
    assert set(data) >= {"example", "model", "window_tokens", "counter", "strategies", "best"}
    assert {"ticket", "notes", "plots"} <= set(data)
    names = [row["strategy"] for row in data["strategies"]]
    assert names[0] == BASELINE
    assert sorted(names) == sorted(PRESETS)
    for row in data["strategies"]:
        assert {"cost_usd", "cache_read", "cache_write", "peak_context_tokens"} <= set(row)
        assert {"compactions", "overflow_calls", "recall", "saved_usd", "saved_share"} <= set(row)
    assert data["best"]["rule"].startswith("cheapest")
    ticket = data["ticket"][0]
    assert ticket["strategy"] == BASELINE
    assert set(ticket["by_content"]) == set(TICKET_PARTS)
    assert set(ticket["by_class"]) == set(TICKET_CLASSES)
    assert len(data["plots"]) == 3


def test_ticket_breakdown_adds_up_to_the_replay_cost(small: DemoResult) -> None:
    for ticket in small.tickets:
        cost = small.replay_of(ticket.strategy).cost_usd
        assert cost is not None
        assert ticket.cost_usd == pytest.approx(cost, rel=1e-9)
        assert sum(ticket.usd[k] for k in TICKET_PARTS) == pytest.approx(cost, rel=1e-9)
        assert sum(ticket.usd[k] for k in TICKET_CLASSES) == pytest.approx(cost, rel=1e-9)
        assert ticket.calls == SMALL


def test_best_is_the_cheapest_by_cost_plus_recovery(small: DemoResult) -> None:
    summaries = {r.strategy: r.summary() for r in small.replays}
    fit = {n: s for n, s in summaries.items() if can_be_best(s)}
    assert small.best is not None  # none itself qualifies on a short session
    assert small.best in fit
    best = fit[small.best]["cost_plus_recovery_usd"]
    assert all(best <= s["cost_plus_recovery_usd"] for s in fit.values())
    # A strategy that only ties with the full tape is not called best.
    if small.best != BASELINE:
        assert small.saving(small.best) is not None
    assert pick_best([r for r in small.replays if summaries[r.strategy]["unrecoverable"]]) is None


def test_same_arguments_same_numbers(small: DemoResult) -> None:
    again = run_demo(demo_spec(calls=SMALL, seed=3))
    assert again.to_json() == small.to_json()
    other = run_demo(demo_spec(calls=SMALL, seed=4), strategies=("none",))
    assert other.baseline.cost_usd != small.baseline.cost_usd


def test_cli_writes_plots_and_prints_table_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process, with every socket connection refused: the command never needs one."""

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("contextkit demo tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    out = tmp_path / "nested" / "demo"
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--calls", "30", "--seed", "2"])
    assert result.exit_code == 0, result.output
    for name in ("context-per-call.png", "cumulative-cost.png", "cost-vs-recall.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC
        assert name in result.output
    assert "A ticket costs $" in result.output
    assert "re-sent history" in result.output


def test_json_output_is_one_document(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["demo", "--json", "--out", str(tmp_path), "--calls", "20", "--seed", "5"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    _check_shape(data)
    assert data["example"]["calls"] == 20
    assert data["example"]["seed"] == 5


def test_bad_calls_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--calls", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2
