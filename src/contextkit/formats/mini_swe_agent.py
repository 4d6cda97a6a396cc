"""Reader for mini-swe-agent trajectories (``*.traj.json``, ``SWE-agent/mini-swe-agent``).

Shapes read:

- the saved trajectory: ``{"info": {...}, "messages": [...], "trajectory_format":
  "mini-swe-agent-1" | "mini-swe-agent-1.1"}`` where ``info`` holds ``model_stats``
  (``instance_cost``, ``api_calls``: totals only), ``config`` (with ``model.model_name``),
  ``mini_version``, ``exit_status``, ``submission``;
- a bare list of messages (as in mini-swe-agent's own test data).

Messages are OpenAI chat messages (text-based agents put the bash command in the assistant text;
tool-call models use ``tool_calls`` and ``tool`` results) with an ``extra`` field that
mini-swe-agent strips before each request. On assistant messages ``extra.response`` is the raw
litellm response: its ``usage`` gives the call's usage, its ``model`` the model, its
``choices[0].finish_reason`` the stop reason; ``extra.timestamp`` the time. ``role: "exit"``
messages (2.x) record how the run ended and were never sent: they are set aside.

What counts as a call: each assistant message is one model call; its request is every message
before it, ``extra`` left out (rebuilt, ``exact=False``). Format-error retries appear as an
assistant message followed by the error as a user message, so each is a call as well. The system
prompt is in the file (``prefix_known=True`` when there is a system message). OpenAI Responses API
items (mini-swe-agent's response-API models) are not chat messages and are reported as errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextkit.errors import FormatError
from contextkit.formats._io import Skips
from contextkit.formats._trajectory import (
    Reply,
    as_int,
    as_str,
    calls_from_messages,
    load_doc,
    parse_chat,
    parse_time,
    peek,
    usage_from_litellm,
)
from contextkit.session import LoadedFile, Session

NAME = "mini-swe-agent"
_MARKERS = (
    "mswea_bash_command",
    "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
    "MINI_SWE_AGENT_FINAL_OUTPUT",
    '"mini_version"',
    '"trajectory_format": "mini-swe-agent',
)
_SET_ASIDE_ROLES = ("exit",)


class MiniSweAgentReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        marked = path.name.endswith(".traj.json") or any(m in head for m in _MARKERS)
        if seen.kind == "object":
            format_name = str(seen.scalars.get("trajectory_format", ""))
            if format_name.startswith("mini-swe-agent"):
                return True
            has_messages = "role" in seen.first_keys.get("messages", ())
            return has_messages and "info" in seen.keys and marked
        # A bare message list is any chat dump: only with mini-swe-agent's markers.
        return seen.kind == "list" and "role" in seen.keys and marked

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        doc = load_doc(path)
        skips = Skips(path, lenient)
        value = doc.value
        keys: tuple[str, ...]
        info: object
        if isinstance(value, list):
            raws, keys, info = value, (), None
        elif _is_saved_run(value):
            raws, keys, info = value["messages"], ("messages",), value.get("info")
        else:
            raise FormatError(path, "expected a list of messages or an object with 'messages'", 1)
        lines = doc.element_lines(*keys)
        sent, set_aside = _split_sent(raws)
        transcript = parse_chat(
            [_without_extra(raws[i]) for i in sent], [_at(lines, i) for i in sent], skips
        )
        model = _config_model(info)
        replies = [
            _reply(raws[sent[r]], m, _at(lines, sent[r]), model) for m, r in transcript.responses
        ]
        calls = calls_from_messages(transcript.messages, replies, system=transcript.system)
        session = Session(
            path=str(path),
            format=NAME,
            session_id=path.name.removesuffix(".json").removesuffix(".traj"),
            calls=calls,
            prefix_known=transcript.system is not None,
            set_aside={"exit": set_aside} if set_aside else {},
            notes=tuple(_notes(info, calls, transcript.system is not None)),
        )
        return LoadedFile(
            path=str(path), format=NAME, sessions=(session,), skipped=tuple(skips.records)
        )


def _is_saved_run(value: object) -> bool:
    """``{"info", "messages", "trajectory_format"}`` as ``save_traj`` / ``Agent.save`` write it."""
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    format_name = value.get("trajectory_format")
    return "info" in value or (isinstance(format_name, str) and format_name.startswith("mini"))


def _at(lines: tuple[int, ...], index: int) -> int | None:
    return lines[index] if index < len(lines) else None


def _split_sent(raws: list[Any]) -> tuple[list[int], int]:
    """Indices of the messages that were sent to the model, and how many were set aside."""
    sent = [
        i
        for i, raw in enumerate(raws)
        if not (isinstance(raw, Mapping) and raw.get("role") in _SET_ASIDE_ROLES)
    ]
    return sent, len(raws) - len(sent)


def _without_extra(raw: object) -> object:
    if isinstance(raw, Mapping):
        if "role" not in raw and "type" in raw:
            # Responses API items: say what they are rather than "unknown role None".
            return {"role": f"<Responses API item {raw.get('type')!r}: not supported>"}
        return {k: v for k, v in raw.items() if k != "extra"}
    return raw


def _reply(raw: Mapping[str, Any], index: int, line: int | None, model: str | None) -> Reply:
    extra = raw.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    response = extra.get("response")
    response = response if isinstance(response, Mapping) else {}
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    finish = first.get("finish_reason") if isinstance(first, Mapping) else None
    return Reply(
        index=index,
        line=line,
        model=as_str(response.get("model")) or model,
        usage=usage_from_litellm(response.get("usage")),
        timestamp=parse_time(extra.get("timestamp")),
        finish_reason=as_str(finish),
        request_id=as_str(response.get("id")),
    )


def _config_model(info: object) -> str | None:
    config = info.get("config") if isinstance(info, Mapping) else None
    model = config.get("model") if isinstance(config, Mapping) else None
    return as_str(model.get("model_name")) if isinstance(model, Mapping) else None


def _notes(info: object, calls: tuple[Any, ...], has_system: bool) -> list[str]:
    notes: list[str] = []
    if not has_system:
        notes.append("the trajectory has no system message")
    if not any(c.usage for c in calls):
        notes.append("no per-call usage in this file (assistant messages carry no extra.response)")
    stats = info.get("model_stats") if isinstance(info, Mapping) else None
    if isinstance(stats, Mapping):
        api_calls = as_int(stats.get("api_calls"))
        notes.append(f"info.model_stats: api_calls={api_calls}, cost={stats.get('instance_cost')}")
    return notes


READER = MiniSweAgentReader()

__all__ = ["READER", "MiniSweAgentReader"]
