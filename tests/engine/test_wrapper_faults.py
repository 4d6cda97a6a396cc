"""Streams that fail mid-way, through both wrappers: nothing is recorded, the prepared call stays
pending, and passing the same history again retries it. The first answer of each server below is
a stream cut short; the rest come from the ordinary fake servers."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

import anthropic
import openai
import pytest

from contextkit.engine.anthropic import wrap as wrap_anthropic
from contextkit.engine.openai import wrap as wrap_openai
from contextkit.testing._fake_http import Answer, handler_for
from contextkit.testing.fake_anthropic import FakeAnthropic, Reply
from contextkit.testing.fake_openai import FakeOpenAI
from contextkit.wire import chat_chunks, stream_events, to_openai_sse, to_sse

TASK: Any = {"role": "user", "content": "Fix the failing test."}
ANSWER = Reply.text("word " * 200)


@contextmanager
def _first_cut(fake: FakeAnthropic | FakeOpenAI, cut: Callable[[Answer], Answer]) -> Iterator[str]:
    """A server whose first answer is ``cut(fake's answer)``, then ``fake``'s own answers."""
    calls = 0

    def handle(path: str, raw: str, headers: Mapping[str, str], method: str) -> Answer:
        nonlocal calls
        calls += 1
        answer = fake.handle(path, raw, headers, method)
        return cut(answer) if calls == 1 else answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(handle))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _anthropic_error_midway(answer: Answer) -> Answer:
    events = stream_events(answer.body)[:5]
    events.append({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    return Answer(200, answer.body, sse=to_sse(events))


def test_an_anthropic_stream_that_errors_midway_records_nothing() -> None:
    fake = FakeAnthropic([ANSWER, ANSWER])
    with fake, _first_cut(fake, _anthropic_error_midway) as url:
        sdk = anthropic.Anthropic(base_url=url, api_key="test", max_retries=0)
        client = wrap_anthropic(sdk, None)
        with (
            pytest.raises(anthropic.APIStatusError, match="Overloaded"),
            client.messages.stream(model="claude-sonnet-4-6", max_tokens=500, messages=[TASK]) as s,
        ):
            s.get_final_message()
        engine = client.engine
        assert engine.calls == ()
        assert engine.pending is not None
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=500, messages=[TASK]
        ) as stream:
            message = stream.get_final_message()
        assert len(engine.calls) == 1
        assert [m.role for m in engine.tape] == ["user", "assistant"]
    assert message.content[0].type == "text"
    assert fake.requests[0].body == fake.requests[1].body


def _chat_cut_before_the_end(answer: Answer) -> Answer:
    chunks = chat_chunks(answer.body)[:3]  # no finish_reason, no [DONE]: the connection ends
    return Answer(
        200, answer.body, sse=to_openai_sse(chunks, named=False).replace("data: [DONE]", "")
    )


def test_an_openai_stream_cut_before_its_finish_records_nothing() -> None:
    fake = FakeOpenAI([ANSWER, ANSWER])
    with fake, _first_cut(fake, _chat_cut_before_the_end) as url:
        sdk = openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0)
        client = wrap_openai(sdk, None)
        partial = list(
            client.chat.completions.create(model="gpt-5.1", messages=[TASK], stream=True)
        )
        assert 0 < len(partial) < 10
        engine = client.engine
        assert engine.calls == ()
        assert engine.pending is not None
        whole = list(client.chat.completions.create(model="gpt-5.1", messages=[TASK], stream=True))
        assert whole[-1].choices[0].finish_reason == "stop"
        assert len(engine.calls) == 1
        assert engine.calls[0].stop_reason == "end_turn"
    assert fake.requests[0].body == fake.requests[1].body
