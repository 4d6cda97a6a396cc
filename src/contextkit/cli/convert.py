"""``contextkit convert FILE --to FORM [-o OUT] [--lenient]``: FORM is anthropic, openai-chat,
openai-responses or atif.

Loads any supported file (format detected), converts the request of every call with
:func:`contextkit.formats.convert.convert_file`, and writes JSONL: one request body per line, one
line per
call, in call order (subagent sessions after their parent). Output goes to ``OUT`` or stdout.
What the target form cannot carry is reported on stderr, grouped by warning code with a count and
the first place it happened; records a lenient read skipped are listed there too. Bad input exits
with code 2 and a message naming file and line.

``--to atif`` writes each session as one ATIF document (Harbor's Agent Trajectory Interchange
Format, with each call's recorded cost in ``metrics.cost_usd``): to ``OUT``, its subagents beside
it as ``OUT-STEM.subN.json`` (referenced from the parent); a file of several sessions as
``OUT-STEM-K.json``. Stdout takes a file of one session without subagents.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from contextkit.cli._app import app, err_console
from contextkit.errors import ContextkitError

if TYPE_CHECKING:
    from contextkit.session import Session
    from contextkit.wire import ConversionWarning, Target


class TargetName(StrEnum):
    anthropic = "anthropic"
    openai_chat = "openai-chat"
    openai_responses = "openai-responses"
    atif = "atif"


class OutputError(ContextkitError):
    """The output file cannot be written."""


@app.command("convert")
def convert_command(
    file: Annotated[
        Path, typer.Argument(help="A session or request file of any supported format.")
    ],
    to: Annotated[TargetName, typer.Option("--to", help="The request form to write.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    lenient: Annotated[
        bool, typer.Option("--lenient", help="Skip bad records (listed on stderr).")
    ] = False,
) -> None:
    """Convert every call's request to another API's form (one JSON body per line), or a whole
    session to ATIF (one JSON document)."""
    if to is TargetName.atif:
        _convert_to_atif(file, output, lenient)
        return
    from contextkit.formats.convert import convert_file  # noqa: PLC0415  (loads the readers)

    converted = convert_file(file, cast("Target", to.value), lenient=lenient)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in converted.requests)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"{output}: cannot write: {exc.strerror or exc}") from None
    for line in converted.skipped:
        err_console.print(f"[yellow]skipped:[/] {line}", highlight=False, markup=True)
    for line in summarise(converted.warnings):
        err_console.print(f"[yellow]warning:[/] {line}", highlight=False, markup=True)
    err_console.print(
        f"{len(converted.requests)} request(s) from {converted.source_format} to {to.value}",
        highlight=False,
    )


def _convert_to_atif(file: Path, output: Path | None, lenient: bool) -> None:
    from contextkit.formats import load  # noqa: PLC0415  (loads the readers)

    loaded = load(file, lenient=lenient)
    sessions = loaded.sessions
    if output is None and (len(sessions) != 1 or sessions[0].subagents):
        raise OutputError(
            f"{file}: {len(sessions)} session(s) with subagents or several sessions need "
            "--output (each is its own ATIF file)"
        )
    warnings: list[ConversionWarning] = []
    written: list[str] = []
    for index, session in enumerate(sessions):
        target = output
        if output is not None and len(sessions) > 1:
            target = output.with_name(f"{output.stem}-{index}{output.suffix or '.json'}")
        warnings.extend(_write_atif(session, target, written))
    for record in loaded.skipped:
        err_console.print(f"[yellow]skipped:[/] {record.path}:{record.line}: {record.reason}")
    for line in summarise(tuple(warnings)):
        err_console.print(f"[yellow]warning:[/] {line}", highlight=False, markup=True)
    calls = sum(len(s.calls) for top in sessions for s in top.all_sessions())
    where = ", ".join(written) if written else "stdout"
    err_console.print(
        f"{calls} call(s) from {loaded.format} to atif: {where}", highlight=False, soft_wrap=True
    )


def _write_atif(session: Session, target: Path | None, written: list[str]) -> list[Any]:
    """``session`` (and its subagents, beside it) as ATIF; the warnings, located by file."""
    from contextkit.formats.atif import subagent_keys, to_atif  # noqa: PLC0415
    from contextkit.pricing import call_cost  # noqa: PLC0415

    keys = subagent_keys(session)
    subs: dict[str, str] = {}
    if target is not None:
        for i, key in enumerate(keys):
            subs[key] = f"{target.stem}.sub{i}{target.suffix or '.json'}"
    costs = [
        call_cost(c.model_info, c.usage, c.timestamp) if c.usage is not None else None
        for c in session.calls
    ]
    doc, found = to_atif(session, costs=costs, subagent_paths=subs)
    text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
    if target is None:
        sys.stdout.write(text)
    else:
        try:
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"{target}: cannot write: {exc.strerror or exc}") from None
        written.append(str(target))
    out = list(found)
    for key, sub in zip(keys, session.subagents, strict=True):
        sub_path = None if target is None else target.with_name(subs[key])
        out.extend(_write_atif(sub, sub_path, written))
    return out


def summarise(warnings: tuple[ConversionWarning, ...]) -> list[str]:
    """One line per warning code: how often, and the first place with its detail."""
    counts = Counter(w.code for w in warnings)
    first: dict[str, ConversionWarning] = {}
    for warning in warnings:
        first.setdefault(warning.code, warning)
    return [
        f"{code} x{counts[code]} (first: {w.location}: {w.detail})" for code, w in first.items()
    ]
