"""Strategy configs: TOML/JSON files, inline specs, presets, errors naming the offending path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from strategy_support import coding_session, is_valid

from contextkit.errors import ConfigError
from contextkit.strategies import (
    PRESETS,
    AnthropicClearToolUses,
    AnthropicSummariser,
    CallFacts,
    EvictToolResults,
    Hysteresis,
    NoCompaction,
    OverFraction,
    Pipeline,
    ReplaceWithSummary,
    SlidingWindow,
    When,
    dump_strategy,
    load_strategy,
    parse_strategy,
    parse_strategy_spec,
    save_strategy,
    strategy_from_spec,
)

TOML = """
kind = "pipeline"

[[steps]]
kind = "evict-tool-results"
keep_last = 5
exclude_tools = ["Grep"]

[[steps]]
kind = "when"
trigger = { kind = "any", triggers = [{ kind = "over-fraction", fraction = 0.7 }, { kind = "turns-over", turns = 20 }] }
strategy = { kind = "summary", keep_last_turns = 3, summariser = { kind = "anthropic", model = "claude-haiku-4-5" } }
"""  # noqa: E501  (one TOML inline table per line is the readable form here)


def test_load_toml(tmp_path: Path) -> None:
    path = tmp_path / "strategy.toml"
    path.write_text(TOML, encoding="utf-8")
    strategy = load_strategy(path)
    assert isinstance(strategy, Pipeline)
    evict, when = strategy.steps
    assert evict == EvictToolResults(keep_last=5, exclude_tools=("Grep",))
    assert isinstance(when, When)
    assert isinstance(when.strategy, ReplaceWithSummary)
    assert isinstance(when.strategy.summariser, AnthropicSummariser)


def test_dump_save_load_round_trip(tmp_path: Path) -> None:
    strategy = Hysteresis(
        EvictToolResults(keep_last=None) >> When(OverFraction(0.9), SlidingWindow()),
        high=0.85,
        low=0.6,
    )
    path = tmp_path / "s.json"
    save_strategy(strategy, path)
    assert load_strategy(path) == strategy
    assert json.loads(path.read_text())["kind"] == "hysteresis"
    assert strategy_from_spec(str(path)) == strategy
    wrapped = tmp_path / "wrapped.toml"
    wrapped.write_text('[strategy]\nkind = "sliding-window"\nmax_tokens = 5000\n', encoding="utf-8")
    assert load_strategy(wrapped) == SlidingWindow(max_tokens=5000)


def test_errors_name_the_offending_path(tmp_path: Path) -> None:
    bad = {"kind": "pipeline", "steps": [{"kind": "evict-tool-results", "keep_last": -1}]}
    with pytest.raises(ConfigError, match=r"cfg\.json: .*steps\.0\.keep_last"):
        parse_strategy(bad, "cfg.json")
    with pytest.raises(ConfigError, match=r"steps\.1: .*'bogus'"):
        parse_strategy({"kind": "pipeline", "steps": [{"kind": "none"}, {"kind": "bogus"}]})
    with pytest.raises(ConfigError, match="typo"):
        parse_strategy({"kind": "sliding-window", "typo": 1})
    with pytest.raises(ConfigError, match=r"strategy\.summariser"):
        parse_strategy(
            {
                "kind": "when",
                "trigger": {"kind": "turns-over", "turns": 1},
                "strategy": {"kind": "summary", "summariser": {"kind": "nope"}},
            }
        )
    broken = tmp_path / "broken.toml"
    broken.write_text("kind = ", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_strategy(broken)
    with pytest.raises(ConfigError, match=r"missing\.json"):
        load_strategy(tmp_path / "missing.json")


def test_inline_spec() -> None:
    strategy = parse_strategy_spec(
        "evict-tool-results:keep_last=5,exclude_tools=[Read,Grep] >> summary"
    )
    assert isinstance(strategy, Pipeline)
    evict = strategy.steps[0]
    assert isinstance(evict, When)
    assert evict.strategy == EvictToolResults(keep_last=5, exclude_tools=("Read", "Grep"))
    summary = strategy.steps[1]
    assert isinstance(summary, When)
    assert isinstance(summary.strategy, ReplaceWithSummary)
    tuned = parse_strategy_spec('summary:keep_last_turns=4,instructions="keep paths"')
    assert isinstance(tuned, When)
    assert isinstance(tuned.strategy, ReplaceWithSummary)
    assert tuned.strategy.keep_last_turns == 4
    assert tuned.strategy.instructions == "keep paths"
    clear = parse_strategy_spec("anthropic-clear-tool-uses:clear_tool_inputs=[Bash],keep=1")
    assert clear == AnthropicClearToolUses(clear_tool_inputs=("Bash",), keep=1)
    assert parse_strategy_spec("clear-thinking:keep_turns=2") == parse_strategy(
        {"kind": "clear-thinking", "keep_turns": 2}
    )


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("sliding-window:max_tokens=abc", "max_tokens"),
        ("no-such-strategy", "no-such-strategy"),
        ("summary:oops", "key=value"),
        ("none >> ", "empty step"),
        ("anthropic-compact:trigger_tokens=1000", "trigger_tokens"),
        ("evict-then-summary:keep_last=1", "no parameters"),
    ],
)
def test_inline_spec_errors(spec: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_strategy_spec(spec)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_build_run_and_dump(name: str) -> None:
    strategy = strategy_from_spec(name)
    view = coding_session(rounds=6, result_chars=4_000, turns=3)
    out = strategy(view, CallFacts(budget_tokens=4_000, context_window=5_000))
    assert is_valid(out.view)
    assert parse_strategy(dump_strategy(strategy)) == strategy
    assert set(PRESETS) >= {
        "none",
        "sliding-window",
        "evict-tool-results",
        "summary",
        "evict-then-summary",
        "anthropic-clear-tool-uses",
        "anthropic-compact",
    }
    if name == "none":
        assert out.view is view
        assert strategy == NoCompaction()


def test_plain_functions_cannot_be_saved(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        save_strategy(SlidingWindow() >> (lambda v, f: None), tmp_path / "x.json")
    with pytest.raises(ConfigError, match="json"):
        save_strategy(SlidingWindow(), tmp_path / "x.toml")
