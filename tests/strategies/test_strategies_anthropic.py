"""AnthropicSummariser through the real ``anthropic`` SDK against a local HTTP server (no mocks)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import pytest
from strategy_support import (
    assistant,
    call,
    coding_session,
    filler,
    is_valid,
    result,
    thinking,
    user,
)

from contextkit.errors import ContextkitError
from contextkit.messages import Conversation, Message, TextBlock, Tool, to_payload
from contextkit.session import Usage
from contextkit.strategies import AnthropicSummariser, CallFacts, ReplaceWithSummary
from contextkit.strategies._summarisers import SECTIONS, SUMMARY_OPEN

REPLY = "## User requests\n- fix src/orders/service.py\n## Errors\n- ValueError in compute_total"


class _Server:
    """A fake Messages endpoint: records request bodies, answers with a canned message."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = status
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["content-length"])
                server.bodies.append(json.loads(self.rfile.read(length)))
                if server.status != 200:
                    payload: dict[str, Any] = {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "bad model"},
                    }
                else:
                    payload = {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": server.bodies[-1]["model"],
                        "content": [{"type": "text", "text": REPLY}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": 1200,
                            "output_tokens": 80,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0,
                        },
                    }
                data = json.dumps(payload).encode()
                self.send_response(server.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> _Server:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[_Server]:
    with _Server() as s:
        yield s


def _client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)


def test_summary_through_sdk(server: _Server) -> None:
    summariser = AnthropicSummariser(
        model="claude-haiku-4-5", client=_client(server.url), instructions="Keep file paths."
    )
    view = coding_session(rounds=3, result_chars=5_000, turns=3)
    out = ReplaceWithSummary(summariser, keep_last_turns=1)(view, CallFacts())
    body = server.bodies[0]
    assert body["model"] == "claude-haiku-4-5"
    assert all(f"## {name}" in body["system"] for name in SECTIONS)
    prompt = body["messages"][0]["content"]
    assert "Keep file paths." in prompt
    assert "[tool result" in prompt
    assert "more characters" in prompt  # long results are truncated in the prompt
    summary = out.view.messages[0].blocks[1]
    assert isinstance(summary, TextBlock)
    assert summary.text.startswith(SUMMARY_OPEN)
    assert "ValueError in compute_total" in summary.text
    receipt = out.receipts[0]
    assert receipt.usage == Usage(input_tokens=1200, output_tokens=80)
    assert receipt.model == "claude-haiku-4-5"
    assert is_valid(out.view)


def test_api_error_becomes_contextkit_error() -> None:
    with _Server(status=400) as bad:
        summariser = AnthropicSummariser(client=_client(bad.url))
        view = coding_session(rounds=1, result_chars=100, turns=3)
        with pytest.raises(ContextkitError, match="summary call"):
            ReplaceWithSummary(summariser, keep_last_turns=1)(view, CallFacts())


def test_client_is_not_part_of_the_config(server: _Server) -> None:
    summariser = AnthropicSummariser(client=_client(server.url))
    assert "client" not in summariser.model_dump()


def _one_prompt(rounds: int, chars: int) -> Conversation:
    messages: list[Message] = [user("Port the billing module.")]
    for i in range(rounds):
        messages += [
            assistant(thinking(f"step {i}"), call(f"t{i}", "Read", file_path=f"src/m{i}.py")),
            user(result(f"t{i}", filler(chars, seed=i))),
        ]
    tools = (Tool(name="Read", input_schema={"type": "object"}),)
    return Conversation(system="You are a coding agent.", tools=tools, messages=tuple(messages))


def test_summary_replays_the_view_so_it_reads_the_cached_prefix(server: _Server) -> None:
    summariser = AnthropicSummariser(client=_client(server.url))
    view = _one_prompt(rounds=8, chars=3_000)
    facts = CallFacts(model="claude-opus-4-6")
    out = ReplaceWithSummary(summariser, keep_last_rounds=2)(view, facts)
    body = server.bodies[0]
    sent = to_payload(view)
    assert body["model"] == "claude-opus-4-6"  # the conversation's model: its cache
    assert body["system"] == sent["system"]
    assert body["tools"] == sent["tools"]
    assert body["messages"][:-1] == sent["messages"][:-1]  # the same prefix, byte for byte
    last = body["messages"][-1]
    assert last["content"][:-1] == [
        *sent["messages"][-1]["content"][:-1],
        {**sent["messages"][-1]["content"][-1], "cache_control": {"type": "ephemeral"}},
    ]
    ask = last["content"][-1]
    assert ask["type"] == "text"
    assert ask["text"].startswith("Stop the task here")
    assert all(f"## {name}" in ask["text"] for name in SECTIONS)
    head = out.view.messages[0]
    assert isinstance(head.blocks[0], TextBlock)
    assert head.blocks[0].text.startswith(SUMMARY_OPEN)
    assert head.blocks[1:] == view.messages[0].blocks
    assert out.receipts[0].usage == Usage(input_tokens=1200, output_tokens=80)
    assert is_valid(out.view)


def test_a_discarded_live_summary_is_billed_on_its_receipt(server: _Server) -> None:
    summariser = AnthropicSummariser(client=_client(server.url), reuse_prefix=False)
    view = Conversation(  # the round cut is smaller than any summary
        messages=(
            user("Go."),
            assistant(call("a", "R")),
            user(result("a", "ok")),
            assistant(call("b", "R")),
            user(result("b", "ok")),
        )
    )
    out = ReplaceWithSummary(summariser, keep_last_rounds=1)(view, CallFacts(model="m"))
    assert server.bodies[0]["model"] == "claude-haiku-4-5"  # a fresh transcript, as asked
    assert out.view is view
    assert [(r.action, r.usage) for r in out.receipts] == [
        ("summary_discarded", Usage(input_tokens=1200, output_tokens=80))
    ]
