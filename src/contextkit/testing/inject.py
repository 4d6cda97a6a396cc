"""Break one named rule on purpose: ``inject_violation(conversation, code)``.

The messages added keep everything else as it was: given a valid conversation, the result breaks
the named rule and (for the pairing codes) nothing unrelated. ``consecutive_same_role`` is only a
violation under the ``strict`` rules (the Anthropic API merges same-role neighbours).
"""

from __future__ import annotations

from collections.abc import Callable

from contextkit.messages import CODES, Code, Conversation, Message
from contextkit.testing.builders import assistant, thinking, tool_result, tool_use, user


def _fresh_id(conv: Conversation) -> str:
    used = {b.id for m in conv.messages for b in m.tool_uses()}
    used |= {b.tool_use_id for m in conv.messages for b in m.tool_results()}
    n = 0
    while f"toolu_injected_{n}" in used:
        n += 1
    return f"toolu_injected_{n}"


def _ending_with_user(conv: Conversation) -> list[Message]:
    """The messages, made to end on a user message that answers any pending tool_use."""
    messages = list(conv.messages)
    if not messages:
        return [user("start")]
    if messages[-1].role == "assistant":
        pending = [tool_result(b.id) for b in messages[-1].tool_uses()]
        messages.append(user(*pending, "continue"))
    return messages


def _ending_with_assistant(conv: Conversation) -> list[Message]:
    messages = _ending_with_user(conv)
    return [*messages, assistant("ok")]


def _call(conv: Conversation, answer: Callable[[str], Message]) -> list[Message]:
    """A tool call appended after the conversation, answered by ``answer(id)``."""
    new = _fresh_id(conv)
    return [*_ending_with_user(conv), assistant(tool_uses=[tool_use(new)]), answer(new)]


def inject_violation(conv: Conversation, code: Code) -> Conversation:
    """``conv`` with messages added (or, for ``first_not_user``, prepended) breaking ``code``."""
    if code not in CODES:
        raise ValueError(f"unknown violation code {code!r}")
    return conv.with_messages(_INJECTORS[code](conv))


def _dangling(conv: Conversation) -> list[Message]:
    return _call(conv, lambda _id: user("never mind"))


def _orphan(conv: Conversation) -> list[Message]:
    return [*_ending_with_assistant(conv), user(tool_result(_fresh_id(conv)))]


def _duplicate_use(conv: Conversation) -> list[Message]:
    new = _fresh_id(conv)
    call, answer = assistant(tool_uses=[tool_use(new)]), user(tool_result(new))
    return [*_ending_with_user(conv), call, answer, call, answer]


_INJECTORS: dict[Code, Callable[[Conversation], list[Message]]] = {
    "first_not_user": lambda c: [assistant("hello"), *c.messages],
    "consecutive_same_role": lambda c: [*_ending_with_user(c), user("and another thing")],
    "empty_content": lambda c: [*_ending_with_user(c), assistant(""), user("next")],
    "trailing_whitespace": lambda c: [*_ending_with_user(c), assistant("Sure, the answer is ")],
    "tool_use_in_user": lambda c: [*_ending_with_assistant(c), user(tool_use(_fresh_id(c)))],
    "tool_result_in_assistant": lambda c: [
        *_ending_with_user(c),
        assistant("done", tool_result(_fresh_id(c))),
        user("next"),
    ],
    "thinking_signature_missing": lambda c: [
        *_ending_with_user(c),
        assistant(thinking("hmm", signature=None), "ok"),
        user("next"),
    ],
    "duplicate_tool_use_id": _duplicate_use,
    "dangling_tool_use": _dangling,
    "orphan_tool_result": _orphan,
    "duplicate_tool_result": lambda c: _call(c, lambda i: user(tool_result(i), tool_result(i))),
    "results_not_first": lambda c: _call(c, lambda i: user("note first", tool_result(i))),
}

__all__ = ["inject_violation"]
