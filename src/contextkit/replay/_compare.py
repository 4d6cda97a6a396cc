"""Compare strategies across many recorded sessions: find the files, replay each session under each
strategy, in parallel over sessions.

Paths may be files or folders (a Claude Code projects folder, a corpus). In a folder, every file a
reader recognises is taken; subagent files are loaded through their parent session (they appear
as its subagents) unless the parent is missing; files no reader recognises are listed as skipped,
never silently dropped; a file that cannot be read (permissions), or an entry with a session
suffix that is not a regular file (a FIFO, a link that loops or points nowhere), is taken like a
named file, so each command reports its error as it reports any unreadable file. An explicitly
named file that cannot be read is an error.

Work is embarrassingly parallel per file: ``jobs > 1`` uses a process pool on this machine (beyond
one machine, run the same function under Dask or Ray; contextkit ships no scheduler of its own).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from contextkit.errors import ContextkitError, FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.peers import PEER_NAMES, peer
from contextkit.replay._as_recorded import replay_as_recorded
from contextkit.replay._oracle import BOUND_NOTE, ORACLE, Oracle, plan_oracle
from contextkit.replay._replay import AS_RECORDED, Replay, replay
from contextkit.replay._report import can_be_best
from contextkit.session import Session
from contextkit.strategies import PRESET_NAMES, strategy_from_spec

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
            if candidate.suffix not in SESSION_SUFFIXES or candidate.is_dir():
                continue
            if not candidate.is_file():  # a FIFO, socket or device; a link that loops or dangles
                files.append(candidate)  # read like a named file: its error is reported
                continue
            if _is_linked_subagent(candidate):
                continue
            try:
                detect(candidate)
            except UnknownFormatError as exc:
                skipped.append((str(candidate), str(exc)))
                continue
            except ContextkitError:
                pass  # unreadable: read like a named file, so its error is reported as one
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


def run_strategy(
    session: Session, spec: str, *, presets: Mapping[str, Replay] | None = None, **options: Any
) -> Replay:
    """Replay one session under a preset / file / inline spec, ``as-recorded``, ``oracle``
    (:func:`oracle_replay`; ``presets``: the presets' replays of this session with the same
    options, when already made, so the oracle does not replay them again) or a peer
    (:data:`~contextkit.peers.PEER_NAMES`: a new one per session)."""
    if spec == AS_RECORDED:
        return replay_as_recorded(session, **options)
    if spec == ORACLE:
        return oracle_replay(session, presets or {}, **options)
    if spec in PEER_NAMES:
        return replay(session, peer(spec), name=spec, **options)
    return replay(session, strategy_from_spec(spec), name=spec, **options)


def oracle_replay(session: Session, presets: Mapping[str, Replay], **options: Any) -> Replay:
    """The bound: the cheapest by cost + recovery (with nothing lost for good and no call over
    the window) among the hindsight eviction plan (:func:`plan_oracle`) and every preset's own
    edits on this session. No preset can beat it, by construction; what it bounds is that action
    space (which results to drop and when, when to slide or summarise, as those plans do), not
    every conceivable strategy. ``presets``: replays already made with the same options."""
    planning = {k: v for k, v in options.items() if k in ("counter", "price", "window")}
    plan = plan_oracle(session, **planning)
    candidates = {"hindsight eviction": replay(session, Oracle(plan), name=ORACLE, **options)}
    for name in PRESET_NAMES:
        made = presets.get(name)
        candidates[name] = made if made is not None else run_strategy(session, name, **options)
    scored = {name: r.summary() for name, r in candidates.items()}
    fit = [name for name, s in scored.items() if can_be_best(s)]
    chosen = min(fit, key=lambda n: scored[n]["cost_plus_recovery_usd"]) if fit else None
    chosen = chosen or "hindsight eviction"
    note = f"oracle: its best plan on this session is {chosen}"
    done = candidates[chosen]
    return replace(done, strategy=ORACLE, notes=(BOUND_NOTE, note, *done.notes))


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
            made: dict[str, Replay] = {}
            runs: dict[str, Replay] = {}
            for spec in sorted(specs, key=lambda s: s == ORACLE):  # the oracle reuses the others
                runs[spec] = run_strategy(session, spec, presets=made)
                if spec in PRESET_NAMES:
                    made[spec] = runs[spec]
            for spec in specs:
                result = runs[spec].to_json(rows=False)
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
    for spec in specs:  # fail early on a bad spec or a peer not installed, before any work
        if spec in PEER_NAMES:
            peer(spec)
        elif spec not in (AS_RECORDED, ORACLE):
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


__all__ = [
    "SESSION_SUFFIXES",
    "FileResult",
    "Found",
    "compare",
    "compare_file",
    "find_session_files",
    "run_strategy",
    "with_default_model",
]
