"""The readers, in the order detection asks them: most specific first (a reader later in the
list may accept what an earlier one rejects). A new reader is one module exposing ``READER`` and
one line here; the imports are plain, so static tools (mypy, import-linter, an editor) follow
every reader from :func:`contextkit.formats.readers`.

This module loads every reader, so :mod:`contextkit.formats` imports it only when a file is
detected or read (importing the package stays cheap for the CLI's start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextkit.formats import (
    anthropic,
    atif,
    claude_code,
    claude_trace,
    cline,
    codex,
    cursor,
    gemini_cli,
    mini_swe_agent,
    openai_chat,
    openai_responses,
    opencode,
    pi,
    proxy_record,
    swe_agent,
)
from contextkit.formats.aider import chat_history, llm_history
from contextkit.formats.hermes import state_db, trajectory
from contextkit.formats.openhands import evaluation, sdk
from contextkit.formats.openhands import trajectory as openhands_trajectory
from contextkit.formats.tau import tau2_bench, tau_bench

if TYPE_CHECKING:
    from contextkit.formats import FormatReader

READERS: tuple[FormatReader, ...] = (
    atif.READER,
    proxy_record.READER,
    claude_trace.READER,
    cline.READER,
    cursor.READER,
    opencode.READER,
    state_db.READER,
    trajectory.READER,
    anthropic.READER,
    claude_code.READER,
    gemini_cli.READER,
    evaluation.READER,
    sdk.READER,
    pi.READER,
    chat_history.READER,
    llm_history.READER,
    openhands_trajectory.READER,
    tau2_bench.READER,
    tau_bench.READER,
    mini_swe_agent.READER,
    swe_agent.READER,
    codex.READER,
    openai_responses.READER,
    openai_chat.READER,
)

__all__ = ["READERS"]
