"""Fit the shipped token calibration on raw Anthropic API traces and Claude Code session files, and
write calibration.json.

Usage: ``uv run python scripts/fit_calibration.py [TRACE.jsonl ...] [--claude-code DIR ...]
[--out PATH] [--check] [--loso] [--before PATH]`` (default trace:
``$CONTEXTKIT_CORPUS/claude-trace-lemmy/test-traffic-part1.jsonl``; default Claude Code folder:
``$CONTEXTKIT_CORPUS``, every ``*.jsonl`` under it that reads as Claude Code; default output:
``src/contextkit/tokens/data/calibration.json``; ``--check`` prints the fit without writing it;
``--loso``
prints the leave-one-session-out error of per-call total input on the Claude Code sessions, beside
the error of ``--before`` (default: the shipped calibration); ``--losource`` holds out one source
(a top-level folder of the corpus: a repository or team) at a time, fits on the others, and prints
the per-call error on the held-out source by model family, a markdown table).

Each trace line is ``{"request": {"body": <Messages request>}, "response": {"body": <JSON with
usage>} | {"body_raw": <SSE text>}}``. The billed total input of a call is input_tokens +
cache_creation_input_tokens + cache_read_input_tokens. When ``contextkit.formats.claude_trace``
exists its reader is used; otherwise this script reads the trace itself (request bodies through
``parse_conversation``, usage from the JSON body or the SSE ``message_start``/``message_delta``
events).

Claude Code files hold no system prompt and no tools: their sessions calibrate through the growth
between consecutive calls (``contextkit.tokens.session_pairs`` says which pairs count).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from contextkit.errors import ContextkitError
from contextkit.formats import load
from contextkit.messages import parse_conversation
from contextkit.models import resolve_model
from contextkit.session import Call, Session, Usage
from contextkit.tokens import (
    Calibration,
    CalibrationSample,
    FamilyCalibration,
    SessionSamples,
    anchored_errors,
    base_counter,
    default_calibration,
    distinct,
    fit,
    load_calibration,
    relative_errors,
    sample_from_call,
    save_calibration,
    session_pairs,
    session_samples,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "contextkit" / "tokens" / "data" / "calibration.json"
DEFAULT_TRACE = Path("claude-trace-lemmy") / "test-traffic-part1.jsonl"


def _sse_usage(text: str) -> dict[str, Any]:
    """Usage of an SSE stream: ``message_start`` fields, overwritten by ``message_delta`` totals."""
    usage: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:])
        except json.JSONDecodeError:
            continue
        if event.get("type") == "message_start":
            usage.update(event.get("message", {}).get("usage") or {})
        elif event.get("type") == "message_delta":
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
    return usage


def _usage(response: Mapping[str, Any]) -> Usage | None:
    body = response.get("body")
    if isinstance(body, Mapping) and isinstance(body.get("usage"), Mapping):
        return Usage.from_anthropic(body["usage"])
    raw = response.get("body_raw")
    if isinstance(raw, str):
        usage = _sse_usage(raw)
        return Usage.from_anthropic(usage) if usage else None
    return None


def _call(record: Mapping[str, Any], line: int) -> Call | None:
    request = record.get("request") or {}
    body = request.get("body")
    if not isinstance(body, Mapping) or "messages" not in body:
        return None
    usage = _usage(record.get("response") or {})
    stamp = request.get("timestamp")
    when = datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, int | float) else None
    return Call(
        request=parse_conversation(dict(body)),
        usage=usage,
        model=body.get("model"),
        timestamp=when,
        exact=True,
        line=line,
    )


def calls_from_trace(path: Path) -> list[Call]:
    """Calls of a raw trace, through the format reader when it exists, else read here."""
    try:
        reader = importlib.import_module("contextkit.formats.claude_trace").READER
    except (ImportError, AttributeError):
        reader = None
    if reader is not None:
        loaded = reader.read(path, lenient=True)
        return [c for s in loaded.sessions for sub in s.all_sessions() for c in sub.calls]
    calls = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if raw.strip() and (call := _call(json.loads(raw), number)) is not None:
            calls.append(call)
    return calls


def samples_from_traces(paths: Sequence[Path]) -> list[CalibrationSample]:
    counter = base_counter()
    samples = []
    for path in paths:
        for call in calls_from_trace(path):
            sample = sample_from_call(call, counter, label=f"{path.name}:{call.line}")
            if sample is not None and sample.billed > 0:
                samples.append(sample)
    return samples


def _claude_code_files(folder: Path) -> Iterator[tuple[Path, Session]]:
    for path in sorted(folder.rglob("*.jsonl")):
        try:
            loaded = load(path, lenient=True)
        except (ContextkitError, OSError, ValueError):
            continue  # another format, or a file no reader takes: not calibration data
        if loaded.format == "claude-code":
            for top in loaded.sessions:
                for session in top.all_sessions():
                    yield path, session


def sessions_from_claude_code(folders: Sequence[Path]) -> list[SessionSamples]:
    """Every Claude Code session (subagents included) under ``folders`` with usage on every call;
    a session read twice (a subagent from its own file and from its parent's) is kept once."""
    counter = base_counter()
    seen: set[tuple[str | None, str | None, int]] = set()
    out: list[SessionSamples] = []
    for folder in folders:
        for path, session in _claude_code_files(folder):
            if not session.calls:
                continue
            key = (session.session_id, session.calls[0].request_id, len(session.calls))
            label = f"{_relative(path, folder)}#{(session.session_id or '')[:8]}:{len(out)}"
            record = session_samples(session, counter, label)
            if record is not None and key not in seen:
                seen.add(key)
                out.append(record)
    return out


def _relative(path: Path, folder: Path) -> str:
    return str(path.relative_to(folder)) if path.is_relative_to(folder) else path.name


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2%}"


def _family_line(name: str, params: FamilyCalibration, mine: Sequence[CalibrationSample]) -> str:
    think = "=factor" if params.thinking_factor is None else f"{params.thinking_factor:.3f}"
    line = (
        f"{name:16} factor={params.factor:.3f} thinking={think} "
        f"per_message={params.per_message:.2f} per_tool={params.per_tool:.2f} "
        f"per_tool_block={params.per_tool_block:.2f} fixed={params.fixed:.1f}"
    )
    if mine:
        errors = relative_errors(params, mine)
        line += (
            f"\n{'':16} exact requests: {len(mine)} |err| median={np.median(errors):.2%} "
            f"p90={np.percentile(errors, 90):.2%} max={errors.max():.2%}"
        )
    r = params.residuals
    if r is not None:
        line += f" loo_median={_pct(r.loo_median)}" if mine else ""
        if r.pairs or r.session_calls:
            line += (
                f"\n{'':16} session pairs used {r.pairs} (outliers dropped {r.pairs_dropped}); "
                f"in-sample per-call |err| of total input over {r.session_calls} calls: "
                f"median={_pct(r.session_median)} p90={_pct(r.session_p90)}"
            )
    return line + f"\n{'':16} ({params.note})"


def error_report(calibration: Calibration, samples: Sequence[CalibrationSample]) -> str:
    """Per-family parameters and error distributions of ``calibration`` on the exact ``samples``."""
    lines = []
    all_errors: list[float] = []
    for name, params in sorted(calibration.families.items()):
        mine = [s for s in samples if calibration.for_model(resolve_model(s.model)) is params]
        all_errors.extend(relative_errors(params, mine).tolist() if mine else [])
        lines.append(_family_line(name, params, mine))
    if all_errors:
        e = np.array(all_errors)
        lines.append(
            f"{'all exact':16} {len(e):3} calls  |err| median={np.median(e):.2%} "
            f"p90={np.percentile(e, 90):.2%} max={e.max():.2%}"
        )
    return "\n".join(lines)


def loso_errors(
    samples: Sequence[CalibrationSample], sessions: Sequence[SessionSamples]
) -> dict[str, np.ndarray]:
    """Per session: per-call errors of total input under a fit on everything but that session."""
    out = {}
    for i, held_out in enumerate(sessions):
        if len(held_out.samples) < 2 or not session_pairs(held_out)[0]:
            continue  # rejected or single-call sessions are not evaluated (nothing to predict)
        rest = [s for j, s in enumerate(sessions) if j != i]
        params = fit(samples, sessions=rest).for_model(resolve_model(held_out.samples[0].model))
        if params is not None:
            out[held_out.label] = anchored_errors(params, held_out)
    return out


def loso_report(
    before: Calibration, samples: Sequence[CalibrationSample], sessions: Sequence[SessionSamples]
) -> str:
    """Held-out per-call error of total input by family: ``before`` beside leave-one-session-out."""
    after = loso_errors(samples, sessions)
    rows = ["family       sessions calls | before median   p90 | LOSO after median   p90"]
    families = sorted({r.family or "?" for r in sessions if r.label in after})
    for family in families:
        mine = [r for r in sessions if r.label in after and r.family == family]
        params = before.for_model(resolve_model(mine[0].samples[0].model))
        assert params is not None
        old = np.concatenate([anchored_errors(params, r) for r in mine])
        new = np.concatenate([after[r.label] for r in mine])
        rows.append(
            f"{family:12} {len(mine):8} {new.size:5} | {np.median(old):13.2%} "
            f"{np.percentile(old, 90):5.2%} | {np.median(new):17.2%} {np.percentile(new, 90):5.2%}"
        )
    for r in sessions:
        if r.label in after:
            old_params = before.for_model(resolve_model(r.samples[0].model))
            assert old_params is not None
            old_e = anchored_errors(old_params, r)
            rows.append(
                f"  {r.label[:60]:60} {old_e.size:4} calls  before {np.median(old_e):6.2%}  "
                f"after {np.median(after[r.label]):6.2%}"
            )
    return "\n".join(rows)


def _source(label: str) -> str:
    """The corpus source of a sample or session label: its first path component."""
    return label.split("/", 1)[0].split("#", 1)[0]


def losource_errors(
    samples: Sequence[CalibrationSample], sessions: Sequence[SessionSamples], trace_source: str
) -> dict[str, dict[str, list[float]]]:
    """Leave-one-source-out: per held-out source and family, the per-call errors of total input
    under a fit on every other source (sessions: anchored as the accountant predicts; the raw
    trace's exact requests: relative errors)."""
    sources = sorted({_source(r.label) for r in sessions} | {trace_source})
    out: dict[str, dict[str, list[float]]] = {}
    for held in sources:
        rest = [r for r in sessions if _source(r.label) != held]
        calibration = fit(samples if held != trace_source else [], sessions=rest)
        found: dict[str, list[float]] = {}
        for record in (r for r in sessions if _source(r.label) == held):
            if len(record.samples) < 2 or not session_pairs(record)[0]:
                continue
            params = calibration.for_model(resolve_model(record.samples[0].model))
            if params is not None:
                errors = np.abs(anchored_errors(params, record)).tolist()
                found.setdefault(record.family or "?", []).extend(errors)
        if held == trace_source:
            for sample in distinct(samples):
                params = calibration.for_model(resolve_model(sample.model))
                if params is not None and sample.family is not None:
                    error = abs(float(relative_errors(params, [sample])[0]))
                    found.setdefault(sample.family, []).append(error)
        if found:
            out[held] = found
    return out


def losource_report(errors: Mapping[str, Mapping[str, list[float]]]) -> str:
    rows = [
        "| held-out source | family | calls | median abs error | p90 |",
        "|---|---|---|---|---|",
    ]
    pooled: dict[str, list[float]] = {}
    for source, families in sorted(errors.items()):
        for family, values in sorted(families.items()):
            pooled.setdefault(family, []).extend(values)
            rows.append(
                f"| {source} | {family} | {len(values)} | {np.median(values):.2%} "
                f"| {np.percentile(values, 90):.2%} |"
            )
    for family, values in sorted(pooled.items()):
        rows.append(
            f"| all sources | {family} | {len(values)} | {np.median(values):.2%} "
            f"| {np.percentile(values, 90):.2%} |"
        )
    return "\n".join(rows)


def skipped_report(sessions: Sequence[SessionSamples]) -> str:
    reasons: Counter[str] = Counter()
    used = 0
    for record in sessions:
        pairs, skipped = session_pairs(record)
        used += len(pairs)
        reasons.update(skipped)
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
    listed = why or "none skipped"
    return f"claude-code: {len(sessions)} sessions, {used} consecutive pairs usable ({listed})"


def _inputs(
    args: argparse.Namespace, parser: argparse.ArgumentParser
) -> tuple[list[Path], list[Path]]:
    corpus = os.environ.get("CONTEXTKIT_CORPUS")
    traces, folders = list(args.traces), list(args.claude_code or [])
    if (not traces or not folders) and not corpus:
        parser.error("give traces and --claude-code folders, or set CONTEXTKIT_CORPUS")
    if corpus and not traces:
        traces = [Path(corpus) / DEFAULT_TRACE]
    if corpus and args.claude_code is None:
        folders = [Path(corpus)]
    return traces, folders


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--claude-code", nargs="*", type=Path, metavar="DIR")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="print the fit, do not write it")
    parser.add_argument("--loso", action="store_true", help="leave-one-session-out report")
    parser.add_argument("--before", type=Path, help="calibration to compare with (--loso)")
    parser.add_argument(
        "--losource", action="store_true", help="leave-one-source-out report (a markdown table)"
    )
    args = parser.parse_args(argv)
    traces, folders = _inputs(args, parser)
    samples = samples_from_traces(traces)
    sessions = sessions_from_claude_code(folders)
    if not samples and not any(session_pairs(r)[0] for r in sessions):
        parser.error("no call with an exact request and billed usage, and no usable session")
    data = [f"{p.name}: {sum(s.label.startswith(p.name) for s in samples)} calls" for p in traces]
    data.append(skipped_report(sessions))
    calibration = fit(samples, data=data, created=date.today(), sessions=sessions)
    print(f"{len(distinct(samples))} distinct exact requests (of {len(samples)}); {data[-1]}")
    print(error_report(calibration, distinct(samples)))
    before = load_calibration(args.before) if args.before else default_calibration()
    if args.loso:
        print("\nper-call |error| of total input on Claude Code sessions (held out):")
        print(loso_report(before, samples, sessions))
    if args.losource:
        trace_source = traces[0].parent.name if traces else "traces"
        print("\nper-call |error| of total input, each source held out (fit on the others):")
        print(losource_report(losource_errors(samples, sessions, trace_source)))
        return 0
    if args.check:
        print("\nshipped defaults (or --before) on the same exact requests:")
        print(error_report(before, distinct(samples)))
        return 0
    save_calibration(calibration, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
