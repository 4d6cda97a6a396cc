"""aider readers: the corpus chat history, hand-built chat histories for the shapes and errors it
lacks, and an LLM history written the way aider's own writer writes it."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from contextkit.errors import FormatError, UnknownFormatError
from contextkit.formats import detect, load
from contextkit.formats.aider.chat_history import READER, parse_report
from contextkit.formats.aider.llm_history import READER as LLM_READER
from contextkit.messages import TextBlock
from contextkit.replay import find_session_files
from contextkit.session import Usage
from corpus_paths import corpus_files

pytestmark = pytest.mark.filterwarnings("error")

AIDER_FILE = "aider/chat-history.md"
_COST = re.compile(r"Cost: \$([\d.]+) (?:message|request)")


def _count(text: str) -> int:
    scale = {"k": 1000, "M": 1_000_000}.get(text[-1], 1)
    return round(float(text.rstrip("kM").replace(",", "")) * scale)


# --------------------------------------------------------------------------------------------------
# Corpus


@pytest.mark.corpus
def test_corpus_file_loads_strictly_with_one_call_per_token_report(corpus: Path) -> None:
    path = corpus / AIDER_FILE
    assert detect(path).name == "aider"
    loaded = load(path)
    assert loaded.skipped == ()
    lines = path.read_text(encoding="utf-8").split("\n")
    reports = [line for line in lines if line.startswith("> Tokens:")]
    starts = [line for line in lines if line.startswith("# aider chat started at ")]
    assert (len(reports), len(starts)) == (839, 1133)
    assert loaded.calls == 839
    # 1133 runs + the text before the first start line; those without a report are counted in
    # the first session's note, not read as sessions.
    (note,) = [n for n in loaded.sessions[0].notes if "aider runs made no model call" in n]
    left_out = int(note.split(" of the file's ")[0])
    assert left_out + len(loaded.sessions) == 1134
    assert all(s.calls for s in loaded.sessions)
    assert not any(c.exact for s in loaded.sessions for c in s.calls)
    assert all(not s.prefix_known for s in loaded.sessions)


@pytest.mark.corpus
def test_corpus_usage_and_recorded_cost(corpus: Path) -> None:
    path = corpus / AIDER_FILE
    lines = path.read_text(encoding="utf-8").split("\n")
    received = 0
    cost = 0.0
    for i, line in enumerate(lines):
        if not line.startswith("> Tokens:"):
            continue
        received += _count(re.findall(r"([\d.,]+[kM]?) received", line)[0])
        found = _COST.search(line) or _COST.search(lines[i + 1])
        cost += float(found.group(1)) if found else 0.0
    assert round(cost, 2) == 25.59
    loaded = load(path)
    calls = [c for s in loaded.sessions for c in s.calls]
    assert sum(c.usage.output_tokens for c in calls if c.usage) == received
    noted = 0.0
    for session in loaded.sessions:
        for note in session.notes:
            found = re.search(r"reports\): \$([\d.]+) over", note)
            noted += float(found.group(1)) if found else 0.0
    assert noted == pytest.approx(cost, abs=0.005)  # each session's note rounds to $0.0001


@pytest.mark.corpus
def test_corpus_sessions_start_at_their_start_line(corpus: Path) -> None:
    sessions = load(corpus / AIDER_FILE).sessions
    first = sessions[0]
    assert first.session_id == "2024-08-05T19:33:32"
    assert first.model == "claude-3-5-sonnet-20240620"
    (call,) = first.calls
    assert call.usage == Usage(input_tokens=5244, output_tokens=604)
    assert call.request.messages[0].content == (
        "Use the Spinner instead of the inlined custom spinner"
    )


@pytest.mark.corpus
def test_aider_readers_claim_no_other_corpus_file(corpus: Path) -> None:
    for path in corpus_files(corpus):
        head = path.read_bytes()[:65536].decode("utf-8", errors="replace")
        assert READER.sniff(path, head) == (path == corpus / AIDER_FILE), path
        assert not LLM_READER.sniff(path, head), path


@pytest.mark.corpus
def test_folder_search_takes_the_history_and_skips_the_notes(corpus: Path) -> None:
    found = find_session_files([corpus])
    assert corpus / AIDER_FILE in found.files
    skipped = {Path(p).name for p, _ in found.skipped}
    assert {"SOURCES.md", "README.upstream.md"} <= skipped


# --------------------------------------------------------------------------------------------------
# Token reports


@pytest.mark.parametrize(
    ("line", "usage", "cost"),
    [
        (
            "> Tokens: 5,244 sent, 604 received. Cost: $0.02 request, $0.02 session.  ",
            Usage(input_tokens=5244, output_tokens=604),
            0.02,
        ),
        # aider 0.50: 'sent' is the uncached part, the same on the write and the hit call.
        (
            "> Tokens: 194 sent, 9,474 cache write, 7 received. Cost: $0.0000088 message, "
            "$0.0000088 session.  ",
            Usage(input_tokens=194, cache_write_5m=9474, output_tokens=7),
            0.0000088,
        ),
        (
            "> Tokens: 492 sent, 1,278 cached, 72 received. Cost: $0.0026 message, $0.0026 "
            "session.  ",
            Usage(input_tokens=492, cache_read=1278, output_tokens=72),
            0.0026,
        ),
        # aider 0.51 (and DeepSeek): 'sent' is the whole prompt.
        (
            "> Tokens: 11,055 sent, 10,984 cache hit, 30 received. Cost: $0.0040 message, $0.05 "
            "session.  ",
            Usage(input_tokens=71, cache_read=10984, output_tokens=30),
            0.0040,
        ),
        (
            "> Tokens: 1.6k sent, 1.6k cache write, 51 received. Cost: $0.0069 message, $0.0069 "
            "session.  ",
            Usage(input_tokens=0, cache_write_5m=1600, output_tokens=51),
            0.0069,
        ),
        ("> Tokens: 63 sent, 9 received.", Usage(input_tokens=63, output_tokens=9), None),
    ],
)
def test_token_reports(line: str, usage: Usage, cost: float | None) -> None:
    report = parse_report(line)
    assert report is not None
    assert report.usage == usage
    assert report.cost == cost


def test_cost_on_the_next_line_and_rounding() -> None:
    report = parse_report(
        "> Tokens: 15k sent, 13k cache write, 1.6k cache hit, 133 received.",
        "Cost: $0.05 message, $0.05 session.  ",
    )
    assert report is not None
    assert report.usage == Usage(
        input_tokens=400, cache_write_5m=13000, cache_read=1600, output_tokens=133
    )
    assert report.cost == 0.05
    assert report.rounded
    assert parse_report("> Tokens: lots sent") is None


# --------------------------------------------------------------------------------------------------
# Hand-built chat histories, as aider/io.py writes them


def _start(stamp: str) -> str:
    return f"\n# aider chat started at {stamp}\n\n"


def _tool(text: str) -> str:
    return f"> {text}  \n"


def _user(text: str) -> str:
    return "\n#### " + "  \n#### ".join(text.splitlines() or ["<blank>"]) + "  \n"


def _ai(text: str) -> str:
    return "\n" + text.strip() + "\n\n"


REPORT = "> Tokens: 100 sent, 20 received. Cost: $0.01 message, $0.01 session.  \n"


def _history(tmp_path: Path, *parts: str, name: str = ".aider.chat.history.md") -> Path:
    path = tmp_path / name
    path.write_text("".join(parts), encoding="utf-8")
    return path


def test_runs_inputs_replies_commands_and_clear(tmp_path: Path) -> None:
    path = _history(
        tmp_path,
        _start("2025-01-02 03:04:05"),
        _tool("Aider v0.50.1"),
        _tool("Model: gpt-4o with diff edit format"),
        _user("/add a.py"),
        _tool("Added a.py to the chat"),
        _user("fix the bug\nin a.py"),
        _ai("Here is the fix:\n\n```\nx = 1\n```"),
        _tool("Applied edit to a.py"),
        REPORT,
        _user("/ask why?"),
        _ai("Because."),
        REPORT,
        _user("/clear"),
        _user("again"),
        _ai("Sure."),
        REPORT,
        _start("2025-01-02 04:00:00"),
        _tool("Model: gpt-4o with diff edit format"),
    )
    assert detect(path).name == "aider"
    (session,) = load(path).sessions
    assert session.session_id == "2025-01-02T03:04:05"
    assert session.model == "gpt-4o"
    first, second, third = session.calls
    assert first.request.messages[0].content == "fix the bug\nin a.py"
    assert first.usage == Usage(input_tokens=100, output_tokens=20)
    assert first.line == path.read_text().split("\n").index(REPORT.rstrip("\n")) + 1
    assert [m.content for m in second.request.messages][-1] == "why?"
    assert [m.role for m in second.request.messages] == ["user", "assistant", "user"]
    assert [m.content for m in third.request.messages] == ["again"]  # /clear emptied the history
    assert session.set_aside == {"command /add": 1, "command /clear": 1, "tool_output": 4}
    assert any("1 of the file's 2 aider runs made no model call" in n for n in session.notes)
    assert any("$0.0300 over 3 calls" in n for n in session.notes)
    assert any("no request bodies" in n for n in session.notes)


def test_reply_without_report_stays_in_history_but_is_no_call(tmp_path: Path) -> None:
    path = _history(
        tmp_path,
        _start("2025-01-02 03:04:05"),
        _user("q1"),
        _ai("interrupted answer"),
        _tool("^C again to exit"),
        _user("q2"),
        _ai("answer"),
        REPORT,
    )
    (session,) = load(path).sessions
    (call,) = session.calls
    assert [m.content for m in call.request.messages] == ["q1", "interrupted answer", "q2"]
    assert call.response is not None
    assert call.response.blocks == (TextBlock(text="answer"),)
    assert any("1 replies have no token report" in n for n in session.notes)


def test_bad_report_is_an_error_strictly_and_a_listed_skip_leniently(tmp_path: Path) -> None:
    path = _history(
        tmp_path,
        _start("2025-01-02 03:04:05"),
        _user("q"),
        _ai("a"),
        "> Tokens: many sent, few received.\n",
        _ai("b"),
        REPORT,
    )
    with pytest.raises(FormatError) as error:
        load(path)
    assert error.value.line == 9
    loaded = load(path, lenient=True)
    assert [(s.line, s.reason) for s in loaded.skipped] == [
        (9, "a '> Tokens:' line aider's report format does not match")
    ]
    assert loaded.calls == 1


def test_runs_without_calls_are_sessions_when_no_run_has_one(tmp_path: Path) -> None:
    path = _history(tmp_path, _start("2025-01-02 03:04:05"), _tool("Aider v0.50.1"), _user("/ex"))
    (session,) = load(path).sessions
    assert session.calls == ()
    assert session.set_aside == {"command /ex": 1, "tool_output": 1}


def test_empty_file(tmp_path: Path) -> None:
    path = _history(tmp_path)
    with pytest.raises(UnknownFormatError):
        load(path)
    assert READER.read(path).sessions == ()


def test_detection_by_name_or_content(tmp_path: Path) -> None:
    renamed = _history(tmp_path, "notes\n", _start("2025-01-02 03:04:05"), name="old.md")
    assert detect(renamed).name == "aider"
    readme = _history(tmp_path, "# My project\n\nSee `# aider chat started`.\n", name="README.md")
    assert not READER.sniff(readme, readme.read_text())
    text = _history(tmp_path, _start("2025-01-02 03:04:05"), name="history.txt")
    assert not READER.sniff(text, text.read_text())


def test_note_points_to_the_llm_history_beside(tmp_path: Path) -> None:
    path = _history(tmp_path, _start("2025-01-02 03:04:05"), _user("q"), _ai("a"), REPORT)
    (tmp_path / ".aider.llm.history").write_text("TO LLM 2025-01-02T03:04:06\n")
    (session,) = load(path).sessions
    assert any(".aider.llm.history (format aider-llm)" in n for n in session.notes)


# --------------------------------------------------------------------------------------------------
# LLM history: written as aider's InputOutput.log_llm_history and utils.format_messages write it


def _format_content(role: str, content: str) -> str:
    return "\n".join(f"{role} {line}" for line in content.splitlines())


def _format_messages(messages: list[dict[str, Any]]) -> str:
    output = []
    for msg in messages:
        output.append("-------")
        output.append(_format_content(msg["role"].upper(), msg["content"]))
    return "\n".join(output)


def _log(path: Path, role: str, content: str, when: datetime) -> None:
    with path.open("a", encoding="utf-8") as log_file:
        log_file.write(f"{role.upper()} {when.isoformat(timespec='seconds')}\n")
        log_file.write(content + "\n")


SYSTEM = "Act as an expert software developer.\nAlways use best practices."
REPO_MAP = "Here are summaries of some files present in my git repository:\n\na.py:\n\n⋮..."


def _llm_history(tmp_path: Path) -> Path:
    path = tmp_path / ".aider.llm.history"
    when = datetime(2025, 1, 2, 3, 4, 5)
    first = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": REPO_MAP},
        {"role": "assistant", "content": "Ok, I won't try and edit those files."},
        {"role": "user", "content": "fix a.py"},
        {"role": "system", "content": "Reply in the SEARCH/REPLACE format."},
    ]
    _log(path, "TO LLM", _format_messages(first), when)
    _log(path, "LLM RESPONSE", _format_content("ASSISTANT", "Done.\n\nall good"), when)
    second = [
        *first[:4],
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": ""},
    ]
    _log(path, "TO LLM", _format_messages(second), when)
    _log(path, "LLM RESPONSE", _format_content("ASSISTANT", ""), when)
    return path


def test_llm_history_gives_full_prompts(tmp_path: Path) -> None:
    path = _llm_history(tmp_path)
    assert detect(path).name == "aider-llm"
    (session,) = load(path).sessions
    assert session.prefix_known
    first, second = session.calls
    assert first.request.system == SYSTEM
    roles = [m.role for m in first.request.messages]
    assert roles == ["user", "assistant", "user", "user"]  # the reminder stays in place
    assert first.request.messages[0].content == REPO_MAP
    assert first.response is not None
    assert first.response.content == "Done.\n\nall good"
    assert first.line == 1
    assert first.timestamp is not None
    assert first.usage is None
    assert second.response is not None
    assert second.response.content == ""
    # format_content writes no line for an empty message: its role is lost, so is the message.
    assert second.request.messages[-1].content == "Done."
    assert any("1 empty messages" in n for n in session.notes)


def test_llm_history_bad_line_strict_and_lenient(tmp_path: Path) -> None:
    path = _llm_history(tmp_path)
    lines = path.read_text(encoding="utf-8").split("\n")
    lines.insert(3, "not prefixed")
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(FormatError) as error:
        load(path)
    assert error.value.line == 4
    loaded = load(path, lenient=True)
    assert [s.line for s in loaded.skipped] == [4]
    assert loaded.calls == 2


def test_llm_history_request_without_response(tmp_path: Path) -> None:
    path = tmp_path / "llm.history"
    _log(
        path, "TO LLM", _format_messages([{"role": "user", "content": "hi"}]), datetime(2025, 1, 1)
    )
    (session,) = load(path).sessions
    (call,) = session.calls
    assert call.response is None
    assert call.stop_reason is None


def test_llm_history_sniff_is_conservative(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text("LLM RESPONSE 2025-01-01T00:00:00\nASSISTANT hi\n")
    assert not LLM_READER.sniff(path, path.read_text())
    path.write_text("TO LLM tomorrow\n")
    assert not LLM_READER.sniff(path, path.read_text())
