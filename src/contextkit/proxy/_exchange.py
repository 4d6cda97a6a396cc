"""One exchange through the proxy: what came in, what went out, what came back, and its record.

An :class:`Exchange` is filled in as the exchange goes (request, forwarded body, status, the
response bytes as they stream past) and :meth:`Exchange.finish` runs exactly once, whatever
happened (answered, upstream error or timeout, stream cut, client gone): it reassembles the
response, prices it, writes the record line and returns the console line.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contextkit.proxy._apis import MODEL_APIS, Api, Assembled, assemble, usage_of
from contextkit.proxy._conversations import Conversations, Edit
from contextkit.proxy._record import RECORD_VERSION, RecordWriter
from contextkit.proxy._stats import Stats, console_line


@dataclass
class Exchange:
    api: Api | None
    method: str
    path: str
    conversation: str
    request_headers: dict[str, str]
    request: Any
    """The body as received (JSON value, or the text when it is not JSON)."""
    streamed: bool = False
    forwarded: Any = None
    would_forward: Any = None
    edit: Edit | None = None
    edit_error: str | None = None
    dry_run: bool = False
    lane: int | None = None
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    error: str | None = None
    client_gone: bool = False
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    started_at: float = field(default_factory=time.time)
    t0: float = field(default_factory=time.perf_counter)
    ttfb_ms: float | None = None
    done: bool = False
    _response: tuple[int, str, Assembled | None] | None = field(default=None, repr=False)

    def headers_arrived(self, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        self.response_headers = dict(headers)
        self.ttfb_ms = (time.perf_counter() - self.t0) * 1000

    def response(self) -> tuple[str, Assembled | None]:
        """The response as text and reassembled (None before any status), computed once for the
        chunks received so far (the stream's end check and the record share it)."""
        if self._response is None or self._response[0] != len(self.chunks):
            text = b"".join(self.chunks).decode("utf-8", errors="replace")
            api: Api = self.api if self.api is not None else "anthropic"
            assembled = assemble(api, text, self.streamed) if self.status else None
            self._response = (len(self.chunks), text, assembled)
        return self._response[1], self._response[2]

    def finish(
        self, writer: RecordWriter | None, stats: Stats, conversations: Conversations | None
    ) -> str | None:
        """Record the exchange once; the console line for a model call (None for others)."""
        if self.done:
            return None
        self.done = True
        text, assembled = self.response()
        model_call = self.api in MODEL_APIS
        api: Api = self.api if self.api is not None else "anthropic"
        body = assembled.body if assembled else None
        complete = bool(assembled and assembled.complete) and self.error is None
        complete = complete and not self.client_gone
        usage = usage_of(api, body) if self.status == 200 and model_call else None
        model = _model(body, self.forwarded if self.forwarded is not None else self.request)
        cost: float | None = None
        line: str | None = None
        if model_call:
            edited = bool(self.edit and any(r.action != "reset" for r in self.edit.receipts))
            cost, so_far = stats.add(
                self.conversation,
                model,
                usage,
                status=self.status,
                complete=complete,
                edited=edited and not self.dry_run,
            )
            note = self.error or ("incomplete" if not complete else "")
            line = console_line(self.conversation, model, usage, cost, so_far, self.status, note)
            if conversations is not None and self.lane is not None and complete and usage:
                stop = body.get("stop_reason") if isinstance(body, Mapping) else None
                conversations.answered(
                    self.conversation, self.lane, usage, stop if isinstance(stop, str) else None,
                    model,
                )  # fmt: skip
        if writer is not None:
            notes = list(assembled.notes) if assembled else []
            events = assembled.events if assembled else 0
            record = self._record(body, complete, usage, cost, notes, text, events)
            writer.write(record)
        return line

    def _record(
        self,
        body: Any,
        complete: bool,
        usage: Any,
        cost: float | None,
        notes: list[str],
        text: str,
        events: int,
    ) -> dict[str, Any]:
        error = self.error or ("client disconnected" if self.client_gone else None)
        response: Any = body
        if response is None and text and not self.streamed:
            response = text[:100_000]  # a body that is not JSON, kept as text
        record: dict[str, Any] = {
            "contextkit_proxy": RECORD_VERSION,
            "id": self.id,
            "conversation": self.conversation,
            "api": self.api or "other",
            "method": self.method,
            "path": self.path,
            "started_at": self.started_at,
            "ttfb_ms": None if self.ttfb_ms is None else round(self.ttfb_ms, 3),
            "duration_ms": round((time.perf_counter() - self.t0) * 1000, 3),
            "status": self.status or None,
            "complete": complete,
            "error": error,
            "streamed": self.streamed,
            "events": None,
            "request_headers": self.request_headers,
            "response_headers": self.response_headers,
            "request": self.request,
            # The same body twice would double every record: null says "as received".
            "forwarded": None if self.forwarded is self.request else self.forwarded,
            "response": response,
            "usage": usage.model_dump() if usage is not None else None,
            "cost_usd": cost,
            "notes": notes,
        }
        if self.streamed:
            record["events"] = events
        if self.edit is not None or self.edit_error is not None:
            record["edit"] = {
                "dry_run": self.dry_run,
                "applied": not self.dry_run and self.edit is not None,
                "summary": self.edit.summary() if self.edit else None,
                "error": self.edit_error,
                "reset": self.edit.reset if self.edit else False,
                "lane": self.edit.lane if self.edit else None,
                "receipts": [r.model_dump() for r in self.edit.receipts] if self.edit else [],
            }
            if self.dry_run:
                record["would_forward"] = self.would_forward
        return record


def _model(body: Any, request: Any) -> str | None:
    for value in (body, request):
        if isinstance(value, Mapping) and isinstance(value.get("model"), str):
            return str(value["model"])
    return None


__all__ = ["Exchange"]
