"""Fit the shipped token calibration on raw Anthropic API traces and write calibration.json.

Usage: ``uv run python scripts/fit_calibration.py [TRACE.jsonl ...] [--out PATH] [--check]``
(default trace: ``$CONTEXTKIT_CORPUS/claude-trace-lemmy/test-traffic-part1.jsonl``; default output:
``src/contextkit/data/calibration.json``; ``--check`` prints the fit without writing it).

Each trace line is ``{"request": {"body": <Messages request>}, "response": {"body": <JSON with
usage>} | {"body_raw": <SSE text>}}``. The billed total input of a call is input_tokens +
cache_creation_input_tokens + cache_read_input_tokens. When ``contextkit.formats.claude_trace``
exists its reader is used; otherwise this script reads the trace itself (request bodies through
``parse_conversation``, usage from the JSON body or the SSE ``message_start``/``message_delta``
events).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np

from contextkit.calibration import (
    Calibration,
    CalibrationSample,
    base_counter,
    default_calibration,
    distinct,
    fit,
    relative_errors,
    sample_from_call,
    save_calibration,
)
from contextkit.messages import parse_conversation
from contextkit.session import Call, Usage

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "src" / "contextkit" / "data" / "calibration.json"
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


def error_report(calibration: Calibration, samples: Sequence[CalibrationSample]) -> str:
    """Per-family and overall error distribution of ``calibration`` on ``samples``."""
    lines = []
    all_errors: list[float] = []
    for name, params in sorted(calibration.families.items()):
        mine = [s for s in samples if calibration.for_model(s.model) is params]
        if not mine:
            lines.append(f"{name:16} no calls   factor={params.factor:.3f} ({params.note})")
            continue
        errors = relative_errors(params, mine)
        all_errors.extend(errors.tolist())
        loo = params.residuals.loo_median if params.residuals else None
        lines.append(
            f"{name:16} {len(mine):3} calls  factor={params.factor:.3f} "
            f"per_message={params.per_message:.2f} per_tool={params.per_tool:.2f} "
            f"fixed={params.fixed:.1f}  |err| median={np.median(errors):.2%} "
            f"p90={np.percentile(errors, 90):.2%} max={errors.max():.2%} "
            f"loo_median={'n/a' if loo is None else f'{loo:.2%}'}"
        )
    if all_errors:
        e = np.array(all_errors)
        lines.append(
            f"{'all':16} {len(e):3} calls  |err| median={np.median(e):.2%} "
            f"p90={np.percentile(e, 90):.2%} max={e.max():.2%}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="print the fit, do not write it")
    args = parser.parse_args(argv)
    traces = list(args.traces)
    if not traces:
        corpus = os.environ.get("CONTEXTKIT_CORPUS")
        if not corpus:
            parser.error("no trace given and CONTEXTKIT_CORPUS is not set")
        traces = [Path(corpus) / DEFAULT_TRACE]
    samples = samples_from_traces(traces)
    if not samples:
        parser.error("no call with an exact request and billed usage in the traces")
    data = [f"{p.name}: {sum(s.label.startswith(p.name) for s in samples)} calls" for p in traces]
    calibration = fit(samples, data=data, created=date.today())
    print(f"all {len(samples)} calls:")
    print(error_report(calibration, samples))
    print(f"\n{len(distinct(samples))} distinct requests (repeats counted once):")
    print(error_report(calibration, distinct(samples)))
    if args.check:
        print("\nshipped defaults on the same calls:")
        print(error_report(default_calibration(), samples))
        return 0
    save_calibration(calibration, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
