"""Claude Code session transcripts: the ``claude-code`` reader (:mod:`._reader`: what a session
is, and its contract), with the modules it is built from: records parsed from the lines
(:mod:`._records`, attachments rendered as sent by :mod:`._attachments`), calls, requests and
compactions rebuilt from them (:mod:`._calls`), stream-start placeholder outputs counted from the
content (:mod:`._outputs`), and what the client sends on every request that its transcripts never
hold, captured per client version (:mod:`.prefix`).
"""

from __future__ import annotations

from contextkit.formats.claude_code._reader import (
    FORMAT,
    READER,
    ClaudeCodeReader,
    load_claude_code,
    looks_like_record,
)

__all__ = ["FORMAT", "READER", "ClaudeCodeReader", "load_claude_code", "looks_like_record"]
