"""Sessions: what a recorded file (or a live loop) tells about each model call.

A :class:`Session` is an ordered tuple of :class:`Call`: the request as sent (``exact``) or as
reconstructed from a transcript, the assistant response, the usage the provider billed when the
file records it, the model, the time and the stop reason. Subagent sessions hang off their parent.
A session whose file omits the system prompt and tool definitions (Claude Code transcripts) says so
with ``prefix_known=False``; nothing pretends they are empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from contextkit.messages import Conversation, Message, Usage
from contextkit.models import ModelInfo, resolve_model


class Record(BaseModel):
    """Base for contextkit's own records: frozen and strict about their fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Call(Record):
    """One model call."""

    request: Conversation
    response: Message | None = None
    usage: Usage | None = None
    model: str | None = None
    timestamp: datetime | None = None
    stop_reason: str | None = None
    request_id: str | None = None
    exact: bool = False
    """True when ``request`` is the body that was sent; False when rebuilt from a transcript."""
    line: int | None = None
    """Where the call's response starts in the source file (1-based), when it has lines."""
    cache_reset: Literal["messages", "system"] | None = None
    """The harness changed cached content the file does not show, just before this call:
    ``"messages"`` the messages level (the cached prefix after tools and system no longer
    matches), ``"system"`` the system prompt too. Set by readers that know their harness."""
    output_estimated: bool = False
    """True when the file's ``output_tokens`` is not the billed figure (a placeholder written at
    stream start) and ``usage.output_tokens`` was counted from the response content instead; the
    other usage fields are as recorded. Set by readers that know their harness."""

    route: str | None = None
    """How the call was served where the file says (``"bedrock"``, ``"vertex"``: from response
    ids); None when nothing says (first party, or unknown)."""

    @property
    def model_info(self) -> ModelInfo:
        """The call's model (``model``, else the request's), resolved once per id, with the
        call's ``route`` where the file gives one."""
        info = resolve_model(self.model or self.request.model)
        return (
            info if self.route is None or info.route == self.route else info.with_route(self.route)
        )


class SkippedRecord(Record):
    """A record a lenient reader passed over, and why."""

    path: str
    line: int | None
    reason: str


class CapturedPrefix(Record):
    """What a harness sends on every request that its files never hold (its system prompt and tool
    definitions), as captured from the real client of the file's version: the reader that knows
    the harness puts it on the :class:`Session`, and the accountant uses it where the file has no
    usage to measure it with."""

    system_tokens: int
    tool_tokens: int
    """Tokens of the system blocks and of the tools, by the capture's counter (a tiktoken
    encoding: the accountant scales them by the session counter's calibration)."""
    one_hour: bool = False
    """The system blocks carry 1-hour cache marks."""
    source: str
    """What was captured, and when (``Claude Code 2.1.197 main requests, captured 2026-11-20``)."""


class Session(Record):
    path: str
    format: str
    session_id: str | None = None
    calls: tuple[Call, ...] = ()
    subagents: tuple[Session, ...] = ()
    parent_session_id: str | None = None
    parent_tool_use_id: str | None = None
    prefix_known: bool = True
    """False when the file omits the system prompt and tool definitions (Claude Code files)."""
    compactions: tuple[int, ...] = ()
    """Indices of calls that the harness made right after compacting its own history."""
    resumes: tuple[int, ...] = ()
    """Indices of the first call of each resumption (a new process after ``/exit``, a
    ``SessionStart`` resume hook): its ``cache_reset`` says ``"system"``."""
    harness_compaction: bool = False
    """The calls of this (sub)session are the harness compacting its parent's history (Claude
    Code's ``agent-acompact-*`` files): they belong to the parent's as-recorded cost."""
    client_version: str | None = None
    """The version of the harness that wrote the file, where it says (Claude Code's ``version``
    of most records: ``2.1.197``)."""
    captured_prefix: CapturedPrefix | None = None
    """The capture of what this client version sends beside the file's messages (system prompt,
    tools), where one exists for it (:class:`CapturedPrefix`)."""
    context_window: int | None = None
    """The window the harness ran the model with, where the file or its harness says (Claude Code:
    200k unless its model id names another); None: the model's own (``ModelInfo``)."""
    set_aside: Mapping[str, int] = {}
    """Records that are not model calls (progress, snapshots, queue operations), counted by kind."""
    notes: tuple[str, ...] = ()

    @property
    def model(self) -> str | None:
        """The model of most calls."""
        models = [c.model or c.request.model for c in self.calls]
        named = [m for m in models if m]
        return max(set(named), key=named.count) if named else None

    @property
    def model_info(self) -> ModelInfo:
        """:attr:`model`, resolved (:data:`~contextkit.models.UNKNOWN_MODEL` when no call names
        one), with the window the harness ran it with (:attr:`context_window`), and never less
        than :attr:`accepted_input`: a call the provider accepted fit the window it ran in."""
        info = resolve_model(self.model)
        window = self.context_window or info.context_window
        accepted = self.accepted_input
        if window is not None and accepted > window:
            window = accepted
        if window is None or info.context_window == window:
            return info
        return info.with_context_window(window)

    @property
    def accepted_input(self) -> int:
        """The largest total input a call of this session was billed for (0 without usage):
        the provider accepted a request of that size, so the window was at least that."""
        return max((c.usage.total_input for c in self.calls if c.usage is not None), default=0)

    def window_note(self) -> str | None:
        """What :attr:`model_info`'s window rests on when the file's usage raised it (else
        None)."""
        info = resolve_model(self.model)
        known = self.context_window or info.context_window
        if known is None or self.accepted_input <= known:
            return None
        return (
            f"window: the provider accepted a call of {self.accepted_input:,} input tokens, over "
            f"the {known:,} known for {info.id or 'the model'}: the window it ran is taken to be "
            "at least that"
        )

    def user_turns(self) -> tuple[tuple[int, ...], ...]:
        """Call indices grouped into user turns (a turn ends on a stop reason but tool use)."""
        turns: list[tuple[int, ...]] = []
        current: list[int] = []
        for i, call in enumerate(self.calls):
            current.append(i)
            if call.stop_reason not in ("tool_use", "pause_turn"):
                turns.append(tuple(current))
                current = []
        if current:
            turns.append(tuple(current))
        return tuple(turns)

    def all_sessions(self) -> tuple[Session, ...]:
        """This session and every subagent session below it, depth first."""
        out: list[Session] = [self]
        for sub in self.subagents:
            out.extend(sub.all_sessions())
        return tuple(out)


class LoadedFile(Record):
    """What one file holds: its format, its sessions, and what a lenient read skipped."""

    path: str
    format: str
    sessions: tuple[Session, ...]
    skipped: tuple[SkippedRecord, ...] = ()

    @property
    def calls(self) -> int:
        """Model calls found in this file (subagent files count in their own file)."""
        return sum(len(s.calls) for s in self.sessions)


__all__ = ["Call", "CapturedPrefix", "LoadedFile", "Record", "Session", "SkippedRecord", "Usage"]
