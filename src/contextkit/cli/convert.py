"""``contextkit convert FILE --to anthropic|openai-chat|openai-responses [-o OUT] [--lenient]``.

Loads any supported file (format detected), converts the request of every call with
:func:`contextkit.formats.convert.convert_file`, and writes JSONL: one request body per line, one
line per
call, in call order (subagent sessions after their parent). Output goes to ``OUT`` or stdout.
What the target form cannot carry is reported on stderr, grouped by warning code with a count and
the first place it happened; records a lenient read skipped are listed there too. Bad input exits
with code 2 and a message naming file and line.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from contextkit.cli._app import app, err_console
from contextkit.errors import ContextkitError

if TYPE_CHECKING:
    from contextkit.formats.convert import ConversionWarning


class TargetName(StrEnum):
    anthropic = "anthropic"
    openai_chat = "openai-chat"
    openai_responses = "openai-responses"


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
    """Convert every call's request to another API's form: one JSON body per line."""
    from contextkit.formats.convert import convert_file  # noqa: PLC0415  (loads the readers)

    converted = convert_file(file, to.value, lenient=lenient)
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


def summarise(warnings: tuple[ConversionWarning, ...]) -> list[str]:
    """One line per warning code: how often, and the first place with its detail."""
    counts = Counter(w.code for w in warnings)
    first: dict[str, ConversionWarning] = {}
    for warning in warnings:
        first.setdefault(warning.code, warning)
    return [
        f"{code} x{counts[code]} (first: {w.location}: {w.detail})" for code, w in first.items()
    ]
