"""What the report shows, gathered from recorded sessions with the library's own functions.

Contract: :func:`build_report` reads every file (:func:`contextkit.formats.load`), and for every
session with model calls (subagents included) prices it
(:func:`contextkit.accounting.price_session`), runs the cache doctor
(:func:`contextkit.accounting.diagnose_cache`) and finds its heaviest tool results. A file that
fails to load is kept as a :class:`Failure` with the reader's message, never raised. The what-ifs
are :mod:`contextkit.estimate`'s (one ticket per top-level session, its subagents priced into
it); strategies are compared with :func:`contextkit.replay.compare` only when asked (slow on a
big folder). Everything is a frozen value: :func:`contextkit.report.render_html` renders it.

Figures per session: cost and tokens per call are the recorded bill where every call of the session
recorded usage and the model's price is known (``basis="recorded"``), else the simulation
(``basis="simulated"``); each session says which. Hit rate and write amplification come from the
doctor on recorded usage, else from the simulated ledger.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from contextkit.accounting import (
    CacheDiagnosis,
    Ledger,
    TokenTable,
    diagnose_cache,
    heaviest_tool_results,
    price_session,
    session_counter,
)
from contextkit.errors import ContextkitError
from contextkit.estimate import (
    Change,
    CostReport,
    Ticket,
    WhatIf,
    WhatIfs,
    price_tickets,
    recording_changes,
)
from contextkit.formats import load
from contextkit.messages import ToolResultBlock
from contextkit.replay import AS_RECORDED, compare
from contextkit.session import Session
from contextkit.strategies import PRESETS

Basis = Literal["recorded", "simulated"]
DEFAULT_WHAT_IFS = WhatIfs(add_tools=10, system_tokens=2000, cache="off")
"""The what-ifs a report shows unless told otherwise (``--what-if-model`` adds a model)."""
EXTRA_CACHE = "1h"
"""A second cache what-if beside :data:`DEFAULT_WHAT_IFS`'s: the 1-hour TTL."""
DEFAULT_STRATEGIES = (AS_RECORDED, *PRESETS)
PREVIEW_CHARS = 240
HEAVIEST = 5


@dataclass(frozen=True)
class HeavyResult:
    """One large tool result: its size, how many requests carried it, what carrying it cost."""

    session: str
    tool: str | None
    tokens: int
    first_call: int
    carried_by: int
    cost_usd: float | None
    preview: str
    """The result's first characters, as recorded (the page escapes them)."""


@dataclass(frozen=True)
class SessionFacts:
    name: str
    """The file relative to the folder it was found in, with the session id for subagents."""
    path: str
    session_id: str | None
    project: str
    model: str | None
    format: str
    calls: int
    basis: Basis
    cost_usd: float | None
    """The recorded bill (basis recorded) or the simulated cost; None when the price is unknown."""
    simulated_usd: float | None
    recorded_usd: float | None
    call_usd: tuple[float, ...]
    """Per call, on ``basis`` (NaN where unknown)."""
    times: tuple[datetime | None, ...]
    read: tuple[int, ...]
    write: tuple[int, ...]
    uncached: tuple[int, ...]
    compactions: tuple[int, ...]
    window: int | None
    unique_tokens: int
    """Tokens of content no earlier call sent (the doctor's count, else the simulation's)."""
    hit_rate: float | None
    write_amplification: float | None
    cache_basis: Basis
    diagnosis: CacheDiagnosis | None
    heaviest: tuple[HeavyResult, ...]
    notes: tuple[str, ...] = ()

    @property
    def peak_context(self) -> int:
        totals = [r + w + u for r, w, u in zip(self.read, self.write, self.uncached, strict=True)]
        return max(totals, default=0)


@dataclass(frozen=True)
class Failure:
    path: str
    error: str


@dataclass(frozen=True)
class ReportData:
    """Everything one report shows."""

    title: str
    inputs: tuple[str, ...]
    sessions: tuple[SessionFacts, ...]
    failures: tuple[Failure, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    """(path, reason) of folder files no reader recognises."""
    skipped_records: tuple[Failure, ...] = ()
    """Records a read file's reader skipped (``file:line``, why): the rest of the file is in."""
    what_ifs: dict[str, Any] | None = None
    """:meth:`contextkit.estimate.CostReport.to_json` of the sessions and the what-ifs."""
    strategies: tuple[dict[str, Any], ...] | None = None
    """One :func:`contextkit.replay.compare_file` summary per session and strategy (None: not
    asked for)."""
    warnings: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    generated: str = field(
        default_factory=lambda: datetime.now().astimezone().isoformat("T", "seconds")
    )


def project_of(path: Path, roots: Sequence[Path]) -> str:
    """The folder a session belongs to: the first folder below the deepest root that holds the
    file (a Claude Code project folder, a corpus source), or the root itself when the file lies
    directly in it; else the folder the file is in. A ``<session>/subagents/`` file belongs where
    its session file does."""
    folder = path.resolve().parent
    if folder.name == "subagents":
        folder = folder.parent.parent
    for root in sorted((r.resolve() for r in roots), key=lambda r: -len(r.parts)):
        if folder == root:
            return root.name or "."
        if root in folder.parents:
            return folder.relative_to(root).parts[0]
    return folder.name or "."


def _display(path: Path, roots: Sequence[Path]) -> str:
    for root in roots:
        try:
            rel = path.resolve().relative_to(root.resolve())
        except ValueError:
            continue
        if rel.parts:
            return rel.as_posix()
    return path.name


def _table(ledger: Ledger) -> tuple[TokenTable, Basis]:
    rec = ledger.recorded
    if rec is not None and rec.total_cost is not None:
        return rec, "recorded"
    return ledger.simulated, "simulated"


def _previews(session: Session, ids: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for call in session.calls:
        for message in call.request.messages:
            if isinstance(message.content, str):
                continue
            for block in message.content:
                if isinstance(block, ToolResultBlock) and block.tool_use_id in ids:
                    out.setdefault(block.tool_use_id, block.text[:PREVIEW_CHARS])
        if len(out) == len(ids):
            break
    return out


def _cache_figures(
    ledger: Ledger, diagnosis: CacheDiagnosis | None
) -> tuple[float | None, float | None, Basis]:
    if diagnosis is not None and diagnosis.total_input:
        return diagnosis.hit_rate, diagnosis.write_amplification, "recorded"
    sim = ledger.simulated
    total = int(sim.total_input.sum())
    written = int(sim.cache_write_5m.sum() + sim.cache_write_1h.sum())
    unique = int(ledger.new_tokens.sum())
    hit = int(sim.cache_read.sum()) / total if total else None
    return hit, (written / unique if unique else None), "simulated"


def _money(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def session_facts(session: Session, name: str, project: str) -> SessionFacts:
    """One session priced, diagnosed and its heaviest tool results found."""
    counter = session_counter(session)
    ledger = price_session(session, counter)
    diagnosis = diagnose_cache(session, counter)
    table, basis = _table(ledger)
    heavy = heaviest_tool_results(session, ledger, counter, top=HEAVIEST)
    previews = _previews(session, {h.tool_use_id for h in heavy})
    hit, amp, cache_basis = _cache_figures(ledger, diagnosis)
    return SessionFacts(
        name=name,
        path=session.path,
        session_id=session.session_id,
        project=project,
        model=session.model,
        format=session.format,
        calls=ledger.calls,
        basis=basis,
        cost_usd=table.total_cost,
        simulated_usd=ledger.simulated.total_cost,
        recorded_usd=ledger.recorded.total_cost if ledger.recorded is not None else None,
        call_usd=tuple(float(x) for x in table.cost_usd),
        times=tuple(c.timestamp for c in session.calls),
        read=tuple(int(x) for x in table.cache_read),
        write=tuple(int(x) for x in table.cache_write_5m + table.cache_write_1h),
        uncached=tuple(int(x) for x in table.input),
        compactions=session.compactions,
        window=session.model_info.context_window,
        unique_tokens=diagnosis.unique_tokens if diagnosis else int(ledger.new_tokens.sum()),
        hit_rate=hit,
        write_amplification=amp,
        cache_basis=cache_basis,
        diagnosis=diagnosis,
        heaviest=tuple(
            HeavyResult(
                session=name,
                tool=h.tool,
                tokens=h.tokens,
                first_call=h.first_call,
                carried_by=h.carried_by,
                cost_usd=_money(h.cost_usd),
                preview=previews.get(h.tool_use_id, ""),
            )
            for h in heavy
        ),
        notes=ledger.notes,
    )


def _what_ifs(tickets: Sequence[Ticket], what: WhatIfs) -> dict[str, Any] | None:
    """The estimate's cost per ticket and each what-if, as ``contextkit cost --json`` has them."""
    if not tickets:
        return None
    baseline, recorded = price_tickets(tickets, Change())
    changes = recording_changes(what, tickets)
    if what.cache != EXTRA_CACHE:
        changes.append(Change(f"cache {EXTRA_CACHE}", cache=EXTRA_CACHE))
    rows = tuple(WhatIf(c.label, price_tickets(tickets, c)[0]) for c in changes)
    models = [s.model for t in tickets for s in t.sessions if s.model]
    report = CostReport(
        source="recordings",
        model=max(set(models), key=models.count) if models else None,
        baseline=baseline,
        names=tuple(t.name for t in tickets),
        what_ifs=rows,
        recorded=recorded,
    )
    return report.to_json()


def _strategies(
    files: Sequence[Path], specs: Sequence[str], jobs: int, lenient: bool
) -> tuple[tuple[dict[str, Any], ...], list[Failure]]:
    results: list[dict[str, Any]] = []
    failures: list[Failure] = []
    for found in compare(files, specs, jobs=jobs, lenient=lenient):
        if found.error is not None:
            failures.append(Failure(found.path, f"strategies: {found.error}"))
        results.extend(found.results)
    return tuple(results), failures


@dataclass
class _Reading:
    sessions: list[SessionFacts] = field(default_factory=list)
    tickets: list[Ticket] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    skipped_records: list[Failure] = field(default_factory=list)
    loaded: list[Path] = field(default_factory=list)


def _read(files: Sequence[Path], roots: Sequence[Path], lenient: bool, fmt: str | None) -> _Reading:
    out = _Reading()
    for path in files:
        try:
            loaded = load(path, lenient=lenient, format=fmt)
        except ContextkitError as exc:
            out.failures.append(Failure(str(path), str(exc)))
            continue
        out.loaded.append(path)
        out.skipped_records.extend(
            Failure(f"{s.path}:{s.line}", f"record skipped: {s.reason}") for s in loaded.skipped
        )
        base, project = _display(path, roots), project_of(path, roots)
        for top in loaded.sessions:
            found = [s for s in top.all_sessions() if s.calls]
            for s in found:
                many = len(loaded.sessions) > 1 or s is not top
                sid = f" #{_short_id(s.session_id)}" if many and s.session_id else ""
                out.sessions.append(session_facts(s, base + sid, project))
            if found:
                out.tickets.append(Ticket(base, tuple(found)))
    return out


def build_report(
    files: Sequence[Path],
    *,
    roots: Sequence[Path] = (),
    skipped: Sequence[tuple[str, str]] = (),
    what_ifs: WhatIfs = DEFAULT_WHAT_IFS,
    strategies: Sequence[str] | None = None,
    jobs: int = 1,
    lenient: bool = False,
    format: str | None = None,
    title: str | None = None,
) -> ReportData:
    """The report of ``files`` (folders already expanded; ``roots``: the folders they were found
    in, for names and projects). ``strategies``: the specs to compare (None: no comparison)."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reading = _read(files, roots, lenient, format)
        whatif = _what_ifs(reading.tickets, what_ifs)
        compared = None
        if strategies is not None and reading.loaded:
            compared, failed = _strategies(reading.loaded, strategies, jobs, lenient)
            reading.failures.extend(failed)
    inputs = tuple(str(r) for r in roots) or tuple(str(f) for f in files)
    return ReportData(
        title=title or "contextkit report: " + ", ".join(inputs),
        inputs=inputs,
        sessions=tuple(sorted(reading.sessions, key=_cost_key)),
        failures=tuple(reading.failures),
        skipped_records=tuple(reading.skipped_records),
        skipped=tuple(skipped),
        what_ifs=whatif,
        strategies=compared,
        warnings=tuple(dict.fromkeys(str(w.message) for w in caught)),
        elapsed_s=time.perf_counter() - start,
    )


def _short_id(session_id: str) -> str:
    """A uuid's first eight characters; other ids (a date, a name) whole, up to 24."""
    hexish = all(c in "0123456789abcdef-" for c in session_id.lower())
    return session_id[:8] if hexish and len(session_id) > 12 else session_id[:24]


def _cost_key(s: SessionFacts) -> tuple[float, str]:
    return (-(s.cost_usd or 0.0), s.name)


def total(values: Sequence[float | None]) -> float:
    """The sum of the known values."""
    return float(np.nansum([math.nan if v is None else v for v in values]))


__all__ = [
    "DEFAULT_STRATEGIES",
    "DEFAULT_WHAT_IFS",
    "Failure",
    "HeavyResult",
    "ReportData",
    "SessionFacts",
    "build_report",
    "project_of",
    "session_facts",
    "total",
]
