"""A deterministic generator of realistic coding-agent sessions: contextkit's own built-in example.

No third-party data: every byte comes from this module and a seed. A generated session looks like
what a coding harness records: a system prompt and tool schemas, a few user turns, each worked
through by many model calls that read files, run tests and search (large tool results), sometimes
several tools in parallel, an occasional thinking block, and a final answer per turn. Later
responses quote identifiers, paths, numbers and error strings that earlier tool results showed, so
a strategy that drops them can be scored on what it lost.

``generate_session(ExampleSpec(...))`` returns a :class:`Session` whose calls carry exact requests
(``exact=True``), responses, timestamps and stop reasons, and no recorded usage (none was billed).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from contextkit.messages import (
    Block,
    Conversation,
    Message,
    TextBlock,
    ThinkingBlock,
    Tool,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.session._model import Call, Session

_MODULES = ("orders", "billing", "inventory", "shipping", "accounts", "search", "reports", "auth")
_NOUNS = ("order", "invoice", "item", "parcel", "user", "query", "report", "token", "refund")
_VERBS = ("parse", "load", "validate", "compute", "render", "apply", "merge", "resolve", "sync")
_ERRORS = (
    "KeyError: 'currency'",
    "AssertionError: expected 1250 but got 1205",
    "TypeError: unsupported operand type(s) for +: 'int' and 'NoneType'",
    "ValueError: invalid literal for int() with base 10: 'N/A'",
    "AttributeError: 'NoneType' object has no attribute 'items'",
    "ZeroDivisionError: division by zero",
)
_TASKS = (
    "The test suite fails on the {m} module since yesterday's merge. Find out why and fix it.",
    "Add a `--dry-run` flag to the {m} export command and cover it with tests.",
    "Refactor {m}/service.py: the {n} pricing logic is duplicated in three places.",
    "Update the docs for the {m} API and make sure the examples still run.",
    "Profile the {m} batch job; it got twice as slow. Propose and apply a fix.",
    "Review the open TODOs in the {m} package and resolve the ones that are bugs.",
)

SYSTEM_PROMPT_PARAGRAPH = (
    "You are a careful coding agent working in a Python repository. Read before you edit, run the "
    "tests after every change, keep changes minimal, and explain what you did. Never invent file "
    "contents: read them. Prefer small, reviewable diffs. When a command fails, read the error "
    "and the relevant code before retrying. Do not run destructive commands without asking. "
)


class ExampleSpec(BaseModel):
    """Knobs of the generated session; the defaults give about 150 calls over 4 user turns."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int = Field(150, ge=1)
    user_turns: int = Field(4, ge=1)
    seed: int = 7
    result_scale: float = Field(1.0, gt=0)
    """Multiplies the size of every tool result."""
    parallel_share: float = Field(0.25, ge=0, le=1)
    """Share of calls that request two or three tools at once."""
    thinking_share: float = Field(0.15, ge=0, le=1)
    model: str = "claude-sonnet-4-5-20250929"
    start: datetime = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    seconds_between_calls: tuple[float, float] = (4.0, 40.0)
    pause_between_turns_s: float = 900.0
    """A pause longer than the 5-minute cache TTL, as when a person reads the answer."""


@dataclass
class _World:
    """The repository the agent works in: what its tools show, and what it has seen so far."""

    rng: random.Random
    scale: float
    seen: list[str] = field(default_factory=list)
    counter: int = 0

    def ident(self) -> str:
        self.counter += 1
        return f"{self.rng.choice(_VERBS)}_{self.rng.choice(_NOUNS)}_{self.counter}"

    def path(self) -> str:
        mod = self.rng.choice(_MODULES)
        leaf = self.rng.choice(("service", "models", "api", "utils", "tasks", "schema"))
        return f"src/{mod}/{leaf}.py"

    def lines(self, base: int) -> int:
        return max(3, int(base * self.scale * self.rng.uniform(0.5, 1.5)))

    def remember(self, *facts: str) -> None:
        self.seen.extend(facts)


def _file_body(world: _World, path: str) -> str:
    out = [f'"""{path}: generated module."""', "", "from decimal import Decimal", ""]
    for _ in range(world.lines(14)):
        name = world.ident()
        arg = world.rng.choice(_NOUNS)
        value = world.rng.randint(10, 9999)
        out += [
            f"def {name}({arg}, rate=Decimal('{value / 100:.2f}')):",
            f'    """Return the {arg} total for {name.split("_")[0]}ing."""',
            f"    if {arg} is None:",
            f"        raise ValueError('missing {arg} in {name}')",
            f"    return {arg}.amount * rate + {value}",
            "",
        ]
        world.remember(name)
    return "\n".join(out)


def _test_log(world: _World, module: str) -> tuple[str, str]:
    error = world.rng.choice(_ERRORS)
    failing = f"tests/test_{module}.py::test_{world.ident()}"
    passed = world.rng.randint(40, 400)
    out = [f"============ test session starts ============ (seed {world.rng.randint(1, 99999)})"]
    for _ in range(world.lines(40)):
        out.append(f"tests/test_{module}.py::test_{world.ident()} PASSED")
    out += ["", "================= FAILURES =================", f"_____ {failing} _____"]
    for _ in range(world.lines(12)):
        out.append(f'  File "{world.path()}", line {world.rng.randint(5, 900)}, in {world.ident()}')
    out += [f"E   {error}", f"FAILED {failing} - {error}", f"1 failed, {passed} passed"]
    world.remember(failing, error)
    return "\n".join(out), f"{failing} fails with {error}"


def _grep_output(world: _World, needle: str) -> str:
    out = []
    for _ in range(world.lines(25)):
        path = world.path()
        out.append(f"{path}:{world.rng.randint(1, 700)}:    total = {needle}(order) + fee")
        world.remember(path)
    return "\n".join(out)


def _tool_call(world: _World, module: str, call_id: str) -> tuple[ToolUseBlock, str, str]:
    """One tool request, its result text, and a one-line finding later responses may quote."""
    kind = world.rng.choices(("Read", "Bash", "Grep", "Edit"), weights=(5, 3, 2, 2))[0]
    if kind == "Read":
        path = world.path()
        body = _file_body(world, path)
        return ToolUseBlock(id=call_id, name="Read", input={"file_path": path}), body, path
    if kind == "Bash":
        log, finding = _test_log(world, module)
        cmd = f"pytest tests/test_{module}.py -x -q"
        return ToolUseBlock(id=call_id, name="Bash", input={"command": cmd}), log, finding
    if kind == "Grep":
        needle = world.seen[-1] if world.seen else world.ident()
        out = _grep_output(world, needle)
        return ToolUseBlock(id=call_id, name="Grep", input={"pattern": needle}), out, needle
    path = world.path()
    old = world.seen[-1] if world.seen else "total"
    edit = {"file_path": path, "old_string": old, "new_string": old + "_fixed"}
    return ToolUseBlock(id=call_id, name="Edit", input=edit), f"Edited {path} (1 change)", path


def _tools() -> tuple[Tool, ...]:
    def schema(**props: str) -> dict[str, object]:
        return {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
            "required": list(props),
        }

    return (
        Tool(
            name="Read",
            description="Read a file from the repository. Returns its text with line numbers.",
            input_schema=schema(file_path="Path of the file, relative to the repository root."),
        ),
        Tool(
            name="Bash",
            description="Run a shell command in the repository and return stdout and stderr.",
            input_schema=schema(command="The command to run."),
        ),
        Tool(
            name="Grep",
            description="Search the repository for a regular expression; returns matching lines.",
            input_schema=schema(pattern="The regular expression to search for."),
        ),
        Tool(
            name="Edit",
            description="Replace an exact string in a file with another string.",
            input_schema=schema(
                file_path="The file to edit.",
                old_string="The exact text to replace.",
                new_string="The replacement text.",
            ),
        ),
    )


def _turn_sizes(spec: ExampleSpec, rng: random.Random) -> list[int]:
    turns = min(spec.user_turns, spec.calls)
    weights = [rng.uniform(0.6, 1.4) for _ in range(turns)]
    sizes = [max(1, round(spec.calls * w / sum(weights))) for w in weights]
    sizes[-1] += spec.calls - sum(sizes)
    while sizes[-1] < 1:  # rounding took too much from the last turn
        big = max(range(turns - 1), key=lambda i: sizes[i])
        sizes[big] -= 1
        sizes[-1] += 1
    return sizes


def _thinking(world: _World, goal: str) -> ThinkingBlock:
    text = f"The user wants: {goal}. Plan: read the code involved, reproduce, fix, re-run tests."
    sig = "".join(world.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(88))
    return ThinkingBlock(thinking=text, signature=sig)


def _response(world: _World, spec: ExampleSpec, goal: str, calls: list[ToolUseBlock]) -> Message:
    blocks: list[Block] = []
    if world.rng.random() < spec.thinking_share:
        blocks.append(_thinking(world, goal))
    if world.seen and world.rng.random() < 0.7:
        quoted = ", ".join(world.rng.sample(world.seen, min(2, len(world.seen))))
        blocks.append(TextBlock(text=f"Noted {quoted}. Next step."))
    blocks.extend(calls)
    return Message(role="assistant", content=tuple(blocks))


def generate_session(spec: ExampleSpec | None = None) -> Session:
    """A seeded, realistic coding-agent session (same spec, same session, byte for byte)."""
    spec = spec or ExampleSpec()
    rng = random.Random(spec.seed)
    world = _World(rng=rng, scale=spec.result_scale)
    base = Conversation(
        model=spec.model,
        system=SYSTEM_PROMPT_PARAGRAPH * 6,
        tools=_tools(),
        max_tokens=8192,
    )
    messages: list[Message] = []
    calls: list[Call] = []
    clock = spec.start
    for turn, size in enumerate(_turn_sizes(spec, rng)):
        module = rng.choice(_MODULES)
        goal = rng.choice(_TASKS).format(m=module, n=rng.choice(_NOUNS))
        messages.append(Message(role="user", content=goal))
        if turn:
            clock += timedelta(seconds=spec.pause_between_turns_s)
        for step in range(size):
            request = base.model_copy(update={"messages": tuple(messages)})
            final = step == size - 1
            if final:
                facts = ", ".join(world.seen[-3:]) or "the code"
                text = f"Done: {goal} Key points: {facts}. All tests pass now."
                response = Message(role="assistant", content=(TextBlock(text=text),))
                stop = "end_turn"
            else:
                width = rng.choice((2, 3)) if rng.random() < spec.parallel_share else 1
                made = [
                    _tool_call(world, module, f"toolu_{turn:02d}{step:03d}{k}")
                    for k in range(width)
                ]
                response = _response(world, spec, goal, [m[0] for m in made])
                stop = "tool_use"
            calls.append(
                Call(
                    request=request,
                    response=response,
                    model=spec.model,
                    timestamp=clock,
                    stop_reason=stop,
                    request_id=f"req_example_{len(calls):04d}",
                    exact=True,
                )
            )
            messages.append(response)
            if not final:
                results = tuple(
                    ToolResultBlock(tool_use_id=use.id, content=text) for use, text, _ in made
                )
                messages.append(Message(role="user", content=results))
            clock += timedelta(seconds=rng.uniform(*spec.seconds_between_calls))
    return Session(
        path=f"<example seed={spec.seed}>",
        format="example",
        session_id=f"example-{spec.seed}",
        calls=tuple(calls),
        notes=(
            "generated by contextkit.session.examples (the project's own data; nothing was billed)",
        ),
    )


__all__ = ["ExampleSpec", "generate_session"]
