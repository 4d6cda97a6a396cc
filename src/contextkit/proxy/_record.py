"""The proxy's record: one JSON line per exchange, one file per conversation, credentials never
written.

``DIR/<conversation>.jsonl`` (mode 0600, appended one whole line per write under a lock, so
concurrent exchanges never interleave) holds, per exchange: ``contextkit_proxy`` (the record
version), ``id``, ``conversation``, ``api``, ``method``, ``path``, ``started_at`` (epoch seconds),
``ttfb_ms`` / ``duration_ms``, ``status``, ``complete`` (False: the stream or the body stopped
short, the upstream failed or timed out, or the client went away; ``error`` says which),
``streamed``, ``events``, ``request_headers`` / ``response_headers`` (credentials removed),
``request`` (the body as received), ``forwarded`` (the body as sent upstream; null when it is the
body as received, byte for byte), ``would_forward``
(with ``--dry-run``: what the strategy would have sent), ``response`` (the JSON body, or the
stream reassembled into it), ``usage`` (contextkit's :class:`Usage` fields), ``cost_usd`` and
``edit`` (what the strategy did). :mod:`contextkit.formats.proxy_record` reads it back.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from contextkit.errors import ContextkitError

RECORD_VERSION = 1
SECRET_HEADERS = frozenset(
    {
        "x-api-key",
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "anthropic-admin-api-key",
        "openai-api-key",
        "api-key",
        "x-goog-api-key",
    }
)


_CREDENTIAL = re.compile(
    r"(?:^|[-_.])(?:key|apikey|token|secret|auth|authorization|password|passwd|pwd|credentials?|"
    r"cookie|signature|sig)(?:$|[-_.])|api[-_]?key|access[-_]?token",
    re.IGNORECASE,
)
"""A header or query parameter whose name suggests a credential (deny by default: ``x-api-key``,
``x-auth-token``, ``anthropic-api-key``, ``key``, ``api_key``, ``access_token``, ...)."""


def is_secret(name: str) -> bool:
    """Whether a header or query parameter named ``name`` may carry a credential."""
    lowered = name.lower()
    return lowered in SECRET_HEADERS or _CREDENTIAL.search(lowered) is not None


def redacted(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers, names lower-cased, without any credential (:func:`is_secret`)."""
    return {k.lower(): v for k, v in headers if not is_secret(k)}


def redacted_query(query: str) -> str:
    """``query`` with the value of every parameter whose name suggests a credential replaced by
    ``REDACTED`` (the order and the other parameters as they were)."""
    if not query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(is_secret(name) for name, _ in pairs):
        return query
    return urlencode([(n, "REDACTED" if is_secret(n) else v) for n, v in pairs])


def json_bytes(value: Any, *, compact: bool = True) -> bytes:
    """``value`` as UTF-8 JSON; text holding a lone surrogate (a client may send ``"\\ud800"``)
    is written with ASCII escapes instead, the same JSON value, where UTF-8 cannot carry it."""
    separators = (",", ":") if compact else None
    text = json.dumps(value, ensure_ascii=False, separators=separators, default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=separators, default=str).encode("ascii")


class RecordWriter:
    """Appends exchange records to ``DIR/<conversation>.jsonl`` (thread-safe, files 0600).

    The records hold every prompt in full, so the folder is private: created 0700; an existing
    one that others can write (where they could plant a link or a file) is refused with a
    ContextkitError saying what to do; and no symbolic link in it is followed."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.exists():
            self.folder.mkdir(mode=0o700, parents=True)
        if self.folder.is_symlink() or not self.folder.is_dir():
            raise ContextkitError(f"{self.folder}: the record folder must be a folder, not a link")
        mode = self.folder.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ContextkitError(
                f"{self.folder}: others can write this record folder (mode {mode & 0o777:o}), so "
                "they could plant links or files in it; make it private (chmod 700) or record to "
                "a new folder"
            )
        self._lock = threading.Lock()
        self.written = 0

    def path_for(self, conversation: str) -> Path:
        return self.folder / f"{conversation}.jsonl"

    def write(self, record: Mapping[str, Any]) -> Path:
        path = self.path_for(str(record["conversation"]))
        line = json_bytes(record, compact=False) + b"\n"
        with self._lock:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
            try:
                fd = os.open(path, flags, 0o600)
            except OSError as exc:  # a planted link (ELOOP), or no room
                raise ContextkitError(
                    f"{path}: cannot write the record ({exc.strerror or exc}); links in the "
                    "record folder are never followed"
                ) from None
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
            self.written += 1
        return path


__all__ = [
    "RECORD_VERSION",
    "SECRET_HEADERS",
    "RecordWriter",
    "is_secret",
    "json_bytes",
    "redacted",
    "redacted_query",
]
