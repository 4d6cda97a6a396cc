"""Reader for aider's LLM history (``--llm-history-file``, often ``.aider.llm.history``).

aider's ``InputOutput.log_llm_history(role, content)`` appends ``<ROLE> <ISO time to the
second>`` and the content. Before each request ``Coder.send`` logs ``TO LLM`` with
``format_messages(messages)``: for every message a ``-------`` line, then each line of its
content prefixed by the role in capitals (``SYSTEM ...``, ``USER ...``, ``ASSISTANT ...``); a
list content (images) as ``ROLE key: value`` lines. After the reply it logs ``LLM RESPONSE`` with
the reply's lines prefixed by ``ASSISTANT``.

What counts as a call: each ``TO LLM`` section, its response the ``LLM RESPONSE`` section after it
(None when the file ends or another request follows first). Its request is the logged messages:
the leading ``SYSTEM`` messages are the system prompt (so ``prefix_known`` is True: aider sends no
tool definitions), later ``SYSTEM`` messages (aider's reminders) stay in place as user-role
messages marked with their role, as the OpenAI chat reader keeps them. The request is not
byte-exact (``exact=False``): ``format_content`` drops a content's trailing newline and writes
image parts as text, and an empty message leaves no line (so no role): it is left out, and a
note says where. The file records no token usage and no model: calls have ``usage=None`` and
``model=None`` (pass ``--model``). aider appends every run to the same file without a marker: the
file is one session.

Strict by default: a line before the first section header, or a message line without a role
prefix, is a :class:`FormatError` with its line; ``lenient=True`` skips it and lists it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import parse_time
from contextkit.messages import Conversation, Message
from contextkit.session import Call, LoadedFile, Session
from contextkit.wire import parse_chat_messages

NAME = "aider-llm"
FILE_NAME = ".aider.llm.history"
_HEADER = re.compile(r"^(TO LLM|LLM RESPONSE) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)$")
_ROLES = ("SYSTEM", "USER", "ASSISTANT", "TOOL", "FUNCTION", "DEVELOPER")
_SEPARATOR = "-------"


@dataclass
class _Section:
    kind: str
    stamp: str
    line: int
    body: list[tuple[int, str]] = field(default_factory=list)


class AiderLlmReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        first = head.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
        match = _HEADER.match(first)
        return match is not None and match.group(1) == "TO LLM"

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        empty: list[int] = []
        calls = _calls(_sections(path, skips), skips, empty)
        notes = [
            "aider's LLM history holds the messages sent, not the body: no token usage, no "
            "model name, text as logged (exact=False)",
            "times are aider's local clock (no zone recorded), read as UTC",
        ]
        if empty:
            notes.append(
                f"{len(empty)} empty messages (lines {', '.join(map(str, empty[:5]))}"
                f"{', ...' if len(empty) > 5 else ''}) are left out: aider logs no line for "
                "them, so their role is lost"
            )
        session = Session(
            path=str(path), format=NAME, calls=calls, prefix_known=True, notes=tuple(notes)
        )
        return LoadedFile(
            path=str(path), format=NAME, sessions=(session,), skipped=tuple(skips.records)
        )


def _sections(path: Path, skips: Skips) -> list[_Section]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(path, "invalid UTF-8", data.count(b"\n", 0, exc.start) + 1) from None
    sections: list[_Section] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        match = _HEADER.match(line)
        if match:
            sections.append(_Section(match.group(1), match.group(2), number))
        elif sections:
            sections[-1].body.append((number, line))
        elif line.strip():
            skips.fail("text before the first 'TO LLM' / 'LLM RESPONSE' line", number)
    for section in sections:  # the file's final newline leaves one empty line
        while section.body and not section.body[-1][1]:
            section.body.pop()
    return sections


def _prefixed(line: str) -> tuple[str, str] | None:
    """``(ROLE, text)`` of a logged content line, or None."""
    for role in _ROLES:
        if line == role or line.startswith(role + " "):
            return role, line[len(role) + 1 :]
    return None


def _messages(section: _Section, skips: Skips, empty: list[int]) -> list[dict[str, str]]:
    """The chat messages of a ``TO LLM`` section, as ``{"role", "content"}``; the line of each
    empty message (``format_content`` writes no line for it, so its role is lost) in ``empty``."""
    out: list[dict[str, str]] = []
    lines: list[str] = []
    role: str | None = None
    opened: int | None = None
    for number, line in section.body:
        if line == _SEPARATOR:
            if role is not None:
                out.append({"role": role.lower(), "content": "\n".join(lines)})
            elif opened is not None:
                empty.append(opened)
            role, lines, opened = None, [], number
            continue
        prefixed = _prefixed(line)
        if prefixed is None or (role is not None and prefixed[0] != role):
            skips.fail("a message line without its role prefix (SYSTEM, USER, ...)", number)
            continue
        role = prefixed[0]
        lines.append(prefixed[1])
    if role is not None:
        out.append({"role": role.lower(), "content": "\n".join(lines)})
    elif opened is not None:
        empty.append(opened)
    return out


def _response(section: _Section, skips: Skips) -> Message:
    lines: list[str] = []
    for number, line in section.body:
        prefixed = _prefixed(line)
        if prefixed is None or prefixed[0] != "ASSISTANT":
            if line:  # format_content("ASSISTANT", "") logs an empty line
                skips.fail("a response line without the ASSISTANT prefix", number)
            continue
        lines.append(prefixed[1])
    return Message(role="assistant", content="\n".join(lines))


def _calls(sections: Sequence[_Section], skips: Skips, empty: list[int]) -> tuple[Call, ...]:
    calls: list[Call] = []
    for index, section in enumerate(sections):
        if section.kind != "TO LLM":
            continue
        after = sections[index + 1] if index + 1 < len(sections) else None
        response = _response(after, skips) if after and after.kind == "LLM RESPONSE" else None
        try:
            system, messages = parse_chat_messages(_messages(section, skips, empty))
        except ValueError as exc:
            skips.fail(str(exc), section.line)
            continue
        calls.append(
            Call(
                request=Conversation(system=system, messages=messages),
                response=response,
                timestamp=parse_time(section.stamp),
                stop_reason="end_turn" if response is not None else None,
                exact=False,
                line=section.line,
            )
        )
    return tuple(calls)


READER = AiderLlmReader()

__all__ = ["READER", "AiderLlmReader"]
