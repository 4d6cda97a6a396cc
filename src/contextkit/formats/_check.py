"""A recorded file's requests checked against the provider's rules (``contextkit validate``): every
call of every session, subagents included; a finding that repeats over consecutive calls is one
:class:`Finding`. The command prints a :class:`FileReport`; :func:`exit_code` is its exit code
(0 clean, 1 violations, 2 a file unreadable)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from contextkit.errors import ContextkitError
from contextkit.messages import Rules, rules_for_model, validate
from contextkit.session import LoadedFile, Session, SkippedRecord


class CallViolation(BaseModel):
    """One finding in one call's request (``session``: the index of the call's session in the
    file, depth first; ``call``: the call's index in the file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    call: int
    code: str
    message_index: int | None
    block_index: int | None
    detail: str
    session: int = 0


class Finding(BaseModel):
    """One finding that persists over consecutive calls of one session: the same code at the same
    message and block with the same detail, in every request from ``first_call`` to
    ``last_call`` (``calls`` of them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_call: int
    last_call: int
    calls: int
    code: str
    message_index: int | None
    block_index: int | None
    detail: str


def group_findings(violations: Sequence[CallViolation]) -> tuple[Finding, ...]:
    """Per-call violations folded into :class:`Finding` runs, in order of first appearance. A run
    holds consecutive calls of one session; a finding that disappears and comes back, or that
    another session repeats, starts a new run."""
    runs: list[list[CallViolation]] = []
    open_runs: dict[tuple[int, str, int | None, int | None, str], int] = {}
    for v in violations:
        key = (v.session, v.code, v.message_index, v.block_index, v.detail)
        at = open_runs.get(key)
        if at is not None and runs[at][-1].call == v.call - 1:
            runs[at].append(v)
            continue
        open_runs[key] = len(runs)
        runs.append([v])
    return tuple(
        Finding(
            first_call=run[0].call,
            last_call=run[-1].call,
            calls=len(run),
            code=run[0].code,
            message_index=run[0].message_index,
            block_index=run[0].block_index,
            detail=run[0].detail,
        )
        for run in runs
    )


class FileReport(BaseModel):
    """What ``validate`` found in one file (``error`` set when the file could not be read)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    format: str | None = None
    calls: int = 0
    violations: tuple[CallViolation, ...] = ()
    skipped: tuple[SkippedRecord, ...] = ()
    error: str | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        """The violations folded over the consecutive calls that repeat them."""
        return group_findings(self.violations)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "calls": self.calls,
            "violations": [f.model_dump() for f in self.findings],
            "skipped": [{"line": s.line, "reason": s.reason} for s in self.skipped],
        }
        if self.error is not None:
            out["error"] = self.error
        return out


def check_file(
    path: Path, *, lenient: bool = False, rules: Rules | None = None, format: str | None = None
) -> FileReport:
    """Read ``path`` (with the ``format`` reader, else detected) and validate the request of every
    call in it."""
    from contextkit.formats import load  # noqa: PLC0415  (the package's own entry point)

    try:
        loaded = load(path, lenient=lenient, format=format)
    except ContextkitError as exc:
        return FileReport(path=str(path), error=str(exc))
    except Exception as exc:
        # A reader that trips over bad input with anything but a FormatError is a reader bug; the
        # user still gets the file named and no traceback, and the exit code says "unreadable".
        reason = f"{path}: cannot be read ({type(exc).__name__}: {exc})"
        return FileReport(path=str(path), error=reason)
    return FileReport(
        path=str(path),
        format=loaded.format,
        calls=sum(len(s.calls) for s in _sessions(loaded)),
        violations=tuple(_violations(loaded, rules)),
        skipped=loaded.skipped,
    )


def _sessions(loaded: LoadedFile) -> Iterator[Session]:
    """Every session of the file, subagents included, depth first."""
    for top in loaded.sessions:
        yield from top.all_sessions()


def _violations(loaded: LoadedFile, rules: Rules | None) -> Iterator[CallViolation]:
    """Violations per call; ``rules`` None: each session's own provider's rules."""
    calls = (
        (number, call, rules or rules_for_model(session.model_info, session.format))
        for number, session in enumerate(_sessions(loaded))
        for call in session.calls
    )
    for index, (number, call, call_rules) in enumerate(calls):
        for v in validate(call.request, provider=call_rules):
            yield CallViolation(call=index, session=number, **v.model_dump())


def exit_code(reports: Sequence[FileReport]) -> int:
    if any(r.error is not None for r in reports):
        return 2
    return 1 if any(r.violations for r in reports) else 0


__all__ = ["CallViolation", "FileReport", "Finding", "check_file", "exit_code", "group_findings"]
