"""A scripted agent loop through the wrapped ``anthropic`` client, shared by the wrapper tests.

Run as a script it is the child process of the kill test: ``python agent_loop_helper.py BASE_URL
CHECKPOINT HANG_AT`` loops against the fake server with a checkpoint, and at call ``HANG_AT`` the
"tool" never returns (the parent kills the process there, while a tool_use is unanswered).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import anthropic

from contextkit.engine import ContextEngine
from contextkit.engine.anthropic import WrappedClient, wrap
from contextkit.strategies import Strategy, strategy_from_spec
from contextkit.tokens import ApproxCounter

MODEL = "claude-sonnet-4-6"
SYSTEM = "You are a coding agent. Read files with read_file."
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file of the repository.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
BUDGET_TOKENS = 10_000
WINDOW_TOKENS = 12_000
RESULT_LINES = 500
"""A tool result of 500 lines is about 2,500 tokens (ApproxCounter): the full history of a
300-call loop is about 750,000 tokens, 75 times the budget."""
STRATEGY_SPEC = "evict-tool-results >> sliding-window"


def strategy() -> Strategy:
    return strategy_from_spec(STRATEGY_SPEC)


def engine_options(**extra: Any) -> dict[str, Any]:
    return {
        "counter": ApproxCounter(),
        "budget_tokens": BUDGET_TOKENS,
        "context_window": WINDOW_TOKENS,
        **extra,
    }


def tool_output(call: int, path: str) -> str:
    """A large, deterministic tool result (different at every call)."""
    return f"# {path}\n" + "".join(f"{n}: v{call}_{n} = f({n})\n" for n in range(RESULT_LINES))


def client_for(base_url: str, **options: Any) -> WrappedClient:
    sdk = anthropic.Anthropic(base_url=base_url, api_key="test", max_retries=0)
    if "engine" in options:
        return wrap(sdk, engine=options["engine"])
    return wrap(sdk, strategy(), **engine_options(**options))


def run_loop(
    client: WrappedClient,
    history: list[dict[str, Any]],
    *,
    on_tool: Callable[[int], None] | None = None,
    max_calls: int = 1_000,
) -> tuple[int, str | None]:
    """Call until the model stops asking for tools; the harness keeps its full history.

    Returns the number of calls made and the last stop reason.
    """
    stop: str | None = None
    for calls in range(1, max_calls + 1):
        response = client.messages.create(
            model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS, messages=history
        )
        history.append({"role": "assistant", "content": response.content})
        stop = response.stop_reason
        if stop != "tool_use":
            return calls, stop
        if on_tool is not None:
            on_tool(calls)
        results = [
            {
                "type": "tool_result",
                "tool_use_id": b.id,
                "content": tool_output(calls, b.input["path"]),
            }
            for b in response.content
            if b.type == "tool_use"
        ]
        history.append({"role": "user", "content": results})
    return max_calls, stop


def _child(base_url: str, checkpoint: str, hang_at: int) -> None:
    client = client_for(base_url, checkpoint_path=checkpoint, checkpoint_fsync=False)

    def hang(call: int) -> None:
        if call == hang_at:
            time.sleep(3_600)  # a tool that never returns: the parent kills us here

    run_loop(client, [{"role": "user", "content": "Fix the failing test."}], on_tool=hang)


def resume_engine(checkpoint: str) -> tuple[ContextEngine, Any]:
    return ContextEngine.resume(checkpoint, strategy(), **engine_options())


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
