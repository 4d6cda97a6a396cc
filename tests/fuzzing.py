"""The fuzz harness of ``tests/test_fuzz.py`` (a plain module, so a report run can import it)."""

from __future__ import annotations

import re
import signal
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.formats.swe_agent import MISSING_CALLS
from contextkit.session import LoadedFile, Session
from contextkit.testing.mutate import mutations, shrink

TIME_LIMIT_S = 10
_NO_LOSS_CHECK = frozenset({"truncate", "drop_line"})
"""Kinds that may remove whole records: fewer calls without a report is right for them."""


class Hang(Exception):
    """A case ran past :data:`TIME_LIMIT_S`."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expired(signum: int, frame: FrameType | None) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _calls(session: Session) -> int:
    return len(session.calls) + sum(_calls(s) for s in session.subagents)


def _set_aside(session: Session) -> Counter[str]:
    out = Counter(session.set_aside)
    for sub in session.subagents:
        out.update(_set_aside(sub))
    return out


@dataclass(frozen=True)
class Outcome:
    calls: int
    skipped: int
    set_aside: Counter[str]
    notes: tuple[str, ...]


def _outcome(loaded: LoadedFile) -> Outcome:
    aside: Counter[str] = Counter()
    for s in loaded.sessions:
        aside.update(_set_aside(s))
    return Outcome(
        calls=sum(_calls(s) for s in loaded.sessions),
        skipped=len(loaded.skipped),
        set_aside=aside,
        notes=tuple(n for s in loaded.sessions for n in s.notes),
    )


@dataclass
class Report:
    cases: int = 0
    reads: int = 0
    errors: int = 0
    errors_with_line: int = 0
    tracebacks: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    """Errors whose message does not name the file."""
    lost: list[str] = field(default_factory=list)
    """Lenient reads with fewer calls than the original and nothing skipped, set aside, or named
    missing by the file's own totals (a SWE-agent note: ``N call(s) the file does not hold``)."""
    caught: list[str] = field(default_factory=list)
    """Errors the load boundary made of a reader's stray exception (TypeError...): clean for the
    user, but a reader that did not check what it read."""
    kinds: Counter[str] = field(default_factory=Counter)
    without_line: Counter[str] = field(default_factory=Counter)
    """Errors naming no line, by reason (numbers as N)."""

    def summary(self) -> str:
        return (
            f"{self.cases} cases ({dict(sorted(self.kinds.items()))}): {self.reads} reads, "
            f"{self.errors} clean errors ({self.errors_with_line} naming a line), "
            f"{len(self.tracebacks)} tracebacks, {len(self.hangs)} hangs, {len(self.unnamed)} "
            f"errors not naming the file, {len(self.lost)} lenient reads losing calls "
            f"unreported; {len(self.caught)} errors caught at the load boundary; without a line: "
            f"{dict(self.without_line.most_common(8))}"
        )


def _try(path: Path, lenient: bool, report: Report, label: str) -> LoadedFile | None:
    try:
        with time_limit(TIME_LIMIT_S):
            loaded = load(path, lenient=lenient)
    except Hang:
        report.hangs.append(label)
    except ContextkitError as exc:
        report.errors += 1
        report.errors_with_line += getattr(exc, "line", None) is not None
        if str(path) not in str(exc):
            report.unnamed.append(f"{label}: {exc}")
        line = getattr(exc, "line", None)
        if line is None:
            reason = getattr(exc, "reason", str(exc))
            report.without_line[re.sub(r"\d+", "N", reason.split(" (tried:")[0])[:80]] += 1
        if line is None and ("cannot be read as" in str(exc) or "nested deeper than" in str(exc)):
            report.caught.append(f"{label}: {exc}"[:300])
    except Exception as exc:  # any other exception is what the fuzz looks for
        report.tracebacks.append(f"{label}: {type(exc).__name__}: {exc}"[:300])
    else:
        report.reads += 1
        return loaded
    return None


def fuzz_file(source: Path, *, seed: int, count: int, report: Report) -> None:
    """``count`` mutations of ``source`` (shrunk), each loaded strictly and leniently."""
    data = shrink(source.read_bytes(), records=15, items=6)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_bytes(data)
        try:
            base = _outcome(load(path, lenient=True))
        except ContextkitError:
            base = None  # the shrunk original does not read: nothing to compare calls with
        for index, (kind, mutated) in enumerate(mutations(data, seed=seed, count=count)):
            label = f"{source.name} seed={seed} case={index} {kind}"
            path.write_bytes(mutated)
            report.cases += 1
            report.kinds[kind] += 1
            _try(path, False, report, label + " strict")
            loaded = _try(path, True, report, label + " lenient")
            if loaded is None or base is None or kind in _NO_LOSS_CHECK:
                continue
            got = _outcome(loaded)
            said = f"{base.calls - got.calls} {MISSING_CALLS}"  # the file's own totals name it
            if (
                got.calls < base.calls
                and not got.skipped
                and got.set_aside == base.set_aside
                and not any(said in n for n in got.notes)
            ):
                report.lost.append(f"{label}: {got.calls} of {base.calls} calls")
