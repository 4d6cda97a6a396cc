"""Eviction the model can undo (decision 11): a retrieve tool answered from the tape.

Contract:

- :data:`RETRIEVE_TOOL` is one tool, ``contextkit_retrieve(tool_use_id)``. An engine made with
  ``retrieval=True`` puts it last in the tool list of every request from the first call on, so the
  cached prefix (tools come first) never changes because of it.
- Its handle is the ``tool_use_id`` an eviction placeholder names ("it answered tool_use id X"):
  the tape keeps every result whole, so :func:`answer` returns the original content of that
  result, text and images as they were. An unknown id is answered with an error result saying
  which ids can be asked for, never an exception (the model asked; it gets an answer).
- :func:`retrieval_calls` says whether a response asks only for retrievals (then the wrappers
  answer it inside the harness's call and send the request again, so the harness never sees the
  exchange); a response that mixes it with the harness's own tools goes back to the harness
  unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contextkit.engine._boundary import Api, request_body
from contextkit.messages import Conversation, Message, Tool, ToolResultBlock, ToolUseBlock
from contextkit.strategies import is_evicted

RETRIEVE_TOOL_NAME = "contextkit_retrieve"
RETRIEVE_TOOL = Tool(
    name=RETRIEVE_TOOL_NAME,
    description=(
        "Get back the full content of an earlier tool result that was cleared from this "
        "conversation to save context. Pass the tool_use id its placeholder names. Call this "
        "tool on its own, not together with other tools."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "tool_use_id": {
                "type": "string",
                "description": "The id the placeholder names ('it answered tool_use id ...').",
            }
        },
        "required": ["tool_use_id"],
    },
)
MAX_ROUNDS = 4
"""Retrieval round trips the wrappers answer inside one call before handing the response back."""


def with_retrieve_tool(request: Conversation) -> Conversation:
    """``request`` with :data:`RETRIEVE_TOOL` last in its tools (once)."""
    if any(t.name == RETRIEVE_TOOL_NAME for t in request.tools):
        return request
    return request.model_copy(update={"tools": (*request.tools, RETRIEVE_TOOL)})


def retrieval_calls(message: Message | None) -> tuple[ToolUseBlock, ...]:
    """The retrieve calls of a response that calls nothing else (else empty)."""
    if message is None or message.role != "assistant":
        return ()
    uses = tuple(b for b in message.blocks if isinstance(b, ToolUseBlock))
    if uses and all(u.name == RETRIEVE_TOOL_NAME for u in uses):
        return uses
    return ()


def answer(tape: Sequence[Message], uses: Sequence[ToolUseBlock]) -> Message:
    """The user message answering ``uses`` from ``tape`` (see the module docstring)."""
    results: dict[str, ToolResultBlock] = {}
    for message in tape:
        if message.role != "user" or isinstance(message.content, str):
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock) and not is_evicted(block):
                results.setdefault(block.tool_use_id, block)
    blocks = []
    for use in uses:
        handle = _handle(use.input)
        found = results.get(handle) if handle else None
        if found is None:
            known = ", ".join(list(results)[-5:]) or "none yet"
            text = f"no tool result with tool_use id {handle!r} (recent ids: {known})"
            blocks.append(ToolResultBlock(tool_use_id=use.id, content=text, is_error=True))
        else:
            blocks.append(ToolResultBlock(tool_use_id=use.id, content=found.content))
    return Message(role="user", content=tuple(blocks))


def retrieve_tool_schema(api: Api = "anthropic") -> dict[str, Any]:
    """:data:`RETRIEVE_TOOL` as the ``tools`` entry of an ``api`` request (``anthropic``,
    ``openai-chat`` or ``openai-responses``), for a harness that lists its tools itself."""
    body = request_body(Conversation(tools=(RETRIEVE_TOOL,)), api)
    tools: list[dict[str, Any]] = body["tools"]
    return tools[0]


def _handle(given: Any) -> str | None:
    if isinstance(given, dict):
        value = given.get("tool_use_id")
        return value.strip() if isinstance(value, str) and value.strip() else None
    return None


__all__ = [
    "MAX_ROUNDS",
    "RETRIEVE_TOOL",
    "RETRIEVE_TOOL_NAME",
    "answer",
    "retrieval_calls",
    "retrieve_tool_schema",
    "with_retrieve_tool",
]
