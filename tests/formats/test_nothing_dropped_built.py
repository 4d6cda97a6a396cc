"""Nothing dropped silently, over the readers :mod:`test_nothing_dropped` cannot reach by mutating
corpus files (:data:`test_nothing_dropped.NOT_EXERCISED`: databases, folders, formats without a
corpus file). Each input is built with the builders of the reader's own tests; then every record
of it (a JSON list element, a JSON line, a text line, a JSON file of a folder, an SQLite row or
its JSON column) is spoilt one at a time (removed, made unparsable, replaced by a string or an
empty object, one field of the wrong type; in the long fuzz run, ``CONTEXTKIT_FUZZ_CASES=<n>
... -m fuzz``, every field one level down too;
:mod:`dropping`). For each case:

- the strict read is a read or a clean error naming a file of the input, and the line where the
  format has lines (a removed record has none), never an exception the load boundary caught;
- a lenient read with fewer calls than the clean one reports a skipped or set-aside record, one
  for each call lost where a record holds at most one call;
- a lenient read that skips a record is an error when strict.

A removed record is held to the second rule only where other records refer to it (Cursor bubble
rows name their composer row, OpenCode parts their message, OpenHands events are numbered): a
record nothing refers to is simply absent, and a read with fewer calls is right."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_format_aider import _llm_history
from test_format_cline import HISTORY_CLINE, UI_CLINE, _task
from test_format_cursor import _db as _cursor_db
from test_format_cursor import _rows as _cursor_rows
from test_format_hermes import _database as _hermes_db
from test_format_hermes import _export as _hermes_export
from test_format_hermes_trajectory import GOOD, _entry, _write
from test_format_opencode import _database as _opencode_db
from test_format_opencode import _storage as _opencode_storage
from test_format_openhands_sdk import CONVERSATION, FIXTURE
from test_nothing_dropped import NOT_EXERCISED

from contextkit.formats.cline import HISTORY as CLINE_HISTORY
from contextkit.formats.cline import UI_MESSAGES as CLINE_UI
from dropping import Place, Reader, check, files, places

pytestmark = pytest.mark.filterwarnings("error")

_HI = {"role": "user", "content": "hi"}
LONG = bool(os.environ.get("CONTEXTKIT_FUZZ_CASES"))
"""The long run of ``tests/test_fuzz.py`` runs the deeper cases here too."""


def _proxy_record(messages: list[Any], text: str, **fields: Any) -> dict[str, Any]:
    """A record as :mod:`contextkit.proxy` writes it (the fields ``tests/proxy/test_proxy_units.py``
    spoils one of)."""
    body = {"model": "m", "max_tokens": 8, "messages": messages}
    response = {
        "id": f"msg_{len(messages)}",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3 * len(messages), "output_tokens": 2},
    }
    record = {"contextkit_proxy": 1, "api": "anthropic", "request": body, "forwarded": None}
    record |= {"status": 200, "complete": True, "response": response, "error": None}
    return record | {"started_at": 1750000000.0, "conversation": "prefix-1"} | fields


def _proxy_file(root: Path) -> Path:
    history: list[Any] = [_HI]
    lines = []
    for i in range(3):
        lines.append(_proxy_record(list(history), f"answer {i}"))
        history += [
            {"role": "assistant", "content": f"answer {i}"},
            {"role": "user", "content": "go"},
        ]
    count = {"api": "anthropic-count-tokens", "method": "POST", "path": "/v1/messages/count_tokens"}
    lines.insert(1, _proxy_record([_HI], "", **count, response={"input_tokens": 3}))
    path = root / "prefix-1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def _cline(root: Path) -> Path:
    return _task(root, HISTORY_CLINE, UI_CLINE)


def _cline_places(root: Path) -> list[Place]:
    task = "tasks/1750000000000"
    return [
        *places(root, f"{task}/{CLINE_HISTORY}", "list"),
        *places(root, f"{task}/{CLINE_UI}", "list"),
    ]


def _openhands_sdk(root: Path) -> Path:
    folder = Path(shutil.copytree(FIXTURE / CONVERSATION, root / CONVERSATION))
    return folder / "base_state.json"


def _trajectory(root: Path) -> Path:
    short = _entry(("human", "hi"), ("gpt", "hello"))
    return _write(root / "trajectory_samples.jsonl", GOOD, short)


READERS = [
    Reader("contextkit-proxy", _proxy_file, lambda r: places(r, "prefix-1.jsonl", "jsonl")),
    Reader("cline", _cline, _cline_places),
    Reader(
        "cursor",
        lambda r: _cursor_db(r / "state.vscdb", _cursor_rows()),
        lambda r: places(r, "state.vscdb", "row", table="cursorDiskKV", column="value"),
        lines=False,
        many_calls=True,  # a composer row holds every call of its conversation
        referred=lambda p: p.kind == "row",  # bubble rows name their composer, headers bubbles
    ),
    Reader(
        "opencode",
        _opencode_storage,
        lambda r: files(r, "storage/**/*.json"),
        many_calls=True,  # the session file holds every call
        referred=lambda p: "/message/" in p.file,  # its part files name it
    ),
    Reader(
        "opencode",
        _opencode_db,
        lambda r: [
            *places(r, "opencode.db", "row", table="message", column="data"),
            *places(r, "opencode.db", "row", table="part", column="data"),
        ],
        lines=False,
        many_calls=True,  # an assistant message holds one call per step
        referred=lambda p: p.table == "message",  # its part rows name it
    ),
    Reader(
        "hermes",
        lambda r: _hermes_db(r / "state.db"),
        lambda r: places(r, "state.db", "row", table="messages"),
        lines=False,
    ),
    Reader(
        "hermes",
        lambda r: _hermes_export(r / "sessions.jsonl"),
        lambda r: places(r, "sessions.jsonl", "jsonl"),
        many_calls=True,  # a line is a session with its messages
    ),
    Reader(
        "hermes-trajectory",
        _trajectory,
        lambda r: places(r, "trajectory_samples.jsonl", "jsonl"),
        many_calls=True,  # a line is a whole conversation
    ),
    Reader(
        "openhands-sdk",
        _openhands_sdk,
        lambda r: files(r, f"{CONVERSATION}/**/*.json"),
        referred=lambda p: "/events/" in p.file,  # events are numbered from 0
    ),
    Reader("aider-llm", _llm_history, lambda r: places(r, ".aider.llm.history", "text")),
]
IDS = [
    "proxy",
    "cline",
    "cursor",
    "opencode-storage",
    "opencode-db",
    "hermes-db",
    "hermes-export",
    "hermes-trajectory",
    "openhands-sdk",
    "aider-llm",
]


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_every_lost_call_is_reported(reader: Reader, tmp_path: Path) -> None:
    result = check(reader, tmp_path)
    assert result.failures == [], "\n".join(result.failures)
    assert result.read >= 5, result


@pytest.mark.fuzz
@pytest.mark.skipif(not LONG, reason="a long fuzz run: set CONTEXTKIT_FUZZ_CASES=<count>")
@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_every_lost_call_is_reported_one_level_down(reader: Reader, tmp_path: Path) -> None:
    """The same, with every field one level down spoilt too (a field of a nested object, an
    element of a list field or a field of that element)."""
    result = check(reader, tmp_path, deep=True)
    assert result.failures == [], "\n".join(result.failures)


def test_these_are_the_readers_the_corpus_test_does_not_reach() -> None:
    assert {r.name for r in READERS} == set(NOT_EXERCISED)
