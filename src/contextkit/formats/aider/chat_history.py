"""Reader for aider chat histories (``Aider-AI/aider``: ``.aider.chat.history.md``, repo root).

aider appends to one markdown file across runs (``aider/io.py``): each run opens with
``# aider chat started at YYYY-MM-DD HH:MM:SS``; what the user typed is written as ``#### `` lines
(one input is a run of them; ``#### <blank>`` is an empty input); aider's own output (commands'
results, confirmations, warnings, the token report) as ``> `` lines; the model's replies as plain
text. Each run that made a model call is one :class:`Session`, its ``session_id`` the start time
(text before the first start line, as in a file whose head was cut, is a run of its own,
``preamble``); the runs without a call are counted in a note of the first session (all runs are
sessions when none made a call).

What counts as a call: each ``> Tokens: N sent, M received.`` line (aider prints it after every
reply, with ``Cost: $x message, $y session.`` on the same or the next line when it knows the
model's price). Its response is the reply text since the last input or report. Its request is
rebuilt from the chat text before it (``exact=False``): the earlier inputs and replies, then the
inputs since the last call. The history file records no request bodies, so that request lacks
aider's system prompt, the repo map, the files' contents and aider's own summaries of older
messages (``prefix_known=False``; a note on every session says so). Inputs that are commands are
set aside (counted by command), except ``/ask``, ``/code``, ``/architect``, ``/context`` and
``/help`` with a question, whose text is sent; ``/clear`` and ``/reset`` empty the rebuilt
history. ``> `` lines are not sent: counted as ``tool_output``. A ``#### `` heading or a ``> ``
quote inside a reply cannot be told from aider's own lines: the markdown is ambiguous there.

Usage: ``Usage(input_tokens=N sent, output_tokens=M received)``, with the cache classes when the
report names them (``W cache write``, ``H cache hit``; aider 0.50's ``H cached``). What ``sent``
holds changed between aider versions, as the corpus shows: in 0.50 it is the uncached prompt
(``194 sent, 9,474 cache write`` then ``194 sent, 9,474 cache hit``), from 0.51 on (and always
for DeepSeek, whose prompt count includes the hits) it is the whole prompt (``11,002 sent, 10,984
cache write``; today's ``base_coder.py`` adds the write to litellm's ``prompt_tokens``). So when
``sent`` is at least write + hit it is taken as the total and ``input_tokens`` is what remains;
otherwise ``sent`` is the uncached part. aider rounds counts of 1,000 and more to ``1.6k`` /
``15k`` / ``1.2M`` from 0.51 on: those are approximate (a note says so). Without cache fields,
``sent`` is the whole prompt: a provider's automatic cache reads (OpenAI) are not reported.
The start time is aider's local clock (no zone recorded). The recorded cost (``$x message``:
aider's price of the call, from litellm's table) has no place on a call: the session notes give
its total. The model is the one aider announced last in the run (``> Model: ...`` /
``> Models: ...`` / ``> Main model: ...``).

Detection: the file name ``.aider.chat.history.md``, or a ``.md`` file with a
``# aider chat started at`` line in its head. Strict by default: a ``> Tokens:`` line that does
not parse, or a line that is not UTF-8, is a :class:`FormatError` with its line; ``lenient=True``
skips it and lists it. ``.aider.llm.history`` (full prompts) is read by :mod:`.llm_history`; a note
points to it when it lies beside the chat history.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._locations import Location, Places
from contextkit.messages import Conversation, Message
from contextkit.session import Call, LoadedFile, Session, Usage

NAME = "aider"
FILE_NAME = ".aider.chat.history.md"
LLM_HISTORY = ".aider.llm.history"
NO_BODIES_NOTE = (
    "aider's chat history records no request bodies: each request is rebuilt from the chat text "
    "(inputs and replies), without aider's system prompt, repo map, file contents or its "
    "summaries of older messages (exact=False, prefix_known=False)"
)

_START = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_COUNT = r"[\d,]+(?:\.\d+)?[kM]?"
_TOKENS = re.compile(
    rf"^> Tokens: (?P<sent>{_COUNT}) sent"
    rf"(?:, (?P<write>{_COUNT}) cache write)?"
    rf"(?:, (?P<hit>{_COUNT}) cache hit)?"
    rf"(?:, (?P<cached>{_COUNT}) cached)?"
    rf", (?P<received>{_COUNT}) received[.,](?P<rest>.*)$"
)
_COST = re.compile(
    r"Cost: \$(?P<message>[\d.]+) (?:message|request), \$(?P<session>[\d.]+) session"
)
_MODEL = re.compile(r"^> (?:Main model|Models?): (\S+?)⚡? with ")
_SENDING_COMMANDS = ("/ask", "/code", "/architect", "/context", "/help")
_CLEARING_COMMANDS = ("/clear", "/reset")


class AiderReader:
    name = NAME

    def locations(self, places: Places) -> tuple[Location, ...]:
        """``.aider.chat.history.md`` at the root of the git repository holding the current
        directory, else in the current directory (``Aider-AI/aider`` ``aider/args.py``:
        ``--chat-history-file`` defaults to the git root's ``.aider.chat.history.md``); none when
        the current directory is not known."""
        root = places.repo_root()
        if root is None:
            return ()
        return (Location("aider", self.name, root / ".aider.chat.history.md"),)

    def sniff(self, path: Path, head: str) -> bool:
        if path.name == FILE_NAME:
            return True
        if path.suffix != ".md":
            return False
        return any(_START.match(line) for line in head.splitlines())

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        lines = list(_lines(path, skips))
        beside = path.parent / LLM_HISTORY
        extra = (f"full prompts may be in {beside} (format aider-llm)",) if beside.is_file() else ()
        runs = [_session(path, s, skips, extra) for s in _sections(lines) if s.lines]
        return LoadedFile(
            path=str(path), format=NAME, sessions=_with_calls(runs), skipped=tuple(skips.records)
        )


def _with_calls(runs: Sequence[Session]) -> tuple[Session, ...]:
    """The runs that made a model call (all runs when none did); the first says how many runs
    were left out, so that none goes unmentioned."""
    kept = [r for r in runs if r.calls]
    if not kept or len(kept) == len(runs):
        return tuple(runs)
    note = (
        f"{len(runs) - len(kept)} of the file's {len(runs)} aider runs made no model call "
        "(no '> Tokens:' report): they are not read as sessions"
    )
    first = kept[0]
    kept[0] = first.model_copy(update={"notes": (*first.notes, note)})
    return tuple(kept)


# --------------------------------------------------------------------------------------------------
# Lines and runs


def _lines(path: Path, skips: Skips) -> Iterator[tuple[int, str]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(path, f"cannot read file: {exc.strerror or exc}") from None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as exc:
            skips.fail(f"invalid UTF-8 at byte {exc.start} of the line", number)


@dataclass
class _Section:
    started: str | None
    line: int
    lines: list[tuple[int, str]] = field(default_factory=list)


def _sections(lines: Sequence[tuple[int, str]]) -> list[_Section]:
    sections = [_Section(started=None, line=1)]
    for number, text in lines:
        match = _START.match(text)
        if match:
            sections.append(_Section(started=match.group(1), line=number))
        else:
            sections[-1].lines.append((number, text))
    first = sections[0]
    if not any(text.strip() for _, text in first.lines):
        first.lines = []
    return sections


def _count(text: str) -> tuple[int, bool]:
    """A count as aider prints it (``12,345``, ``1.6k``, ``15k``, ``1.2M``); True when rounded."""
    scale = {"k": 1000, "M": 1_000_000}.get(text[-1], 1)
    digits = text[:-1] if scale != 1 else text
    return round(float(digits.replace(",", "")) * scale), scale != 1


@dataclass(frozen=True)
class Report:
    """One ``> Tokens:`` report: the usage, aider's price of the call, whether aider rounded."""

    usage: Usage
    cost: float | None
    rounded: bool


def parse_report(line: str, following: str = "") -> Report | None:
    """A ``> Tokens:`` line (and the ``Cost:`` line after it, when aider put it there)."""
    match = _TOKENS.match(line.rstrip())
    if match is None:
        return None
    counts = {k: _count(v) for k, v in match.groupdict().items() if k != "rest" and v is not None}
    value = {k: v for k, (v, _) in counts.items()}
    sent, write = value["sent"], value.get("write", 0)
    hit = value.get("hit", value.get("cached", 0))
    uncached = sent - write - hit if sent >= write + hit and write + hit else sent
    usage = Usage(
        input_tokens=uncached,
        cache_write_5m=write,
        cache_read=hit,
        output_tokens=value["received"],
    )
    cost = _COST.search(match.group("rest")) or _COST.match(following.removeprefix("> "))
    price = float(cost.group("message")) if cost else None
    return Report(usage=usage, cost=price, rounded=any(r for _, r in counts.values()))


# --------------------------------------------------------------------------------------------------
# One run


@dataclass
class _Run:
    """The state of reading one run: the rebuilt history, the turn being collected, the calls."""

    model: str | None = None
    history: list[Message] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    reply: list[str] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    set_aside: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    cost: float = 0.0
    costed: int = 0
    rounded: int = 0
    unreported: int = 0

    def end_input(self) -> None:
        if not self.typed:
            return
        text = "\n".join(self.typed)
        self.typed = []
        if text.strip() == "<blank>":
            return
        self.end_reply()
        if text.startswith("/"):
            self._command(text)
        else:
            self.inputs.append(text)

    def _command(self, text: str) -> None:
        name, _, rest = text.partition(" ")
        if name in _SENDING_COMMANDS and rest.strip():
            self.inputs.append(rest.strip())
            return
        self.set_aside[f"command {name}"] += 1
        if name in _CLEARING_COMMANDS:
            self.history, self.inputs = [], []

    def end_reply(self) -> None:
        """A reply with no token report after it: kept in the history, not counted as a call."""
        text = "\n".join(self.reply).strip()
        self.reply = []
        if text:
            self.unreported += 1
            self._commit(Message(role="assistant", content=text))

    def _turn(self) -> Message | None:
        return Message(role="user", content="\n\n".join(self.inputs)) if self.inputs else None

    def _commit(self, response: Message) -> None:
        turn = self._turn()
        self.history.extend([turn, response] if turn else [response])
        self.inputs = []

    def call(self, report: Report, line: int) -> None:
        text = "\n".join(self.reply).strip()
        self.reply = []
        response = Message(role="assistant", content=text)
        turn = self._turn()
        request = (*self.history, turn) if turn else tuple(self.history)
        self.calls.append(
            Call(
                request=Conversation(model=self.model, messages=request),
                response=response,
                usage=report.usage,
                model=self.model,
                stop_reason="end_turn",
                exact=False,
                line=line,
            )
        )
        self._commit(response)
        if report.cost is not None:
            self.cost += report.cost
            self.costed += 1
        self.rounded += report.rounded


def _read_run(lines: Sequence[tuple[int, str]], skips: Skips) -> _Run:
    run = _Run()
    consumed: set[int] = set()
    for index, (number, text) in enumerate(lines):
        if index in consumed:
            continue
        if text.startswith("####"):
            run.typed.append(text.removeprefix("#### ").removeprefix("####").removesuffix("  "))
            continue
        run.end_input()
        if text.startswith("> Tokens:"):
            following = lines[index + 1][1] if index + 1 < len(lines) else ""
            report = parse_report(text, following)
            if report is None:
                skips.fail("a '> Tokens:' line aider's report format does not match", number)
                continue
            if following.startswith(("Cost:", "> Cost:")) and "Cost:" not in text:
                consumed.add(index + 1)
            run.call(report, number)
        elif text.startswith(">"):
            run.set_aside["tool_output"] += 1
            model = _MODEL.match(text)
            if model:
                run.model = model.group(1)
        elif text.strip() or run.reply:
            run.reply.append(text)
    run.end_input()
    run.end_reply()
    return run


def _session(path: Path, section: _Section, skips: Skips, extra: Sequence[str]) -> Session:
    run = _read_run(section.lines, skips)
    notes = [NO_BODIES_NOTE, *extra, *_run_notes(run)]
    if section.started is None:
        notes.append("text before the file's first '# aider chat started' line: no start time")
    return Session(
        path=str(path),
        format=NAME,
        session_id=_session_id(section),
        calls=tuple(run.calls),
        prefix_known=False,
        set_aside=dict(sorted(run.set_aside.items())),
        notes=tuple(notes),
    )


def _session_id(section: _Section) -> str:
    if section.started is None:
        return "preamble"
    return datetime.strptime(section.started, "%Y-%m-%d %H:%M:%S").isoformat()


def _run_notes(run: _Run) -> list[str]:
    notes = []
    if run.costed:
        notes.append(
            f"recorded cost (aider's 'Cost: $x message' reports): ${run.cost:.4f} over "
            f"{run.costed} calls"
        )
    if run.rounded:
        notes.append(f"{run.rounded} token reports are rounded by aider (1.6k, 15k): approximate")
    if run.unreported:
        notes.append(
            f"{run.unreported} replies have no token report after them: kept in the rebuilt "
            "history, not counted as calls"
        )
    return notes


READER = AiderReader()

__all__ = ["READER", "AiderReader", "Report", "parse_report"]
