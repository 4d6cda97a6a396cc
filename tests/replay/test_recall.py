from __future__ import annotations

import re
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextkit.formats import load
from contextkit.messages import (
    Conversation,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from contextkit.replay import (
    CallRecall,
    FactIndex,
    extract_facts,
    replay,
    score_call,
    score_facts,
    score_sets,
    wanted_facts,
    wanted_index,
)
from contextkit.replay._recall import Held, message_text, summarise
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.strategies import CallFacts, Compacted, strategy_from_spec
from contextkit.testing import FixedCounter
from corpus_paths import readable_corpus_files


def test_extract_facts_finds_each_kind() -> None:
    text = (
        "Reading src/orders/service.py failed: KeyError: 'currency' at line 1250 "
        "in parse_order_7 (see README.md); ok"
    )
    facts = extract_facts(text)
    assert "src/orders/service.py" in facts
    assert "KeyError: 'currency' at line 1250 in parse_order_7 (see README.md); ok" in facts
    assert "1250" in facts
    assert "parse_order_7" in facts
    assert "README.md" in facts
    assert "Reading" not in facts
    assert "failed" not in facts


def _conv(*messages: Message) -> Conversation:
    return Conversation(messages=messages)


def test_score_counts_lost_fact_only_when_it_was_in_the_tape() -> None:
    ask = Message(role="user", content="Fix the failing test")
    use = Message(
        role="assistant", content=(ToolUseBlock(id="t1", name="Read", input={"p": "a.py"}),)
    )
    result = Message(
        role="user",
        content=(ToolResultBlock(tool_use_id="t1", content="def compute_total_9(): return 4711"),),
    )
    response = Message(
        role="assistant",
        content=(TextBlock(text="compute_total_9 returns 4711; also unseen_name_3"),),
    )
    tape = _conv(ask, use, result)
    evicted = Message(
        role="user", content=(ToolResultBlock(tool_use_id="t1", content="[evicted]"),)
    )
    index = FactIndex()
    full = score_call(index, response, tape, tape)
    assert (full.needed, full.kept, full.lost) == (2, 2, ())
    cut = score_call(index, response, tape, _conv(ask, use, evicted))
    assert cut.needed == 2
    assert cut.kept == 0
    assert set(cut.lost) == {"compute_total_9", "4711"}
    report = summarise([full, cut])
    assert report.needed == 4
    assert report.kept == 2
    assert report.recall == 0.5
    assert report.examples == ((1, "4711"), (1, "compute_total_9"))


def test_no_response_needs_nothing() -> None:
    call = score_call(FactIndex(), None, _conv(), _conv())
    assert call.needed == 0
    assert summarise([call]).recall == 1.0


# --------------------------------------------------------------------------------------------------
# The fact extraction must find exactly what it found before it was made faster. The reference
# below is a verbatim copy of that implementation (recall.py before the per-run memo).

_REF_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b|\b[\w-]+\.(?:py|js|ts|tsx|rs|go|java|md|json|toml|ya?ml|txt|c|h|cpp|rb|sh|cfg|ini|html|css)\b"
)
_REF_PATH_RUN = re.compile(r"(?<![\w./-])[\w./-]*?\.[A-Za-z][\w./-]*")
_REF_ERROR = re.compile(r"[A-Z](?<!\w[A-Z])\w*(?:Error|Exception)\b(?::[^\n]{1,120})?")
_REF_NUMBER = re.compile(r"\d(?<![\w.]\d)\d{2,}(?:\.\d+)?(?![\w.])")
_REF_IDENT = re.compile(r"[A-Za-z_](?<!\w[A-Za-z_])[A-Za-z0-9_]{5,}\b")
_REF_STOP = frozenset(
    {"return", "import", "should", "python", "string", "number", "object", "function", "because"}
)


def _ref_is_identifier(word: str) -> bool:
    if word.lower() in _REF_STOP:
        return False
    tail, letters_digits = word[1:], word.replace("_", "")
    has_digit = bool(letters_digits) and not letters_digits.isalpha()
    has_mixed = tail != tail.lower() and word != word.upper()
    return "_" in word.strip("_") or has_digit or has_mixed


def reference_facts(text: str) -> frozenset[str]:
    facts: set[str] = set()
    pieces = set(text.split())
    dotted = "\n".join([p for p in pieces if "." in p])
    for run in _REF_PATH_RUN.findall(dotted):
        facts.update(_REF_PATH.findall(run))
    if "Error" in text or "Exception" in text:
        facts.update(m.strip() for m in _REF_ERROR.findall(text))
    joined = "\n".join(pieces)
    facts.update(_REF_NUMBER.findall(joined))
    facts.update(w for w in set(_REF_IDENT.findall(joined)) if _ref_is_identifier(w))
    return frozenset(facts)


# Texts drawn from the characters the patterns care about: word characters of both cases,
# digits, the path characters, separators, the error words and extensions, and non-ASCII
# characters (a letter, a digit, a non-word symbol, Unicode whitespace, a lone surrogate).
_ATOMS = [
    *"aBzZ_09./-: \n\t,()'=",
    "Error",
    "Exception",
    "Value",
    "KeyError: ",
    ".py",
    ".json",
    "src/",
    "/x/",
    "//",
    "a/b",
    "123",
    "4.5",
    "parse_order",
    "RETURN",
    "Python",
    "é",
    "→",
    "٣",
    "\xa0",
    "\x85",
    "\u2028",
    "\x1c",
    "\ud800",
]
_TEXTS = st.lists(st.sampled_from(_ATOMS), max_size=60).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_TEXTS)
def test_extract_facts_matches_the_reference(text: str) -> None:
    assert extract_facts(text) == reference_facts(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TEXTS, min_size=1, max_size=6), st.data())
def test_fact_index_matches_the_reference_across_messages(texts: list[str], data: Any) -> None:
    """One index over messages that share runs (as a session's do): each message's facts."""
    mixed = [*texts, *(data.draw(st.sampled_from(texts)) + " " + t for t in texts)]
    index = FactIndex()
    for text in mixed:
        message = Message(role="user", content=text)
        assert index.of(message) == reference_facts(text), text


def test_identifier_verdicts_match_the_rule_for_every_short_word() -> None:
    """Every word of 6 and 7 characters over letters of both cases, a digit and "_", and every
    spelling of the stop words: judged in bulk exactly as one by one."""
    words = ["".join(w) for n in (6, 7) for w in product("aB_1", repeat=n)]
    words = [w for w in words if not w[0].isdigit()]
    words += ["".join(w) for s in _REF_STOP for w in product(*((c, c.upper()) for c in s))]
    text = " ".join(words)
    assert extract_facts(text) == reference_facts(text)
    index = FactIndex()
    for start in range(0, len(words), 997):  # in batches, as messages arrive
        chunk = " ".join(words[start : start + 997])
        assert index.of(Message(role="user", content=chunk)) == reference_facts(chunk)


@pytest.mark.parametrize(
    "text",
    [
        "AError: xBError and CError\nDError",  # a tail swallows later errors on its line only
        "xAError AError: b\n: c BException",
        "Error alone, ErrorError, XException: tail" + "y" * 200,
        "a" * 5000 + "/b.py " + "KeyError" * 300,
        "naïve_name1 ünïcode_2 plain_name3 →arrow_name4 12→line_5 x\u2028y_name_6",
        "12345\xa0678 9.5 1.2.3 v1.2.3 ٣٣٣ 123.456.789 007",
        "lone \ud800 surrogate_name1 \ud800/a.py",
        "/a/b.py //c/d.md x//e.json -/f/g.toml a.b-/c/d.py a/b.py/c.md/",
    ],
)
def test_extract_facts_edge_cases_match_the_reference(text: str) -> None:
    assert extract_facts(text) == reference_facts(text)


@pytest.mark.corpus
def test_every_corpus_message_matches_the_reference(corpus: Path) -> None:
    checked = 0
    for path in readable_corpus_files(corpus):
        for session in load(path, lenient=True).sessions:
            index = FactIndex()
            for call in session.calls:
                messages = [*call.request.messages, *([call.response] if call.response else [])]
                for message in messages:
                    assert index.of(message) == reference_facts(message_text(message)), path
                    checked += 1
    assert checked > 0


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TEXTS, min_size=1, max_size=6), st.lists(_TEXTS, max_size=3), st.data())
def test_an_index_of_wanted_facts_holds_exactly_those(
    texts: list[str], answers: list[str], data: Any
) -> None:
    """``FactIndex(wanted=...)`` gives each message's facts among the wanted ones: the facts of
    some other texts (responses) and some of the messages' own, all kinds mixed."""
    own = [f for t in texts for f in sorted(reference_facts(t))]
    picked = data.draw(st.lists(st.sampled_from(own), max_size=8)) if own else []
    wanted = frozenset(picked).union(*map(reference_facts, answers))
    mixed = [*texts, *(data.draw(st.sampled_from(texts)) + " " + t for t in texts)]
    index = FactIndex(wanted=wanted)
    for text in mixed:
        message = Message(role="user", content=text)
        assert index.of(message) == reference_facts(text) & wanted, text


@pytest.mark.corpus
def test_wanted_facts_of_every_corpus_session(corpus: Path) -> None:
    """Each corpus session indexed for the facts its responses use, as a replay indexes it."""
    checked = 0
    for path in readable_corpus_files(corpus):
        for session in load(path, lenient=True).sessions:
            wanted = wanted_facts(c.response for c in session.calls)
            index = FactIndex(wanted=wanted)
            for call in session.calls:
                for message in (*call.request.messages, *filter(None, [call.response])):
                    facts = reference_facts(message_text(message))
                    assert index.of(message) == facts & wanted, path
                    checked += bool(facts & wanted)
    assert checked > 100  # messages that do hold wanted facts


# --------------------------------------------------------------------------------------------------
# wanted_index: the index a replay builds, with the responses extracted once (their facts and
# runs known before any request is indexed). It must answer exactly as a fresh wanted index.


def _messages(texts: list[str]) -> list[Message]:
    return [Message(role="assistant", content=t) for t in texts]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TEXTS, max_size=4), st.lists(_TEXTS, min_size=1, max_size=5), st.data())
def test_wanted_index_matches_the_reference(
    answers: list[str], texts: list[str], data: Any
) -> None:
    """Requests that reuse the responses' runs and error lines (texts joined with them)."""
    responses = _messages(answers)
    index = wanted_index([None, *responses])
    wanted = frozenset().union(*map(reference_facts, answers))
    assert index.wanted == wanted == wanted_facts(responses)
    pool = [*answers, *texts]
    mixed = [*texts, *(data.draw(st.sampled_from(pool)) + sep + t for t in pool for sep in "\n ")]
    for message in [*_messages(mixed), *responses]:
        assert index.of(message) == reference_facts(message_text(message)) & wanted


@pytest.mark.parametrize(
    "answer",
    [
        "KeyError: 'currency', parse_query_3922. Next step.",
        "x.ValueError: bad a/b.py line 1250\nAssertionError",
        "naïve.KeyError: é →arrow_name4 src/naïve.py",
        "ok KeyError: done",
    ],
)
def test_wanted_index_finds_error_strings_only_where_they_are(answer: str) -> None:
    responses = _messages([answer])
    index = wanted_index(responses)
    texts = [
        answer,
        "prefix " + answer + " suffix",
        "y." + answer,
        answer.replace(" ", "  "),
        answer.replace(" ", "x "),  # its inner runs grown: not whole runs of the text
        answer + "\n" + answer.replace(" ", "x "),
        answer[: len(answer) // 2],
        "KeyError ValueError AssertionError: other",
    ]
    for text in texts:
        expected = reference_facts(text) & reference_facts(answer)
        assert index.of(Message(role="user", content=text)) == expected, text


def test_message_text_of_one_block_and_of_several() -> None:
    one = Message(role="user", content=(TextBlock(text="only"),))
    two = Message(role="user", content=(TextBlock(text="a"), TextBlock(text="b")))
    assert message_text(one) == "only"
    assert message_text(two) == "a\nb"


def test_wanted_index_of_a_generated_session() -> None:
    session = generate_session(ExampleSpec(calls=40, user_turns=2, seed=3))
    responses = [c.response for c in session.calls]
    index = wanted_index(responses)
    wanted = wanted_facts(responses)
    assert index.wanted == wanted
    assert wanted
    for call in session.calls:
        for message in (*call.request.messages, *filter(None, [call.response])):
            assert index.of(message) == reference_facts(message_text(message)) & wanted


@pytest.mark.corpus
def test_wanted_index_answers_as_a_fresh_index_over_every_corpus_session(corpus: Path) -> None:
    """Every corpus session replayed as replay indexes it: the responses pre-filled index and a
    fresh wanted index (checked against the reference above) give every message the same facts."""
    checked = 0
    for path in readable_corpus_files(corpus):
        for session in load(path, lenient=True).sessions:
            responses = [c.response for c in session.calls]
            index = wanted_index(responses)
            fresh = FactIndex(wanted=wanted_facts(responses))
            assert index.wanted == fresh.wanted, path
            for call in session.calls:
                for message in (*call.request.messages, *filter(None, [call.response])):
                    assert index.of(message) == fresh.of(message), path
                    checked += 1
    assert checked > 0


_WORDS = st.sampled_from([f"name_{i}" for i in range(12)])


@given(
    st.frozensets(_WORDS),
    st.sets(_WORDS),
    st.sets(_WORDS),
    st.lists(_WORDS, max_size=4).map(" ".join),
    st.booleans(),
)
def test_score_facts_is_the_per_fact_definition(
    wanted: frozenset[str], tape: set[str], view: set[str], system: str, view_keeps_system: bool
) -> None:
    """Needed: a wanted fact the tape's messages or system text hold; lost: a needed one the
    view's messages and system text no longer hold (sorted), whatever the set operations do."""
    tape_held = Held(tape, system)
    view_held = Held(view & tape, system if view_keeps_system else "")
    needed = sorted(f for f in wanted if f in tape or f in system)
    lost = tuple(f for f in needed if f not in view_held.facts and f not in view_held.system)
    expected = CallRecall(len(needed), len(needed) - len(lost), lost)
    assert score_facts(wanted, tape_held, view_held) == expected


@given(
    st.frozensets(_WORDS),
    st.sets(_WORDS),
    st.sets(_WORDS),
    st.lists(_WORDS, max_size=4).map(" ".join),
    st.lists(_WORDS, max_size=4).map(" ".join),
    st.booleans(),
)
def test_score_sets_is_score_facts(
    wanted: frozenset[str],
    tape: set[str],
    view: set[str],
    tape_system: str,
    view_system: str,
    view_is_tape: bool,
) -> None:
    """The same score on the sets themselves, also when the view's set is the tape's own (the
    shortcut keeps every needed fact only if the system texts agree too)."""
    view_facts = tape if view_is_tape else view
    expected = score_facts(wanted, Held(tape, tape_system), Held(view_facts, view_system))
    assert score_sets(wanted, set(tape), tape_system, view_facts, view_system) == expected
    assert score_sets(wanted, tape, tape_system, view_facts, view_system) == expected


def _shifting(view: Conversation, facts: CallFacts, /) -> Compacted:
    """Drops the second message at every third call, hands back an equal copy at the next, and
    the view itself at the one after: every path of the replay's fact sets (a view that is
    the tape, one grown with it, one rebuilt)."""
    step = facts.call_index % 3
    if step == 0 and len(view.messages) > 2:
        messages = (view.messages[0], *view.messages[2:])
        return Compacted(view=view.model_copy(update={"messages": messages}))
    if step == 1:
        return Compacted(view=view.model_copy())
    return Compacted(view=view)


@pytest.mark.parametrize("spec", ["none", "evict-tool-results", "sliding-window", "shifting"])
def test_replay_recall_is_score_call_on_its_tapes_and_views(spec: str) -> None:
    """What a replay scores per call (its fact sets kept up to date message by message) is
    :func:`score_call` with every fact, on the call's tape and view."""
    session = generate_session(ExampleSpec(calls=60, user_turns=3, seed=5))
    strategy = _shifting if spec == "shifting" else strategy_from_spec(spec)
    result = replay(session, strategy, counter=FixedCounter())
    index = FactIndex()
    expected = [
        score_call(index, call.response, tape, view)
        for call, tape, view in zip(session.calls, result.tapes, result.views, strict=True)
    ]
    assert [(r.needed, r.kept) for r in result.rows] == [(e.needed, e.kept) for e in expected]
    plain = summarise(expected)
    assert (result.recall.needed, result.recall.kept) == (plain.needed, plain.kept)
    assert result.recall.examples == plain.examples
    # The rarity weights change the weighted figures only: none weighs more than it needs.
    assert 0.0 <= result.recall.weighted_kept <= result.recall.weighted_needed + 1e-9
    if spec in ("evict-tool-results", "shifting"):  # views that did lose facts
        assert sum(e.needed - e.kept for e in expected) > 0
