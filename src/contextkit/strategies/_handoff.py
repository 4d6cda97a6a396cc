"""The offline summary as a hand-off: what a colleague taking over the work needs, in sections.

Contract of :class:`ExtractiveSummariser` (offline, deterministic, no model call):

- Sections, in order (:data:`SECTIONS`), in the spirit of the compaction prompts of Claude Code
  (primary request, files and code, errors and fixes, pending tasks, current work) and pi (goal,
  constraints, progress, key decisions, next steps, read and modified files):
  *Goal and constraints* (the first request, and the user's sentences that constrain the work),
  *Latest request* (the last request in the span, verbatim up to ``max_request_chars``),
  *Done* (one line per action taken, newest last: files edited, commands run and whether they
  failed, files read, searches, delegations), *Files read* and *Files modified* (paths from the
  tool calls' inputs), *Decisions* (the assistant's sentences stating a choice or a cause),
  *Open errors* (tool results flagged ``is_error`` or commands that exited non-zero, unless the same
  command or an edit of the same file later succeeded; never a source line that merely contains
  the word error), *Findings* (what each subagent reported: its report's opening and closing
  paragraphs, then its headings and list items, :func:`conclusions`), *User messages* (every
  earlier message the user typed, verbatim), *Next steps* (the open items of the latest todo
  list, else the assistant's stated next steps).
- Budgets: each section keeps its most recent distinct entries (``max_items``; files
  ``max_files``); findings, user messages and constraint sentences are kept verbatim, the newest
  first, within a character budget each (``max_findings_chars``, ``max_user_chars``,
  ``max_constraint_chars``), so what the agent learnt and what the user asked survive a summary.
- An earlier summary inside the span is carried forward section by section (older than
  everything after it), so repeated summaries stay bounded and keep the original goal.
- Only tool *inputs*, user and assistant text and subagents' reports are read in full; any other
  tool result is read only for its error flag and the first and last lines of a failing
  command, so a summary of a long span costs little more than walking it. ``instructions`` are
  ignored (nothing to steer).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contextkit.messages import (
    CompactionBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.strategies._base import CallFacts
from contextkit.strategies._summary_model import SUMMARY_CLOSE, SUMMARY_OPEN, Summary

SECTIONS: tuple[str, ...] = (
    "Goal and constraints",
    "Latest request",
    "Done",
    "Files read",
    "Files modified",
    "Decisions",
    "Findings",
    "User messages",
    "Open errors",
    "Next steps",
)

_EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "edit", "write", "apply_patch", "create_file"}
)
_READ_TOOLS = frozenset({"Read", "read", "read_file", "view", "NotebookRead", "cat"})
_SEARCH_TOOLS = frozenset({"Grep", "Glob", "grep", "glob", "find", "LS", "ls", "search"})
_SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "exec_command", "run_command", "execute_bash"})
_TODO_TOOLS = frozenset({"TodoWrite", "todo_write", "update_plan"})
SUBAGENT_TOOLS = frozenset({"Task", "Agent", "task", "agent", "spawn_agent", "subagent"})
"""Tool names whose result is a subagent's report (Claude Code's Task / Agent; other harnesses')."""
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
_EXIT = re.compile(
    r"(?:exit code|exit status|exited with|returned non-zero exit status)[:\s]+([1-9]\d*)", re.I
)
_DECISION = re.compile(
    r"\b(?:decided|decision|instead|the fix|root cause|because|the issue is|the problem is|"
    r"turns out|chose|we'll use|I'll use|going with)\b",
    re.IGNORECASE,
)
_NEXT = re.compile(r"\b(?:next,? I|next step|then I'll|still need|remaining|TODO|not yet)\b", re.I)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|don't|do not|only|always|without|make sure|should not|shouldn't|avoid)\b",
    re.IGNORECASE,
)
_HARNESS_TEXT = ("<system-reminder>", "<command-", "<local-command", "[Request interrupted")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _own_text(text: str) -> bool:
    """Text a person wrote, not a harness's injected reminder or command echo."""
    stripped = text.lstrip()
    return bool(stripped) and not stripped.startswith(_HARNESS_TEXT)


class _Sections:
    """Per section, distinct entries in order, the newest kept (re-adding moves to the end)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, None]] = {name: {} for name in SECTIONS}

    def add(self, section: str, entry: str) -> None:
        if entry:
            kept = self.entries[section]
            kept.pop(entry, None)
            kept[entry] = None

    def drop(self, section: str, entry: str) -> None:
        self.entries[section].pop(entry, None)

    def last(self, section: str, limit: int) -> list[str]:
        return list(self.entries[section])[-limit:]


def _input(use: ToolUseBlock) -> Mapping[str, Any]:
    return use.input if isinstance(use.input, Mapping) else {}


def _paths(use: ToolUseBlock) -> list[str]:
    data = _input(use)
    found = [str(data[k]) for k in _PATH_KEYS if isinstance(data.get(k), str) and data[k]]
    if use.name == "apply_patch" or "patch" in data:
        patch = data.get("patch") or data.get("input") or ""
        found += _PATCH_FILE.findall(patch) if isinstance(patch, str) else []
    return found


def _command(use: ToolUseBlock) -> str | None:
    data = _input(use)
    for key in ("command", "cmd"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return None


def _kind(use: ToolUseBlock) -> str:
    """``edit``, ``read``, ``search``, ``shell``, ``todo`` or ``other``."""
    name, data = use.name, _input(use)
    if name in _TODO_TOOLS:
        return "todo"
    if name in _EDIT_TOOLS:
        return "edit"
    if name.startswith("str_replace") or name.endswith("_editor"):
        return "read" if data.get("command") == "view" else "edit"
    if name in _READ_TOOLS:
        return "read"
    if name in _SEARCH_TOOLS:
        return "search"
    if name in _SHELL_TOOLS or _command(use) is not None:
        return "shell"
    return "other"


def _failure(result: ToolResultBlock) -> str | None:
    """The first meaningful line of a failed call (flagged, or a command exiting non-zero)."""
    text = result.text
    head, tail = text[:400], text[-400:]
    if not result.is_error and not _EXIT.search(head) and not _EXIT.search(tail):
        return None
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "failed (no output)"
    first = lines[0]
    if first.startswith("Traceback") or _EXIT.search(first):
        # The cause is at the end: a traceback's exception line, a command's last output line.
        meaningful = [ln for ln in lines[1:][-12:] if not _EXIT.search(ln)]
        if meaningful:
            return f"{first}: {meaningful[-1]}" if _EXIT.search(first) else meaningful[-1]
    return first


class _Walk:
    """One forward pass over a span, filling the sections."""

    def __init__(self, summariser: ExtractiveSummariser) -> None:
        self.s = summariser
        self.sections = _Sections()
        self.goal: str | None = None
        self.latest: str | None = None
        self.todos: list[str] | None = None
        self.pending: dict[str, tuple[str, str]] = {}
        """tool_use id -> (what it did, what would resolve its failure)"""
        self.errors: dict[str, str] = {}
        """resolution key -> open error entry"""
        self.delegated: dict[str, str] = {}
        """tool_use id -> what a subagent call asked (its result is a finding)"""
        self.findings: list[str] = []
        self.typed: list[str] = []
        """Every message the user typed, verbatim (whitespace folded), oldest first."""
        self.calls = 0

    def message(self, message: Message) -> None:
        for block in message.blocks:
            if isinstance(block, TextBlock) and block.text.lstrip().startswith(SUMMARY_OPEN):
                self.prior(block.text)
            elif isinstance(block, CompactionBlock):
                self.prior(block.content or "")
            elif isinstance(block, TextBlock):
                self.text(message.role, block.text)
            elif isinstance(block, ToolUseBlock):
                self.use(block)
            elif isinstance(block, ToolResultBlock):
                self.result(block)

    def prior(self, text: str) -> None:
        current: str | None = None
        for line in text.splitlines():
            if line.startswith("## ") and line[3:].strip() in self.sections.entries:
                current = line[3:].strip()
            elif current is not None and line.startswith("- "):
                entry = line[2:]
                if current == "Goal and constraints" and self.goal is None:
                    self.goal = entry
                elif current == "Latest request":
                    self.latest = entry
                elif current == "Open errors":
                    self.errors[f"prior:{entry}"] = entry
                elif current == "Findings":
                    self.findings.append(entry)
                elif current == "User messages":
                    self.typed.append(entry)
                else:
                    self.sections.add(current, entry)

    def text(self, role: str, text: str) -> None:
        if role == "user":
            if not _own_text(text):
                return
            request = _clip(text, self.s.max_request_chars)
            if self.goal is None:
                self.goal = request
            self.latest = request
            self.typed.append(" ".join(text.split()))
            for sentence in _sentences(text):
                if _CONSTRAINT.search(sentence):
                    self.sections.add("Goal and constraints", " ".join(sentence.split()))
            return
        for sentence in _sentences(text):
            if _NEXT.search(sentence):
                self.sections.add("Next steps", _clip(sentence, self.s.item_chars))
            elif _DECISION.search(sentence):
                self.sections.add("Decisions", _clip(sentence, self.s.item_chars))

    def use(self, use: ToolUseBlock) -> None:
        self.calls += 1
        kind, paths = _kind(use), _paths(use)
        if kind == "todo":
            self.todos = _open_todos(_input(use))
            return
        if kind == "edit":
            for path in paths:
                self.sections.add("Files modified", path)
            action = f"edited {', '.join(paths) or use.name}"
            key = f"edit:{','.join(paths)}"
        elif kind == "read":
            for path in paths:
                self.sections.add("Files read", path)
            action, key = f"read {', '.join(paths) or use.name}", f"read:{','.join(paths)}"
        elif kind == "shell":
            command = _command(use) or use.name
            action, key = f"ran `{_clip(command, 160)}`", f"shell:{command}"
        elif kind == "search":
            data = _input(use)
            what = data.get("pattern") or data.get("query") or data.get("path") or ""
            action, key = f"searched {_clip(str(what), 100)}", f"search:{what}"
        else:
            data = _input(use)
            what = data.get("description") or data.get("prompt") or ""
            action = f"called {use.name}" + (f": {_clip(str(what), 100)}" if what else "")
            key = f"other:{use.name}"
            if use.name in SUBAGENT_TOOLS:
                self.delegated[use.id] = _clip(str(what), 100) or use.name
        self.pending[use.id] = (action, key)

    def result(self, result: ToolResultBlock) -> None:
        action, key = self.pending.pop(result.tool_use_id, ("a tool call", ""))
        asked = self.delegated.pop(result.tool_use_id, None)
        if asked is not None and not result.is_error:
            report = conclusions(result.text, self.s.finding_chars)
            if report:
                self.findings.append(f"{asked}: {report}")
        failure = _failure(result)
        if failure is None:
            self.sections.add("Done", action)
            self.errors.pop(key, None)  # the same command, or an edit of the file, now worked
            return
        self.sections.add("Done", f"{action} (failed)")
        self.errors.pop(key, None)
        self.errors[key or result.tool_use_id] = f"{action}: {_clip(failure, self.s.item_chars)}"

    def render(self, count: int) -> str:
        s, out = self.s, self.sections
        out.entries["Goal and constraints"] = {
            **({self.goal: None} if self.goal else {}),
            **out.entries["Goal and constraints"],
        }
        if self.latest:
            out.add("Latest request", self.latest)
        for entry in self.errors.values():
            out.add("Open errors", entry)
        if self.todos is not None:
            out.entries["Next steps"] = dict.fromkeys(self.todos)
        out.entries["Findings"] = dict.fromkeys(_newest(self.findings, s.max_findings_chars))
        typed = self.typed
        if typed and _clip(typed[-1], s.max_request_chars) == self.latest:
            typed = typed[:-1]  # the latest has its own section
        out.entries["User messages"] = dict.fromkeys(_newest(typed, s.max_user_chars))
        constraints = list(out.entries["Goal and constraints"])
        out.entries["Goal and constraints"] = dict.fromkeys(
            constraints[:1] + _newest(constraints[1:], s.max_constraint_chars)
        )
        limits = {
            "Files read": s.max_files,
            "Files modified": s.max_files,
            "Latest request": 1,
            "Findings": len(out.entries["Findings"]),
            "User messages": len(out.entries["User messages"]),
            "Goal and constraints": len(out.entries["Goal and constraints"]),
        }
        lines = [
            SUMMARY_OPEN,
            f"Hand-off summary of {count} earlier messages ({self.calls} tool calls); "
            "the conversation continues after it.",
        ]
        for name in SECTIONS:
            items = out.last(name, limits.get(name, s.max_items))
            if items:
                lines.append(f"## {name}")
                lines.extend(f"- {item}" for item in items)
        lines.append(SUMMARY_CLOSE)
        return "\n".join(lines)


def _newest(entries: Sequence[str], budget: int) -> list[str]:
    """The newest ``entries`` whose lengths fit in ``budget`` characters, in their order (the
    newest always, clipped when it alone is over)."""
    kept: list[str] = []
    used = 0
    for entry in reversed(entries):
        if kept and used + len(entry) > budget:
            break
        kept.append(entry if kept or len(entry) <= budget else _clip(entry, budget))
        used += len(entry)
    return kept[::-1]


_HEADING = re.compile(r"^(?:#{1,6}\s|\*\*[^*]+\*\*:?$)")
_LISTED = re.compile(r"^(?:[-*\u2022]\s+|\d+[.)]\s+)")


def conclusions(report: str, budget: int) -> str:
    """What a subagent found, in at most ``budget`` characters: its report's opening and closing
    paragraphs (where reports state their answer), then its headings and list items in order
    (where they list what they found), whitespace folded. Nothing of a long report's prose
    between them is kept; what fits is kept verbatim."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", report) if p.strip()]
    if not paragraphs:
        return ""
    picked: dict[int, None] = {0: None, len(paragraphs) - 1: None}
    lines: list[tuple[int, int, str]] = []
    for number, paragraph in enumerate(paragraphs):
        for row, line in enumerate(paragraph.splitlines()):
            stripped = line.strip()
            if number not in picked and (_HEADING.match(stripped) or _LISTED.match(stripped)):
                lines.append((number, row, stripped))
    chosen: list[tuple[int, int, str]] = [
        (n, -1, _clip(paragraphs[n], budget // 3)) for n in sorted(picked)
    ]
    used = sum(len(text) + 1 for _, _, text in chosen)
    for entry in lines:
        if used + len(entry[2]) + 1 > budget:
            break
        chosen.append(entry)
        used += len(entry[2]) + 1
    text = " ".join(t for _, _, t in sorted(chosen))
    return _clip(text, budget)


def _open_todos(data: Mapping[str, Any]) -> list[str]:
    todos = data.get("todos") or data.get("plan") or []
    out = []
    for item in todos if isinstance(todos, list) else []:
        if not isinstance(item, Mapping):
            continue
        status = str(item.get("status", "pending"))
        text = item.get("content") or item.get("step") or item.get("activeForm") or ""
        if status != "completed" and text:
            out.append(f"[{status}] {text}")
    return out


_PROSE = re.compile(r"[A-Za-z\"'`]")
_BULLET = re.compile(r"^(?:[-*]\s+|\d+[.)]\s+)")


def _sentences(text: str) -> list[str]:
    """The prose sentences of ``text``: list bullets stripped; headings, code and diff lines out."""
    out = []
    for part in re.split(r"(?<=[.!?])\s+|\n+", text):
        sentence = _BULLET.sub("", part.strip()).strip("* ")
        if sentence and _PROSE.match(sentence) and len(sentence) < 400:
            out.append(sentence)
    return out


class ExtractiveSummariser(BaseModel):
    """Offline, deterministic hand-off summary (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["extractive"] = "extractive"
    max_items: int = Field(10, ge=1)
    """Entries kept per section (the most recent; the goal keeps the first)."""
    max_files: int = Field(20, ge=1)
    """Paths kept in each file list."""
    item_chars: int = Field(240, ge=20)
    max_request_chars: int = Field(2_000, ge=100)
    """The latest request is kept verbatim up to this many characters."""
    finding_chars: int = Field(2_000, ge=100)
    """Characters of one subagent's report kept as a finding (:func:`conclusions`)."""
    max_findings_chars: int = Field(8_000, ge=100)
    """Characters of findings kept in all (the newest reports first)."""
    max_user_chars: int = Field(6_000, ge=100)
    """Characters of earlier typed user messages kept verbatim (the newest first)."""
    max_constraint_chars: int = Field(3_000, ge=100)
    """Characters of the user's constraint sentences kept verbatim, after the goal."""

    def summarise(
        self, messages: Sequence[Message], facts: CallFacts, /, *, instructions: str | None = None
    ) -> Summary:
        walk = _Walk(self)
        for message in messages:
            walk.message(message)
        return Summary(text=walk.render(len(messages)), usage=None, model=None)


__all__ = ["SECTIONS", "SUMMARY_CLOSE", "SUMMARY_OPEN", "ExtractiveSummariser"]
