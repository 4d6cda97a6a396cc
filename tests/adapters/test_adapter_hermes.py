"""The Hermes agent context engine plugin against the real ``hermes-agent`` package (the
``adapters`` dependency group; ``.ci/run`` installs it): registered through Hermes's own plugin
context, called the way Hermes's loop calls it (its own signature filter for ``compress``)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from contextkit.errors import ContextkitError
from contextkit.messages import validate
from contextkit.tokens import ApproxCounter
from contextkit.wire import parse_chat_request

if os.environ.get("CI"):
    import agent.context_engine  # noqa: F401 - CI must have it: fail, never skip
else:
    pytest.importorskip("agent.context_engine", reason="hermes-agent: uv sync --group adapters")

from agent.context_engine import ContextEngine as HermesEngine
from agent.conversation_compression import _supported_compression_kwargs
from hermes_cli.plugins import PluginContext, PluginManager, PluginManifest

from contextkit.adapters.hermes import ContextkitEngine, register

SYSTEM: Any = {"role": "system", "content": "You are Hermes, a coding agent."}


def _history(calls: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "Fix the failing test."}]
    for i in range(calls):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "f{i}.py"}}'},
        }
        messages.append({"role": "assistant", "content": f"Reading f{i}.py.", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "x = 1\n" * 2_000})
    return messages


def test_the_plugin_registers_with_hermes() -> None:
    manager = PluginManager()
    register(PluginContext(PluginManifest(name="contextkit"), manager))
    engine = manager._context_engine  # Hermes keeps the registered engine here
    assert isinstance(engine, ContextkitEngine)
    assert isinstance(engine, HermesEngine)
    assert engine.name == "contextkit"


def test_hermes_loop_compresses_when_usage_crosses_the_threshold() -> None:
    engine = ContextkitEngine(
        "evict-tool-results:keep_last=2 >> sliding-window",
        context_length=20_000,
        counter=ApproxCounter(),
    )
    assert engine.threshold_tokens == 15_000
    messages = _history(3)
    engine.update_from_response(
        {"prompt_tokens": 9_000, "completion_tokens": 50, "total_tokens": 9_050}
    )
    assert not engine.should_compress()
    assert engine.compress(messages) == messages  # under budget: nothing to do
    messages = _history(12)
    tokens = engine.count(messages)
    engine.update_from_response({"prompt_tokens": tokens, "completion_tokens": 50})
    assert engine.should_compress()
    assert engine.should_compress_preflight(messages)
    kwargs = _supported_compression_kwargs(
        engine.compress, current_tokens=tokens, focus_topic=None, force=False, memory_context="m"
    )
    assert set(kwargs) == {"current_tokens", "focus_topic", "force", "memory_context"}
    out = engine.compress(messages, **kwargs)
    assert out[0] == SYSTEM
    assert engine.count(out) <= 10_000 < tokens  # target_percent 0.5 of the window
    assert validate(parse_chat_request({"model": "m", "messages": out}), provider="openai") == ()
    assert out[-1] == messages[-1]  # the latest tool result is kept as Hermes sent it
    assert engine.compression_count == 1
    assert engine.get_status()["compression_count"] == 1
    engine.update_model("gpt-5.1", 100_000)
    assert engine.threshold_tokens == 75_000
    assert engine.compactor.facts.budget_tokens == 50_000


def test_bad_thresholds_are_refused() -> None:
    with pytest.raises(ContextkitError, match="target_percent"):
        ContextkitEngine(target_percent=0.9, threshold_percent=0.5)
