"""Claude Code transcripts: ``attachment`` records to the text the client sends for them.

Contract: :func:`render_attachment` takes a record's ``attachment`` object and returns the text
block Claude Code 2.1.x sends for it (a ``<system-reminder>`` wrapped message), or None for a type
(or a variant of one) it does not know; the reader then keeps the record as a link and counts it in
``set_aside`` as ``attachment/<type>``.

The texts are the client's own templates, checked against the requests the real CLI (2.1.197)
sent in ``tests/formats/test_claude_code_cli.py``: ``agent_listing_delta`` (the agent types, first
request and again after a compaction), ``skill_listing`` (the skills) and ``queued_command`` (a
message the user sent while the agent worked, delivered with the next tool result);
``critical_system_reminder``, ``nested_memory``, ``agent_mention`` and removals in an agent listing
use the same wrapper with the client's template, read from the same build but not seen in a
recorded request.

Where the text goes is :mod:`._calls`' business: before the prompt of the user message
it follows, or appended to that message's last tool result when it answers tools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

AMBIENT_NOTE = (
    "This is ambient context \u2014 do not narrate it to the user unless they ask or it is "
    "directly relevant to their request."
)
QUEUED = "The user sent a new message while you were working:\n"
QUEUED_NOTE = (
    "IMPORTANT: After completing your current task, you MUST address the user's message above. "
    "Do not ignore it."
)
CONCURRENCY_NOTE = (
    "When you launch multiple agents for independent work, send them in a single message with "
    "multiple tool uses so they run concurrently."
)


def reminder(text: str) -> str:
    """The client's wrapper around every attachment's text."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


def render_attachment(attachment: Mapping[str, Any]) -> str | None:
    """The text sent for ``attachment``, or None when this type is not known."""
    kind = attachment.get("type")
    render = _RENDERERS.get(kind) if isinstance(kind, str) else None
    return None if render is None else render(attachment)


def _agent_listing(a: Mapping[str, Any]) -> str | None:
    added, removed = a.get("addedLines"), a.get("removedTypes") or []
    if not isinstance(added, list) or not isinstance(removed, list):
        return None
    initial = a.get("isInitial") is True
    parts = []
    if added:
        head = (
            "Available agent types for the Agent tool:"
            if initial
            else "New agent types are now available for the Agent tool:"
        )
        parts.append(head + "\n" + "\n".join(str(line) for line in added))
    if removed:
        gone = "\n".join(f"- {name}" for name in removed)
        parts += [f"The following agent types are no longer available:\n{gone}", AMBIENT_NOTE]
    if initial and a.get("showConcurrencyNote") is True:
        parts.append(CONCURRENCY_NOTE)
    return reminder("\n\n".join(parts)) if parts else None


def _skill_listing(a: Mapping[str, Any]) -> str | None:
    content = a.get("content")
    if not isinstance(content, str) or not content:
        return None
    text = f"The following skills are available for use with the Skill tool:\n\n{content}"
    return reminder(text)


def _queued(a: Mapping[str, Any]) -> str | None:
    prompt, origin = a.get("prompt"), a.get("origin")
    kind = origin.get("kind") if isinstance(origin, Mapping) else None
    if not isinstance(prompt, str) or a.get("imagePasteIds") or kind not in (None, "human"):
        return None  # other origins and pasted images have templates not known here
    return reminder(f"{QUEUED}{prompt}\n\n{QUEUED_NOTE}")


def _critical(a: Mapping[str, Any]) -> str | None:
    content = a.get("content")
    return reminder(content) if isinstance(content, str) else None


def _nested_memory(a: Mapping[str, Any]) -> str | None:
    content = a.get("content")
    if not isinstance(content, Mapping):
        return None
    path, text = content.get("path"), content.get("content")
    if not isinstance(path, str) or not isinstance(text, str):
        return None
    return reminder(f"Contents of {path}:\n\n{text}")


def _agent_mention(a: Mapping[str, Any]) -> str | None:
    agent = a.get("agentType")
    if not isinstance(agent, str):
        return None
    return reminder(
        f'The user has expressed a desire to invoke the agent "{agent}". Please invoke the agent '
        "appropriately, passing in the required context to it. "
    )


_RENDERERS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "agent_listing_delta": _agent_listing,
    "skill_listing": _skill_listing,
    "queued_command": _queued,
    "critical_system_reminder": _critical,
    "nested_memory": _nested_memory,
    "agent_mention": _agent_mention,
}

__all__ = ["reminder", "render_attachment"]
