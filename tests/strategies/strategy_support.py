"""Helpers for the strategy tests: message builders and a hypothesis generator of valid views.

``contextkit.testing`` (with its own ``valid_conversations()``) had not landed when these tests
were written, so the generator lives here. It builds strictly alternating Anthropic requests:
turns opened by a user message (sometimes with an image), rounds of assistant tool calls (parallel
groups, signed or redacted thinking, optional text) answered by one user message of results
(errors, images inside results, huge outputs), a final answer closing each earlier turn, and a
last user message (fresh tool results or a new request) that the model is about to answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from contextkit.messages import (
    Block,
    Conversation,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    validate,
)

IMAGE_SOURCE = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
WORDS = (
    "src/orders/service.py",
    "def compute_total(order):",
    "ValueError: invalid literal for int()",
    "`OrderService`",
    "TODO: handle refunds",
    "assert total == 1250",
    "tests/test_orders.py::test_total PASSED",
    "import json",
)
TOOLS = ("Read", "Bash", "Grep", "Edit")


def filler(size: int, seed: int = 0) -> str:
    """Deterministic text of about ``size`` characters made of code-ish lines."""
    lines: list[str] = []
    total = 0
    for i in itertools.count(seed):
        line = f"{i:05d} {WORDS[i % len(WORDS)]}"
        lines.append(line)
        total += len(line) + 1
        if total >= size:
            break
    return "\n".join(lines)


def user(*blocks: Block | str) -> Message:
    return Message(
        role="user", content=tuple(TextBlock(text=b) if isinstance(b, str) else b for b in blocks)
    )


def assistant(*blocks: Block | str) -> Message:
    return Message(
        role="assistant",
        content=tuple(TextBlock(text=b) if isinstance(b, str) else b for b in blocks),
    )


def call(tool_id: str, name: str = "Read", **tool_input: object) -> ToolUseBlock:
    return ToolUseBlock(id=tool_id, name=name, input=tool_input or {"path": f"src/{tool_id}.py"})


def result(tool_id: str, text: str, *, is_error: bool | None = None) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_id, content=text, is_error=is_error)


def thinking(text: str = "Let me think about the failing test.") -> ThinkingBlock:
    return ThinkingBlock(thinking=text, signature="sig-" + str(len(text)))


def coding_session(rounds: int = 6, result_chars: int = 4_000, turns: int = 2) -> Conversation:
    """A hand-built agent session: ``turns`` turns of ``rounds`` tool rounds, the last one open."""
    messages: list[Message] = []
    n = 0
    for t in range(turns):
        messages.append(user(f"Task {t}: fix the failing test in src/orders/service.py"))
        for _ in range(rounds):
            n += 1
            tid = f"toolu_{n:03d}"
            messages.append(assistant(thinking(), f"Reading step {n}.", call(tid)))
            messages.append(user(result(tid, filler(result_chars, n))))
        if t < turns - 1:
            messages.append(assistant(f"Done with task {t}: I fixed compute_total."))
    return Conversation(system="You are a coding agent.", messages=tuple(messages))


def without_thinking(view: Conversation) -> Conversation:
    """The view with every thinking block removed (a window may then cut into the latest turn)."""
    return view.with_messages(
        [
            m.model_copy(
                update={"content": tuple(b for b in m.blocks if not isinstance(b, ThinkingBlock))}
            )
            for m in view.messages
        ]
    )


def is_valid(view: Conversation) -> bool:
    return validate(view, provider="strict") == ()


# --------------------------------------------------------------------------------------------------
# hypothesis generator


@st.composite
def _tool_round(draw: st.DrawFn, ids: Callable[[], str]) -> list[Message]:
    width = draw(st.integers(1, 3))  # >1: a parallel group
    uses = [call(ids(), draw(st.sampled_from(TOOLS))) for _ in range(width)]
    head: list[Block] = []
    kind = draw(st.sampled_from(["none", "none", "thinking", "redacted"]))
    if kind == "thinking":
        head.append(thinking(filler(draw(st.integers(20, 600)))))
    elif kind == "redacted":
        head.append(RedactedThinkingBlock(data="EuYBCkQYAiJA" * draw(st.integers(1, 20))))
    if draw(st.booleans()):
        head.append(TextBlock(text="I will check " + uses[0].name))
    results: list[Block] = []
    for use in uses:
        size = draw(st.sampled_from([0, 40, 300, 2_000, 12_000]))
        error = draw(st.sampled_from([None, None, True]))
        body = filler(size, len(use.id)) if size else "ok"
        if draw(st.integers(0, 9)) == 0:
            results.append(
                ToolResultBlock(
                    tool_use_id=use.id,
                    content=(TextBlock(text=body), ImageBlock(source=IMAGE_SOURCE)),
                )
            )
        else:
            results.append(result(use.id, body, is_error=error))
    return [assistant(*head, *uses), user(*results)]


@st.composite
def valid_conversations(draw: st.DrawFn, max_turns: int = 4, max_rounds: int = 5) -> Conversation:
    counter = itertools.count(1)

    def ids() -> str:
        return f"toolu_{next(counter):04d}"

    messages: list[Message] = []
    turns = draw(st.integers(1, max_turns))
    for t in range(turns):
        opening: list[Block] = [
            TextBlock(text=f"Request {t}: " + filler(draw(st.integers(10, 400))))
        ]
        if draw(st.integers(0, 5)) == 0:
            opening.append(ImageBlock(source=IMAGE_SOURCE))
        messages.append(user(*opening))
        last = t == turns - 1
        rounds = draw(st.integers(0, max_rounds))
        for _ in range(rounds):
            messages.extend(draw(_tool_round(ids)))
        if not last:
            messages.append(assistant(f"Finished request {t}."))
    system = draw(st.sampled_from([None, "You are a coding agent. " + filler(200)]))
    return Conversation(system=system, messages=tuple(messages))


def ends_with(message: Message, blocks: Sequence[Block]) -> bool:
    """True when ``message`` ends with exactly ``blocks``."""
    own = message.blocks
    return len(own) >= len(blocks) and tuple(own[len(own) - len(blocks) :]) == tuple(blocks)
