"""Token counters: tiktoken, offline fallback, calibrated Claude estimate, counting endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextkit.formats import load
from contextkit.messages import (
    Block,
    Conversation,
    DocumentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    parse_conversation,
)
from contextkit.models import UNKNOWN_MODEL, resolve_model
from contextkit.testing import FixedCounter
from contextkit.tokens import (
    AnthropicCountingCounter,
    ApproxCounter,
    CalibratedCounter,
    FamilyCalibration,
    MemoCounter,
    TiktokenCounter,
    TokenCounter,
    TokenizerUnavailableWarning,
    block_text,
    counter_for,
    default_calibration,
    get_counter,
)
from contextkit.tokens._text import _compact_json, _new_parts, _plain_text
from corpus_paths import readable_corpus_files

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-4-20250514",
    "system": [{"type": "text", "text": "You are a careful coding agent."}],
    "tools": [
        {
            "name": "read_file",
            "description": "Read a file from disk",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ],
    "messages": [
        {"role": "user", "content": "Please read setup.py and tell me the version."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "version='1.2'"}],
        },
    ],
}


@pytest.fixture(scope="module")
def conversation() -> Conversation:
    return parse_conversation(REQUEST)


class CountingTiktoken(TiktokenCounter):
    """Records how often text is actually encoded, to observe memoisation."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.encoded = 0

    def _count_text(self, text: str) -> int:
        self.encoded += 1
        return super()._count_text(text)


def test_tiktoken_counts_known_strings() -> None:
    o200k, cl100k = TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")
    assert o200k.count_text("hello world") == 2
    assert cl100k.count_text("hello world") == 2
    assert o200k.count_text("") == 0
    assert o200k.name == "tiktoken:o200k_base"
    # special-token text in user content is counted as text, not refused
    assert o200k.count_text("<|endoftext|>") > 1


def test_counts_are_memoised_per_block_object(conversation: Conversation) -> None:
    counter = CountingTiktoken()
    first = counter.count_conversation(conversation)
    encoded = counter.encoded
    assert counter.count_conversation(conversation) == first
    assert counter.encoded == encoded  # second pass: every block, message and tool from the memo
    longer = conversation.append(
        parse_conversation({"messages": [{"role": "user", "content": "ok"}]}).messages[0]
    )
    counter.count_conversation(longer)
    assert counter.encoded == encoded + 1  # only the new message is encoded


@pytest.mark.parametrize(
    "counter",
    [ApproxCounter(), TiktokenCounter(), counter_for(resolve_model("claude-sonnet-4-5"))],
    ids=["approx", "tiktoken", "calibrated"],
)
def test_every_counter_satisfies_the_protocol(counter: TokenCounter) -> None:
    assert isinstance(counter, TokenCounter)
    assert counter.count_block(TextBlock(text="some words here")) > 0


def test_unknown_encoding_warns_once_and_falls_back() -> None:
    with pytest.warns(TokenizerUnavailableWarning, match="no_such_encoding"):
        counter = get_counter("no_such_encoding")
    assert isinstance(counter, ApproxCounter)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(get_counter("no_such_encoding"), ApproxCounter)  # no second warning


def test_an_encoding_that_cannot_load_is_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline, each try is a failed download: a folder of sessions must not pay it per session."""
    import tiktoken  # noqa: PLC0415

    tries: list[str] = []

    def failing(name: str) -> None:
        tries.append(name)
        raise OSError("no network")

    monkeypatch.setattr(tiktoken, "get_encoding", failing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counters = [get_counter("tried_once_encoding") for _ in range(5)]
    assert all(isinstance(c, ApproxCounter) for c in counters)
    assert tries == ["tried_once_encoding"]


FALLBACK_SCRIPT = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from contextkit.models import resolve_model
    from contextkit.tokens import counter_for, default_counter, get_counter
    names = [default_counter().name, get_counter("o200k_base").name,
             counter_for(resolve_model("claude-sonnet-4")).name,
             counter_for(resolve_model("gpt-4o")).name]
print(json.dumps({"names": names,
                  "warnings": [(w.category.__name__, str(w.message)) for w in caught]}))
"""


def test_no_encoding_offline_falls_back_with_one_clear_warning(tmp_path: Path) -> None:
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path))
    # An unusable proxy makes the download fail fast even on a machine with internet access.
    env |= {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", FALLBACK_SCRIPT],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["names"] == ["approx:4chars"] * 4
    categories = [c for c, _ in report["warnings"]]
    assert categories == ["TokenizerUnavailableWarning"]  # once, though asked four times
    assert "TIKTOKEN_CACHE_DIR" in report["warnings"][0][1]


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("claude-sonnet-4-20250514", "calibrated:claude-sonnet-4-20250514 (o200k x"),
        ("anthropic/claude-3-5-haiku-20241022", "calibrated:anthropic/claude-3-5-haiku-20241022"),
        ("gpt-4o-2024-08-06", "tiktoken:o200k_base"),
        ("gpt-4", "tiktoken:cl100k_base"),
        ("llama-3-70b", "approx:4chars"),
        (None, "approx:4chars"),
    ],
)
def test_counter_for_says_which_counter(model: str | None, name: str) -> None:
    assert counter_for(resolve_model(model)).name.startswith(name)


def test_unfitted_family_says_so() -> None:
    assert counter_for(resolve_model("claude-opus-4-7")).name.endswith(", not fitted)")
    assert "not fitted" not in counter_for(resolve_model("claude-sonnet-4")).name


def test_calibrated_total_follows_the_formula(conversation: Conversation) -> None:
    counter = counter_for(resolve_model("claude-sonnet-4-20250514"))
    assert isinstance(counter, CalibratedCounter)
    params = default_calibration().for_model(resolve_model("claude-sonnet-4"))
    assert params is not None
    assert params is counter.params
    raw = TiktokenCounter()
    base = (
        sum(raw.count_message(m) - raw.per_message for m in conversation.messages)
        + sum(raw.count_tool(t) - raw.per_tool for t in conversation.tools)
        + raw.count_system(conversation)
    )
    expected = (
        params.factor * base
        + params.per_message * len(conversation.messages)
        + params.per_tool * len(conversation.tools)
        + params.per_tool_block * 2  # one tool_use and one tool_result
        + params.fixed
        + resolve_model("claude-sonnet-4-20250514").tool_overhead(None)
    )
    # parts are rounded one by one: allow one token per part
    assert abs(counter.count_conversation(conversation) - expected) <= 10


def test_tool_blocks_and_thinking_follow_their_own_parameters() -> None:
    params = FamilyCalibration(
        family="claude-4.5",
        factor=1.1,
        per_message=4,
        per_tool=0,
        fixed=0,
        per_tool_block=30,
        thinking_factor=2.0,
        fitted=True,
    )
    raw = TiktokenCounter()
    counter = CalibratedCounter(raw, params, resolve_model("claude-opus-4-6"))
    text = "The quick brown fox jumps over the lazy dog. " * 20
    n = raw.count_text(text)
    assert counter.count_block(TextBlock(text=text)) == round(1.1 * n)
    assert counter.count_block(ThinkingBlock(thinking=text, signature="s")) == round(2.0 * n)
    use = ToolUseBlock(id="t1", name="Read", input={"path": text})
    assert counter.count_block(use) == round(1.1 * raw.count_block(use)) + 30
    result = ToolResultBlock(tool_use_id="t1", content=text)
    assert counter.count_block(result) == round(1.1 * n) + 30
    plain = CalibratedCounter(
        raw, params.model_copy(update={"thinking_factor": None}), UNKNOWN_MODEL
    )
    assert plain.count_block(ThinkingBlock(thinking=text)) == round(1.1 * n)  # None: factor


def test_tool_choice_any_changes_the_hidden_prompt(conversation: Conversation) -> None:
    model = "claude-3-5-haiku-20241022"
    forced = conversation.model_copy(update={"tool_choice": {"type": "any"}})
    auto = counter_for(resolve_model(model)).count_conversation(conversation)
    any_ = counter_for(resolve_model(model)).count_conversation(forced)
    assert (
        any_ - auto
        == resolve_model(model).tool_overhead("any") - resolve_model(model).tool_overhead("auto")
        == 76
    )
    no_tools = conversation.model_copy(update={"tools": ()})
    assert counter_for(resolve_model(model)).count_conversation(no_tools) < auto - 264


# --- the counting endpoint, through the real SDK against a local server -----------------------


def served_count(messages: object, tools: object = ()) -> int:
    """What the local server answers: 1 token per 4 characters of the JSON."""
    return (len(json.dumps(messages)) + len(json.dumps(list(tools)))) // 4  # type: ignore[call-overload]


class CountingServer:
    """A local stand-in for POST /v1/messages/count_tokens: 1 token per 4 bytes of JSON."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["content-length"])
                body = json.loads(self.rfile.read(length))
                server.bodies.append({"path": self.path, **body})
                count = served_count(body.get("messages"), body.get("tools", []))
                payload = json.dumps({"input_tokens": count}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"


@pytest.fixture
def server() -> Iterator[CountingServer]:
    srv = CountingServer()
    thread = threading.Thread(target=srv.httpd.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    thread.join()


def _client(server: CountingServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)


def test_counting_endpoint_gets_the_whole_request(
    server: CountingServer, conversation: Conversation
) -> None:
    counter = AnthropicCountingCounter("claude-sonnet-4-5", client=_client(server))
    total = counter.count_conversation(conversation)
    sent = server.bodies[0]
    assert sent["path"].startswith("/v1/messages/count_tokens")
    assert sent["model"] == "claude-sonnet-4-5"
    assert sent["system"] == REQUEST["system"]
    assert sent["tools"] == REQUEST["tools"]
    assert sent["messages"] == REQUEST["messages"]
    assert total == served_count(REQUEST["messages"], REQUEST["tools"])
    assert counter.name == "anthropic-count:claude-sonnet-4-5"


def test_counting_endpoint_results_are_cached(
    server: CountingServer, conversation: Conversation, tmp_path: Path
) -> None:
    counter = AnthropicCountingCounter(
        "claude-sonnet-4-5", client=_client(server), cache_dir=tmp_path
    )
    first = counter.count_conversation(conversation)
    assert counter.count_conversation(conversation) == first
    assert len(server.bodies) == 1  # memory cache
    again = AnthropicCountingCounter(
        "claude-sonnet-4-5", client=_client(server), cache_dir=tmp_path
    )
    assert again.count_conversation(conversation) == first
    assert len(server.bodies) == 1  # disk cache
    assert again.requests_made == 0
    other = AnthropicCountingCounter("claude-opus-4-7", client=_client(server), cache_dir=tmp_path)
    other.count_conversation(conversation)
    assert len(server.bodies) == 2  # the model is part of the key


def test_counting_endpoint_parts_subtract_the_framing(server: CountingServer) -> None:
    counter = AnthropicCountingCounter("claude-sonnet-4-5", client=_client(server))
    text = "x" * 400
    framed = served_count([{"role": "user", "content": text}])
    framing = served_count([{"role": "user", "content": "."}]) - 1
    assert counter.count_text(text) == framed - framing
    assert counter.count_block(TextBlock(text=text)) == framed - framing


def test_counting_endpoint_errors_surface(conversation: Conversation) -> None:
    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="test", max_retries=0)
    counter = AnthropicCountingCounter("claude-sonnet-4-5", client=client)
    with pytest.raises(anthropic.APIConnectionError):
        counter.count_conversation(conversation)


def test_counting_a_growing_history_reuses_the_total_and_sees_every_edit() -> None:
    """Totals of histories that extend an earlier one reuse it; any other history is summed
    afresh, so a replaced message in the middle, a shorter history or a sixth thread all count
    exactly as a fresh counter does."""
    memo, fresh = FixedCounter(), FixedCounter
    messages = tuple(Message(role="user", content=f"message {i} " * (i + 1)) for i in range(12))
    histories = [messages[:n] for n in range(1, 13)]
    edited = (*messages[:5], Message(role="user", content="changed " * 50), *messages[6:])
    histories += [edited, messages[:3], messages, *(messages[k:] for k in range(6)), messages]
    for history in histories:
        conversation = Conversation(messages=history)
        assert memo.count_conversation(conversation) == fresh().count_conversation(conversation)


def _every_count(counter: TokenCounter, conversation: Conversation) -> list[int]:
    """Every count a pricing asks for: tools, system, each message and block, the whole."""
    counts = [counter.count_tool(t) for t in conversation.tools]
    counts += [counter.count_block(b) for b in conversation.system_blocks]
    for message in conversation.messages:
        counts.append(counter.count_message(message))
        if not isinstance(message.content, str):
            counts += [counter.count_block(b) for b in message.content]
    counts.append(counter.count_conversation(conversation))
    return counts


def _calibrated() -> CalibratedCounter:
    counter = counter_for(resolve_model("claude-sonnet-4-5"))
    assert isinstance(counter, CalibratedCounter)
    return counter


@pytest.mark.parametrize("make", [TiktokenCounter, ApproxCounter, _calibrated])
def test_priming_changes_no_count_and_encodes_each_text_once(make: Any) -> None:
    """prime() only moves the work: every count after it is what a fresh counter gives, and the
    texts are tokenised in the one pass (counting afterwards encodes nothing new)."""
    conversation = parse_conversation(REQUEST)
    grown = conversation.append(
        Message(role="assistant", content=(TextBlock(text="The version is 1.2."),)),
        Message(role="user", content="Thanks. Now bump it to 1.3 please."),
    )
    other = parse_conversation(REQUEST)  # equal content, other objects: counted as its own
    plain = grown.model_copy(update={"system": "Be brief."})  # a string system prompt
    requests = [conversation, grown, other, plain]
    response = Message(role="assistant", content=(ThinkingBlock(thinking="hm", signature="s"),))
    primed, fresh = make(), make()
    primed.prime(requests, [response, None])
    encoded = len(primed._texts)
    for request in requests:
        assert _every_count(primed, request) == _every_count(fresh, request)
    assert primed.count_message(response) == fresh.count_message(response)
    assert len(primed._texts) == encoded  # nothing left to tokenise after priming


def test_priming_the_counting_endpoint_asks_nothing(server: CountingServer) -> None:
    counter = AnthropicCountingCounter("claude-sonnet-4-5", client=_client(server))
    counter.prime([parse_conversation(REQUEST)])
    assert server.bodies == []


def test_priming_every_corpus_session_changes_no_count(corpus: Path) -> None:
    for path in readable_corpus_files(corpus):
        for session in load(path, lenient=True).sessions:
            requests = [c.request for c in session.calls]
            responses = [c.response for c in session.calls]
            primed, fresh = (
                counter_for(session.model_info),
                counter_for(session.model_info),
            )
            assert isinstance(primed, MemoCounter)
            primed.prime(requests, responses)
            for request in requests:
                got = _every_count(primed, request)
                assert got == _every_count(fresh, request), f"{path}: {session.model}"


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON_VALUES)
def test_compact_json_is_json_dumps(value: Any) -> None:
    """The prebuilt C encoder writes what json.dumps writes with the same options."""
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert _compact_json(value) == expected


def test_priming_counts_every_kind_of_block_as_the_rules_say() -> None:
    """Media, documents, redacted thinking and a tool result holding media: primed or not, each
    block counts what the rules give (4 characters a token here, an image a fixed 1,600)."""
    image = ImageBlock(source={"type": "base64", "media_type": "image/png", "data": "AAAA"})
    document = DocumentBlock(
        source={"type": "text", "media_type": "text/plain", "data": "abcd" * 10}
    )
    nested = ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="x" * 40), image))
    redacted = RedactedThinkingBlock(data="y" * 160)
    said = TextBlock(text="ok " * 4)
    request = Conversation(
        system="Be brief.",
        messages=(
            Message(role="user", content=(nested, document)),
            Message(role="assistant", content=(redacted, said)),
        ),
    )
    expected = {
        id(nested): 10 + 1600,  # its text, then the image it holds
        id(document): 23,  # the source's compact JSON, 91 characters
        id(redacted): 30,  # 3/16 of the encrypted payload's length
        id(said): 3,
    }
    primed, fresh = ApproxCounter(), ApproxCounter()
    primed.prime([request])
    for counter in (primed, fresh):
        blocks = [b for m in request.messages if not isinstance(m.content, str) for b in m.content]
        assert {id(b): counter.count_block(b) for b in blocks} == expected
        assert counter.count_system(request) == 3
    assert primed.count_conversation(request) == fresh.count_conversation(request)


def test_priming_again_walks_only_messages_not_walked_before() -> None:
    """A replay primes its tape, then prices its views: the second prime walks only the
    messages a strategy made (the tape's are known), and counts stay what they were."""
    conversation = parse_conversation(REQUEST)
    summary = Message(role="user", content=(TextBlock(text="Summary: the version is 1.2."),))
    view = conversation.model_copy(update={"messages": (summary, *conversation.messages[1:])})
    counter, fresh = ApproxCounter(), ApproxCounter()
    counter.prime([conversation])
    walked = set(counter._walked)
    assert walked == {id(m) for m in conversation.messages}
    texts, blocks, again = _new_parts([conversation], (), counter._memo, set(walked))
    assert (blocks, again) == ([], [])
    assert len(texts) == len(conversation.tools)  # only the tool definitions' texts
    counter.prime([view])
    assert counter._walked == walked | {id(summary)}
    assert counter.count_conversation(view) == fresh.count_conversation(view)


class _MyText(TextBlock):
    """A caller's own subclass of a block class."""


class _MyResult(ToolResultBlock):
    """A subclass of a tool result."""


def test_block_texts_are_read_per_class_as_an_isinstance_chain_would() -> None:
    """Texts are read through a table filled once per block class: a subclass reads as its
    base class, every kind of block as its own rule says."""
    use = ToolUseBlock(id="t1", name="Read", input={"path": "a.py", "n": 2})
    blocks: list[tuple[Block, str, str | None]] = [
        (TextBlock(text="hi"), "hi", "hi"),
        (_MyText(text="mine"), "mine", "mine"),
        (ThinkingBlock(thinking="hmm", signature="s"), "hmm", "hmm"),
        (use, 'Read {"path":"a.py","n":2}', 'Read {"path":"a.py","n":2}'),
        (_MyResult(tool_use_id="t1", content="out"), "out", "out"),
        (ToolResultBlock(tool_use_id="t1", content=None), "", ""),
        (
            ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="a"), use)),
            "a\n" + block_text(use),
            "a\n" + block_text(use),
        ),
        (
            ImageBlock(source={"type": "base64", "data": "AA"}),
            '{"type":"image","source":{"type":"base64","data":"AA"}}',
            None,
        ),
        (RedactedThinkingBlock(data="xyz"), "", None),
        (
            DocumentBlock(source={"type": "text", "data": "d"}),
            '{"type":"document","source":{"type":"text","data":"d"}}',
            '{"type":"text","data":"d"}',
        ),
    ]
    for block, text, plain in blocks:
        assert block_text(block) == text, block
        assert _plain_text(block) == plain, block
