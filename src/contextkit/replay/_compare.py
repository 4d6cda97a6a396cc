"""Compare strategies across many recorded sessions: find the files, replay each session under each
strategy, in parallel over sessions.

Paths may be files or folders (a Claude Code projects folder, a corpus). In a folder, every file a
reader recognises is taken; subagent files are loaded through their parent session (they appear
as its subagents) unless the parent is missing; files no reader recognises are listed as skipped,
never silently dropped. An explicitly named file that cannot be read is an error.

Work is embarrassingly parallel per file: ``jobs > 1`` uses a process pool on this machine (beyond
one machine, run the same function under Dask or Ray; contextkit ships no scheduler of its own).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextkit.errors import ContextkitError, FormatError
from contextkit.formats import detect, load
from contextkit.replay._replay import AS_RECORDED, Replay, replay, replay_as_recorded
from contextkit.session import Session
from contextkit.strategies.config import strategy_from_spec

SESSION_SUFFIXES = (".jsonl", ".json", ".traj", ".md")


@dataclass(frozen=True)
class Found:
    files: tuple[Path, ...]
    skipped: tuple[tuple[str, str], ...]
    """(path, reason) for files in folders that no reader takes."""


def _is_linked_subagent(path: Path) -> bool:
    """A ``<session>/subagents/agent-*.jsonl`` whose parent session file exists beside it."""
    if path.parent.name != "subagents":
        return False
    owner = path.parent.parent
    return owner.with_suffix(".jsonl").is_file()


def find_session_files(paths: Sequence[str | Path]) -> Found:
    files: list[Path] = []
    skipped: list[tuple[str, str]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FormatError(path, "no such file or folder")
        if path.is_file():
            files.append(path)
            continue
        for candidate in sorted(path.rglob("*")):
            if not candidate.is_file() or candidate.suffix not in SESSION_SUFFIXES:
                continue
            if _is_linked_subagent(candidate):
                continue
            try:
                detect(candidate)
            except ContextkitError as exc:
                skipped.append((str(candidate), str(exc)))
                continue
            files.append(candidate)
    return Found(tuple(files), tuple(skipped))


def with_default_model(session: Session, model: str | None) -> Session:
    """The session with ``model`` filled in for calls whose file names none (tau-bench results,
    some SWE-agent trajectories): then they can be counted and priced. Named models stay."""
    if model is None or all(c.model or c.request.model for c in session.calls):
        return session
    calls = tuple(
        c if (c.model or c.request.model) else c.model_copy(update={"model": model})
        for c in session.calls
    )
    return session.model_copy(update={"calls": calls})


def run_strategy(session: Session, spec: str, **options: Any) -> Replay:
    """Replay one session under a preset / file / inline spec, or ``as-recorded``."""
    if spec == AS_RECORDED:
        return replay_as_recorded(session, **options)
    return replay(session, strategy_from_spec(spec), name=spec, **options)


@dataclass(frozen=True)
class FileResult:
    path: str
    format: str | None
    results: tuple[dict[str, Any], ...]
    """One replay summary (``Replay.to_json(rows=False)``) per session and strategy."""
    error: str | None = None
    skipped: tuple[tuple[int | None, str], ...] = ()
    """(line, reason) of each record a lenient read skipped."""


def compare_file(
    path: str, specs: Sequence[str], lenient: bool = False, model: str | None = None
) -> FileResult:
    """Every session of one file (subagents included) under every strategy (``model``: for calls
    whose file names none)."""
    try:
        loaded = load(path, lenient=lenient)
    except ContextkitError as exc:
        return FileResult(path=path, format=None, results=(), error=str(exc))
    out: list[dict[str, Any]] = []
    for top in loaded.sessions:
        for found in top.all_sessions():
            if not found.calls:
                continue
            session = with_default_model(found, model)
            for spec in specs:
                result = run_strategy(session, spec).to_json(rows=False)
                result["format"] = loaded.format
                result["session_id"] = session.session_id
                out.append(result)
    return FileResult(
        path=path,
        format=loaded.format,
        results=tuple(out),
        skipped=tuple((r.line, r.reason) for r in loaded.skipped),
    )


def compare(
    files: Sequence[Path],
    specs: Sequence[str],
    *,
    jobs: int = 1,
    lenient: bool = False,
    model: str | None = None,
    on_done: Callable[[FileResult], None] | None = None,
) -> list[FileResult]:
    """:func:`compare_file` over ``files``, in ``jobs`` processes; results in file order."""
    for spec in specs:  # fail early on a bad spec, before any work
        if spec != AS_RECORDED:
            strategy_from_spec(spec)
    results: list[FileResult] = []
    for result in _map(files, specs, jobs, lenient, model):
        results.append(result)
        if on_done is not None:
            on_done(result)
    return results


def _map(
    files: Sequence[Path], specs: Sequence[str], jobs: int, lenient: bool, model: str | None
) -> Iterator[FileResult]:
    names = [str(f) for f in files]
    if jobs <= 1 or len(names) <= 1:
        yield from (compare_file(n, specs, lenient, model) for n in names)
        return
    n = len(names)
    # Workers show warnings as this process does (the command line prints them as text; a
    # worker started by spawn or forkserver would otherwise use Python's default display).
    display = (warnings.showwarning,)
    with ProcessPoolExecutor(
        max_workers=jobs, initializer=_show_warnings_by, initargs=display
    ) as pool:
        yield from pool.map(compare_file, names, [tuple(specs)] * n, [lenient] * n, [model] * n)


def _show_warnings_by(show: Callable[..., None]) -> None:
    warnings.showwarning = show


def _cell(summary: dict[str, Any]) -> str:
    cost = summary["cost_usd"]
    text = "unknown" if cost is None else f"${cost:,.4f}"
    text += f" / {summary['recall']:.2f}"
    return text + (f" ({summary['overflow_calls']} over)" if summary["overflow_calls"] else "")


MIN_RECALL = 0.9
"""The recall a strategy must keep to count as a saving in :func:`best_saving`."""
TARGET_SAVING = 0.30
"""The saving against the recorded bill that :func:`best_saving` explains when it is missed."""


def _qualified(row: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        name: s
        for name, s in row.items()
        if name != AS_RECORDED
        and s["cost_usd"] is not None
        and s["recall"] >= MIN_RECALL
        and s["overflow_calls"] == 0
    }


def best_strategy(row: dict[str, dict[str, Any]]) -> str | None:
    """The cheapest strategy of ``row`` (summaries by strategy name) with recall >= 0.9 and no
    call over the window (``as-recorded`` is the bill, not a strategy); None when none
    qualifies."""
    fit = _qualified(row)
    return min(fit, key=lambda n: fit[n]["cost_usd"]) if fit else None


def best_saving(row: dict[str, dict[str, Any]], calls: int) -> str:
    """The cheapest strategy with recall >= 0.9 and no overflowing call, against ``as-recorded``;
    below a 30% saving, why (nothing acted, or what acting saved against ``none``)."""
    base = row.get(AS_RECORDED, {}).get("cost_usd")
    fit = _qualified(row)
    if not base:
        return "no bill (usage or price unknown)"
    if not fit:
        return f"no strategy kept recall >= {MIN_RECALL} in the window"
    name = min(fit, key=lambda n: fit[n]["cost_usd"])
    saving = 1 - fit[name]["cost_usd"] / base
    text = f"{name} {-saving:+.0%}"  # -35%: that much cheaper than the recorded bill
    if saving >= TARGET_SAVING:
        return text
    acted = [s for n, s in row.items() if n != AS_RECORDED and s["compactions"]]
    if calls < 2:
        return f"{text}: one call, nothing to compact"
    if not acted:
        peak = max(s["peak_context_tokens"] for n, s in row.items() if n != AS_RECORDED)
        return f"{text}: no strategy acted (peak context {peak:,} tokens)"
    if not any(n != AS_RECORDED and n in fit for n, s in row.items() if s["compactions"]):
        return f"{text}: only strategies below recall {MIN_RECALL} or over the window acted"
    none = row.get("none", {}).get("cost_usd")
    versus = f", {1 - fit[name]['cost_usd'] / none:.0%} vs none" if none else ""
    return f"{text}{versus}"


def markdown_table(results: Sequence[dict[str, Any]], root: str | Path | None = None) -> str:
    """One row per session, one column per strategy: ``$cost / recall`` (and overflowing calls),
    and (when ``as-recorded`` is among them) the best saving against it (:func:`best_saving`).

    ``results`` are :func:`compare_file` summaries; paths are shown relative to ``root``."""
    strategies = list(dict.fromkeys(r["strategy"] for r in results))
    rows: dict[tuple[str, str | None], dict[str, Any]] = {}
    calls: dict[tuple[str, str | None], int] = {}
    for r in results:
        path = str(Path(r["path"]).relative_to(root)) if root else r["path"]
        key = (path, r.get("session_id"))
        rows.setdefault(key, {})[r["strategy"]] = r["summary"]
        calls[key] = r["calls"]
    verdict = AS_RECORDED in strategies and len(strategies) > 1
    head = ["session", "calls", *strategies, *(["best vs as-recorded"] if verdict else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (path, session_id), row in rows.items():
        name = path if session_id is None else f"{path} `{session_id[:8]}`"
        cells = [_cell(row[s]) if s in row else "" for s in strategies]
        if verdict:
            cells.append(best_saving(row, calls[(path, session_id)]))
        lines.append("| " + " | ".join([name, str(calls[(path, session_id)]), *cells]) + " |")
    return "\n".join(lines) + "\n"


__all__ = [
    "SESSION_SUFFIXES",
    "FileResult",
    "Found",
    "best_saving",
    "best_strategy",
    "compare",
    "compare_file",
    "find_session_files",
    "markdown_table",
    "run_strategy",
    "with_default_model",
]
