"""Reader for OpenHands evaluation and resolver output (``output.jsonl``, one instance a line).

``evaluation/benchmarks/*/run_infer.py`` (SWE-bench, Multi-SWE-bench, ...) and the resolver write
one ``EvalOutput`` per line: ``instance_id``, ``instruction``, ``metadata`` (``llm_config.model``,
``agent_class``, ``max_iterations``, ...), ``history`` (the serialized events of the run, the same
events an OpenHands trajectory file holds), ``metrics`` (``accumulated_cost``,
``accumulated_token_usage``, ``token_usages`` per response), ``error`` and ``test_result``.

Each line is one :class:`Session` (``session_id`` is the ``instance_id``); its events are read by
:class:`~contextkit.formats.openhands._events.EventStream`, exactly as
:mod:`contextkit.formats.openhands` reads a trajectory file: one call per LLM response
(``tool_call_metadata.model_response``; parallel tool calls of one response are one call), the
request rebuilt from the events before it (``exact=False``), the system prompt and tools from the
``system`` action when the history has one (else ``prefix_known=False``). Usage comes from
``model_response.usage`` (litellm: ``prompt_tokens`` includes the cached part,
``prompt_tokens_details.cached_tokens`` or Anthropic's cache fields split it), else from the
``token_usages`` entry with the response's id (in the event's ``llm_metrics`` or the instance's
``metrics``). The model is the response's (what the provider answered), else the configured
``metadata.llm_config.model``.

Recorded cost: ``metrics.accumulated_cost`` goes into a note (``recorded cost: $x``) beside what
contextkit prices from the usage; litellm records 0 for a model it has no price for, so a recorded
cost of 0 is "unknown", not "free" (the note says so). The run's ``error`` is a note too.

Strict mode fails on the first bad line (not JSON, not an object, no string ``instance_id``, a
``history`` that is not a list) or bad event, naming the file and line; lenient mode skips the line
or the event and lists a :class:`SkippedRecord`. A line whose ``history`` is empty or null (the run
failed before its first step) is a session with no calls and a note. Events of kinds that are not
messages (state changes, recalls, unknown kinds) are counted in ``Session.set_aside``.

Detection: the first line's head is an object with ``instance_id`` and ``history`` whose first
element is an OpenHands event (or which is empty). A first line whose ``instruction`` and
``metadata`` fill the whole 64 KiB head is not detected: pass ``format="openhands-eval"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contextkit.formats._io import Skips, iter_jsonl
from contextkit.formats._trajectory import as_mapping, as_str, peek
from contextkit.formats.openhands._events import EventStream, check_event, is_event
from contextkit.session import LoadedFile, Session

NAME = "openhands-eval"
_ZERO_COST_NOTE = "litellm records 0 for a model it has no price for: read it as unknown"


class OpenHandsEvalReader:
    name = NAME

    def sniff(self, path: Path, head: str) -> bool:
        seen = peek(head)
        if seen.kind != "object" or not {"instance_id", "history"} <= set(seen.keys):
            return False
        first = seen.first_keys.get("history", ())
        return is_event(first) or _empty_history(head)

    def read(self, path: Path, *, lenient: bool = False) -> LoadedFile:
        skips = Skips(path, lenient)
        sessions = []
        for line, record in iter_jsonl(path, skips):
            session = _read_instance(path, line, record, skips)
            if session is not None:
                sessions.append(session)
        return LoadedFile(
            path=str(path), format=NAME, sessions=tuple(sessions), skipped=tuple(skips.records)
        )


def _empty_history(head: str) -> bool:
    """``"history": []`` in the first line (peek cannot tell an empty list from a cut one)."""
    first_line = head.split("\n", 1)[0]
    return '"history": []' in first_line or '"history":[]' in first_line


def _instance_problem(record: Mapping[str, Any]) -> str | None:
    if not isinstance(record.get("instance_id"), str | int):
        return "an evaluation output line needs an 'instance_id'"
    if "history" not in record:
        return "an evaluation output line needs a 'history' (a list of events)"
    if not isinstance(record["history"], list | None):
        return "'history' must be a list of OpenHands events"
    return None


def _read_instance(
    path: Path, line: int, record: Mapping[str, Any], skips: Skips
) -> Session | None:
    problem = _instance_problem(record)
    if problem is not None:
        skips.fail(problem, line)
        return None
    instance = str(record["instance_id"])
    metrics = as_mapping(record.get("metrics"))
    usages = [u for u in metrics.get("token_usages") or () if isinstance(u, Mapping)]
    stream = EventStream(usages=usages, model=_configured_model(record))
    history: list[Any] = record.get("history") or []
    for index, event in enumerate(history):
        problem = check_event(event)
        if problem is not None:
            skips.fail(f"instance {instance}: event {index}: {problem}", line)
            continue
        try:
            stream.add(event, line)
        except ValueError as exc:  # a bad count in the metrics it takes its usage from
            skips.fail(f"instance {instance}: event {index}: {exc}", line)
    return stream.session(path, format=NAME, session_id=instance, notes=_notes(record, metrics))


def _configured_model(record: Mapping[str, Any]) -> str | None:
    llm_config = as_mapping(as_mapping(record.get("metadata")).get("llm_config"))
    return as_str(llm_config.get("model"))


def _notes(record: Mapping[str, Any], metrics: Mapping[str, Any]) -> list[str]:
    notes = []
    if not record.get("history"):
        notes.append("the instance has no history (the run stopped before its first step)")
    cost = metrics.get("accumulated_cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        suffix = f"; {_ZERO_COST_NOTE}" if cost == 0 else ""
        notes.append(f"recorded cost: ${cost:.6f} (OpenHands metrics.accumulated_cost{suffix})")
    error = as_str(record.get("error"))
    if error:
        notes.append(f"the run ended with an error: {error}")
    return notes


READER = OpenHandsEvalReader()

__all__ = ["READER", "OpenHandsEvalReader"]
