"""Files of mixed formats: records of another JSON-lines format among a reader's own.

A Claude Code transcript, a Codex rollout and a file of OpenAI Responses, OpenAI Chat or
Anthropic request bodies can each tell their records from the others' (each has a predicate of
its own, :data:`_FAMILIES`). While ``load`` reads such a file, :func:`checked_read` keeps every
record that another of these formats claims away from the reader (``_io.LINE_CHECK``) and then
judges the tally:

- a file where such records are more than a few (at least :data:`MIXED_MIN` and more than
  :data:`STRAY_SHARE` of the records) is a :class:`MixedFormatError` naming the formats and the
  lines of each (``lines 1-40 are claude-code, lines 41-80 are codex``), in strict and lenient
  mode alike: there is no one format to read it as;
- a few such records (strays) among a file of one format: strict, an error naming them; lenient,
  each is a skipped record with its line and the format it belongs to, and the rest is read.

The three request forms are not told apart from one another here (a Chat body and an Anthropic
body can be written alike; their readers decide on the file), only from the two logs.

When no reader's sniffer claims a JSON-lines file, :func:`head_vote` gives the format most of its
first records belong to (a file whose very first line is a stray), or the same error when several
formats share them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from contextkit.errors import ContextkitError, FormatError, MixedFormatError
from contextkit.formats._io import LINE_CHECK, LineCheck, is_plain_text_body
from contextkit.session import LoadedFile, SkippedRecord
from contextkit.wire import is_anthropic_record, is_chat_record, is_responses_record

MIXED_MIN = 3
STRAY_SHARE = 0.1
_LOGS = ("claude-code", "codex")
_REQUESTS = ("openai-responses", "anthropic", "openai-chat")
_SHOWN_RUNS = 8
_SHOWN_LINES = 10

Predicate = Callable[[dict[str, Any]], bool]


@cache
def _families() -> dict[str, Predicate]:
    # The readers import this package: their predicates are looked up on first use.
    from contextkit.formats import codex  # noqa: PLC0415
    from contextkit.formats.claude_code import looks_like_record  # noqa: PLC0415

    def request(test: Callable[[object], bool]) -> Predicate:
        return lambda value: not is_plain_text_body(value) and test(value)

    return {
        "claude-code": looks_like_record,
        "codex": codex.is_rollout_line,
        "openai-responses": request(is_responses_record),
        "anthropic": request(is_anthropic_record),
        "openai-chat": request(is_chat_record),
    }


def _safe(test: Predicate, value: dict[str, Any]) -> bool:
    try:
        return test(value)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return False  # a value of a wrong type: not a record this format would claim


def record_format(
    value: dict[str, Any], among: tuple[str, ...] = (*_LOGS, *_REQUESTS)
) -> str | None:
    """The first of ``among`` whose records ``value`` looks like, or None."""
    families = _families()
    return next((name for name in among if _safe(families[name], value)), None)


def _classifier(own: str) -> Callable[[dict[str, Any]], str | None] | None:
    """For the reader ``own``: ``own`` for a record of its own, the format of another family
    that claims it, or None; None for a reader this module does not check."""
    if own not in _LOGS and own not in _REQUESTS:
        return None
    mine = _families()[own]
    others = (*(n for n in _LOGS if n != own), *(_REQUESTS if own in _LOGS else ()))

    def classify(value: dict[str, Any]) -> str | None:
        if _safe(mine, value):  # the common case first: one test per record of the file
            return own
        return record_format(value, others)

    return classify


def checked_read(
    read: Callable[[], LoadedFile], name: str, path: Path, lenient: bool
) -> LoadedFile:
    """``read()`` with the records of other formats kept from it and judged (module docstring)."""
    classify = _classifier(name)
    if classify is None:
        return read()
    check = LineCheck(path, name, classify)
    token = LINE_CHECK.set(check)
    try:
        loaded = read()
    except ContextkitError:
        if _is_mixed(check):
            raise _mixed_error(check) from None
        raise
    finally:
        LINE_CHECK.reset(token)
    if not check.withheld:
        return loaded
    if _is_mixed(check):
        raise _mixed_error(check)
    strays = [
        SkippedRecord(path=str(path), line=line, reason=f"a {kind} record among {name} records")
        for line, kind in check.withheld
    ]
    if not lenient:
        lines = [line for line, _ in check.withheld]
        shown = ", ".join(map(str, lines[:_SHOWN_LINES]))
        shown += ", ..." if lines[_SHOWN_LINES:] else ""
        kinds = " / ".join(sorted({kind for _, kind in check.withheld}))
        reason = (
            f"{len(lines)} {kinds} record(s) among {name} records (line(s) {shown}); "
            "--lenient skips them"
        )
        raise FormatError(path, reason, lines[0])
    skipped = sorted([*loaded.skipped, *strays], key=lambda r: (r.line is None, r.line or 0))
    return loaded.model_copy(update={"skipped": tuple(skipped)})


def _is_mixed(check: LineCheck) -> bool:
    foreign = len(check.withheld)
    return foreign >= MIXED_MIN and foreign > STRAY_SHARE * (foreign + check.given)


def _runs(labelled: list[tuple[int, str]]) -> list[list[Any]]:
    """``[first, last, format]`` of each run of consecutive records of one format."""
    runs: list[list[Any]] = []
    for line, kind in labelled:
        if runs and runs[-1][2] == kind:
            runs[-1][1] = line
        else:
            runs.append([line, line, kind])
    return runs


def _mixed_error(check: LineCheck) -> MixedFormatError:
    return _error(check.path, check.runs, Counter(check.counts), check.withheld[0][0])


def _error(path: Path, runs: list[list[Any]], counts: Counter[str], line: int) -> MixedFormatError:
    parts = [
        f"line {a} is {kind}" if a == b else f"lines {a}-{b} are {kind}" for a, b, kind in runs
    ]
    shown = ", ".join(parts[:_SHOWN_RUNS])
    if len(parts) > _SHOWN_RUNS:
        shown += f", and {len(parts) - _SHOWN_RUNS} more runs"
    tally = ", ".join(f"{n} {kind}" for kind, n in counts.most_common())
    reason = f"records of several formats ({tally}): {shown}; split the file by format"
    return MixedFormatError(path, reason, line)


def _head_labels(path: Path, limit: int = 20) -> list[tuple[int, str]]:
    """``(line, format)`` of the first ``limit`` records that one of the formats claims."""
    out: list[tuple[int, str]] = []
    try:
        with path.open("rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                try:
                    value = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if isinstance(value, dict) and (kind := record_format(value)) is not None:
                    out.append((number, kind))
                    if len(out) >= limit:
                        break
    except OSError:
        pass
    return out


def head_vote(path: Path) -> str | None:
    """For a file no sniffer claims: the format more than half of its first records belong to
    (and at least two); a :class:`MixedFormatError` when several formats share them with none
    holding most; None when no format claims any."""
    labelled = _head_labels(path)
    counts = Counter(kind for _, kind in labelled)
    if not counts:
        return None
    kind, n = counts.most_common(1)[0]
    if n >= 2 and n * 2 > counts.total():
        return kind
    if len(counts) > 1 and counts.total() - n >= MIXED_MIN:
        first_other = next(line for line, k in labelled if k != labelled[0][1])
        raise _error(path, _runs(labelled), counts, first_other)
    return None
