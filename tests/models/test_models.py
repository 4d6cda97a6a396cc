"""ModelInfo: a model id resolved once where it enters, and taken as a value below."""

from __future__ import annotations

import ast
from datetime import date
from pathlib import Path

import pytest

from contextkit.messages import Conversation
from contextkit.models import UNKNOWN_MODEL, ModelInfo, resolve_model
from contextkit.session import Call, Session
from contextkit.tokens import CalibratedCounter, TiktokenCounter, counter_for

SRC = Path(__file__).resolve().parents[2] / "src" / "contextkit"


@pytest.mark.parametrize(
    ("model", "provider", "family", "route", "window"),
    [
        ("claude-sonnet-4-5-20250929", "anthropic", "sonnet-4.5", None, 200_000),
        ("claude-sonnet-4.5", "anthropic", "sonnet-4.5", None, 200_000),
        ("anthropic/claude-opus-4-6", "anthropic", "opus-4.6", None, 1_000_000),
        (
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "anthropic",
            "sonnet-4.5",
            "bedrock",
            200_000,
        ),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic", "haiku-3.5", "bedrock", 200_000),
        ("claude-sonnet-4@20250514", "anthropic", "sonnet-4", "vertex", 200_000),
        ("claude-3-5-sonnet-latest", "anthropic", "sonnet-3.5", None, 200_000),
        ("gpt-4o", "openai", None, None, 128_000),
    ],
)
def test_ids_resolve_to_their_model(
    model: str, provider: str, family: str | None, route: str | None, window: int
) -> None:
    info = resolve_model(model)
    assert info.id == model
    assert info.provider == provider
    assert info.family == family
    assert info.route == route
    assert info.max_context_window == window
    assert info.context_window == window  # the model's maximum unless the recording says more


def test_resolved_once_per_id() -> None:
    assert resolve_model("claude-haiku-4-5") is resolve_model("claude-haiku-4-5")


def test_the_window_a_harness_ran_is_not_the_maximum() -> None:
    """Claude Code's ``[1m]`` suffix names the window it ran; the id still resolves."""
    assert resolve_model("claude-opus-4-6").context_window == 1_000_000
    wide = resolve_model("claude-sonnet-4-5[1m]")
    assert (wide.family, wide.max_context_window, wide.context_window) == (
        "sonnet-4.5",
        200_000,
        1_000_000,
    )
    narrow = resolve_model("claude-opus-4-6").with_context_window(200_000)
    assert (narrow.max_context_window, narrow.context_window) == (1_000_000, 200_000)


def test_facts_come_from_the_dated_tables() -> None:
    sonnet_46 = resolve_model("claude-sonnet-4-6")
    assert sonnet_46.cache_min_tokens(date(2026, 5, 1)) == 2048
    assert sonnet_46.cache_min_tokens(date(2026, 6, 1)) == 1024
    assert resolve_model("claude-opus-4-5").cache_min_tokens() == 4096
    assert resolve_model("claude-sonnet-4-5").tool_overhead("auto", date(2026, 3, 1)) == 346
    assert resolve_model("claude-sonnet-4-5").tool_overhead("any", date(2026, 8, 1)) == 588
    assert resolve_model("gpt-4o").tool_overhead() == 0
    assert not resolve_model("claude-haiku-4-5").keeps_prior_thinking()
    assert resolve_model("claude-opus-4-6").keeps_prior_thinking()
    assert resolve_model("gpt-4.1-mini").cached_input_discount() == 0.75


def test_tokenizer_and_calibration_family() -> None:
    assert resolve_model("gpt-4o").tokenizer == "o200k_base"
    assert resolve_model("gpt-4").tokenizer == "cl100k_base"
    assert resolve_model("claude-sonnet-4-5").tokenizer is None  # not public: calibrated
    assert resolve_model("claude-3-5-haiku-latest").calibration_family == "claude-3"
    assert resolve_model("claude-opus-4-1").calibration_family == "claude-4"
    assert resolve_model("claude-opus-4-6").calibration_family == "claude-4.5"
    assert resolve_model("claude-opus-4-7").calibration_family == "claude-opus-4.7"
    assert isinstance(counter_for(resolve_model("gpt-4")), TiktokenCounter)
    assert isinstance(counter_for(resolve_model("claude-sonnet-4-5")), CalibratedCounter)


@pytest.mark.parametrize("model", [None, "", "some-local-llama"])
def test_unknown_ids_get_the_documented_defaults(model: str | None) -> None:
    info = resolve_model(model)
    if not model:
        assert info is UNKNOWN_MODEL
    assert info.provider is None
    assert info.claude is None
    assert info.cache_min_tokens() == 1024
    assert info.tool_overhead("any") == 0
    assert info.keeps_prior_thinking()


def test_requests_calls_and_sessions_carry_the_value() -> None:
    request = Conversation(model="claude-sonnet-4-5")
    assert request.model_info is resolve_model("claude-sonnet-4-5")
    named = Call(request=request, model="claude-opus-4-6")
    assert named.model_info.family == "opus-4.6"  # the call's own model first
    assert Call(request=request).model_info.family == "sonnet-4.5"
    session = Session(path="x", format="test", calls=(named, named, Call(request=request)))
    assert session.model_info.family == "opus-4.6"  # the model of most calls
    assert Session(path="x", format="test").model_info is UNKNOWN_MODEL


def test_model_info_is_a_frozen_value() -> None:
    info = resolve_model("claude-sonnet-4-5")
    with pytest.raises(AttributeError):
        info.route = "bedrock"  # type: ignore[misc]
    assert isinstance(info, ModelInfo)
    assert info.with_route("bedrock").route == "bedrock"
    assert info.route is None


# Where a model id string may still be parsed: the models layer itself, and the price override
# file's own ids (a file the user writes, matched against the resolved model).
PARSERS = {"parse_claude", "normalise_model", "is_openai", "_resolve"}
ALLOWED = {"models/_ids.py", "models/_info.py", "models/_facts.py", "pricing/_prices.py"}


def test_model_ids_are_parsed_only_where_they_enter() -> None:
    """No layer parses a model id string again: they take the resolved ModelInfo."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name in PARSERS:
                    offenders.append(f"{rel}:{node.lineno} {name}")
    assert offenders == []


def test_the_guard_sees_a_parse() -> None:
    """The walk above finds a call when there is one (it is not vacuous)."""
    tree = ast.parse("from contextkit.models import parse_claude\nparse_claude('claude-x')\n")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [getattr(c.func, "id", None) for c in calls] == ["parse_claude"]


def test_a_session_carries_the_window_its_harness_ran() -> None:
    calls = (Call(request=Conversation(model="claude-opus-4-6"), model="claude-opus-4-6"),)
    plain = Session(path="x", format="test", calls=calls)
    assert plain.model_info.context_window == 1_000_000  # the model's own
    ran = Session(path="x", format="test", calls=calls, context_window=200_000)
    assert (ran.model_info.context_window, ran.model_info.max_context_window) == (
        200_000,
        1_000_000,
    )


@pytest.mark.corpus
def test_claude_code_sessions_ran_at_200k(corpus: Path) -> None:
    """Claude Code ran Opus 4.6 at 200k (it compacted near 167k): replays flag calls over it."""
    from contextkit.formats import load  # noqa: PLC0415 (corpus tests only)
    from contextkit.replay import run_strategy  # noqa: PLC0415

    (session,) = load(corpus / "spotter" / "258c7280-ae70-4798-800f-63464d01a85d.jsonl").sessions
    assert session.model == "claude-opus-4-6"
    assert session.model_info.context_window == 200_000
    tape = run_strategy(session, "none")
    assert tape.window == 200_000
    assert tape.summary()["overflow_calls"] > 0  # without its own compaction it would overflow
