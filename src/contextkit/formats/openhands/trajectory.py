"""Reader for OpenHands event streams (``All-Hands-AI/OpenHands`` saved trajectories).

A trajectory file is a JSON list of serialized events (``event_to_trajectory``), or an object
holding that list under ``trajectory`` (the server's export). Each event has ``id``,
``timestamp``, ``source`` (``user``/``agent``/``environment``), ``message``, and either
``action`` + ``args`` or ``observation`` + ``content`` + ``extras``; ``cause`` links an
observation to its action; ``tool_call_metadata`` (``function_name``, ``tool_call_id``,
``model_response``: the raw litellm response, ``total_calls_in_response``) marks what an LLM call
produced; ``llm_metrics`` (newer versions) carries the accumulated metrics with ``token_usages``.

What counts as a call: one LLM response. Agent actions carrying ``tool_call_metadata`` are grouped
by ``model_response.id`` (parallel tool calls share one response); an agent action without it that
only an LLM produces (``message``, ``finish``, ``reject``, and the action kinds of text-parsing
agents) is a call of its own. The response is ``model_response.choices[0].message`` mapped with
``openai_chat.parse_chat_messages`` (or, without a response, rebuilt from the action's
``thought`` and arguments). The request is every message before it, rebuilt (``exact=False``) the
way OpenHands' ConversationMemory does: user messages as user text, observations linked to a tool
call (by metadata or ``cause``) as tool results, other observations with content as user text;
state changes and empty observations are set aside by kind.

Usage: ``model_response.usage`` (litellm: ``prompt_tokens`` includes cached tokens; Anthropic's
``cache_creation_input_tokens`` / ``cache_read_input_tokens`` when present), else the entry of
``llm_metrics.token_usages`` with the response's id. The system prompt and tool definitions are in
the file only as a ``system`` action (newer versions); without one, ``prefix_known=False``.

Not modelled: condensation (a ``condensation`` action makes OpenHands forget events; here it is
recorded in ``Session.compactions`` and the later requests still hold the forgotten events), and
delegation (delegate agents' events share the stream and are read as the main agent's).
"""

from __future__ import annotations

from pathlib import Path

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import load_doc, peek
from contextkit.formats.openhands._events import EventStream, check_event, is_event
from contextkit.session import LoadedFile

NAME = "openhands"


class OpenHandsReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        if seen.kind == "list":
            return is_event(seen.keys)
        return seen.kind == "object" and is_event(seen.first_keys.get("trajectory", ()))

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        if isinstance(doc.value, list):
            events, lines = doc.value, doc.element_lines()
        elif _is_export(doc.value):
            events, lines = doc.value["trajectory"], doc.element_lines("trajectory")
        else:
            raise FormatError(path, "expected a list of OpenHands events", 1)
        skips = Skips(path, lenient)
        builder = EventStream()
        for index, event in enumerate(events):
            line = lines[index] if index < len(lines) else None
            problem = check_event(event)
            if problem is not None:
                skips.fail(f"event {index}: {problem}", line)
                continue
            try:
                builder.add(event, line)
            except ValueError as exc:  # a bad count in the metrics it takes its usage from
                skips.fail(f"event {index}: {exc}", line)
        return LoadedFile(
            path=str(path),
            format=NAME,
            sessions=(builder.session(path, format=NAME, session_id=path.stem),),
            skipped=tuple(skips.records),
        )


def _is_export(value: object) -> bool:
    """The server's export, ``{"trajectory": [events]}`` (a SWE-agent file also has a
    ``trajectory``, of steps, next to its ``history``)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("trajectory"), list)
        and "history" not in value
    )


READER = OpenHandsReader()

__all__ = ["READER", "OpenHandsReader"]
