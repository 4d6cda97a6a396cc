"""The miss model: cache misses no request shows, fitted on what the doctor finds and applied to
the recorded requests and every strategy's views alike."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from contextkit.accounting import (
    NO_MISSES,
    MissModel,
    RouteLoss,
    TurnReset,
    fit_miss_model,
    load_miss_model,
    price_session,
    save_miss_model,
    session_miss_model,
    shipped_miss_model,
)
from contextkit.errors import ConfigError
from contextkit.formats import load
from contextkit.messages import Conversation, Message, Usage
from contextkit.replay import find_session_files
from contextkit.session import Call, Session
from contextkit.testing import FixedCounter, assistant, fixed_price, tool_result, tool_use, user

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
PRICE = fixed_price("m")


def _call(messages: list[Message], usage: Usage, at: float, route: str | None = None) -> Call:
    return Call(
        request=Conversation(model="claude-sonnet-4-5", messages=tuple(messages)),
        response=assistant("ok"),
        usage=usage,
        model="claude-sonnet-4-5",
        timestamp=T0 + timedelta(seconds=at),
        route=route,
    )


def _loop(route: str | None = None, fmt: str = "claude-code") -> Session:
    """Three calls: a tool loop, then a new user turn."""
    first = [user("x" * 400)]
    second = [*first, assistant(tool_uses=[tool_use("t1")]), user(tool_result("t1", "y" * 400))]
    third = [*second, assistant("done"), user("next question " * 10)]
    calls = (
        _call(first, Usage(input_tokens=2, cache_write_5m=20_000), 0, route),
        _call(second, Usage(input_tokens=2, cache_write_5m=300, cache_read=20_000), 10, route),
        _call(third, Usage(input_tokens=2, cache_write_5m=200, cache_read=20_300), 20, route),
    )
    return Session(path="built", format=fmt, calls=calls, prefix_known=False)


def _reads(session: Session, misses: MissModel) -> list[int]:
    ledger = price_session(session, FixedCounter(), PRICE, misses=misses)
    return [int(x) for x in ledger.simulated.cache_read]


def test_a_route_loses_its_share_of_every_read() -> None:
    session = _loop(route="bedrock")
    plain = _reads(session, NO_MISSES)
    lossy = MissModel(route_loss={"bedrock": RouteLoss(share=0.25)})
    assert _reads(session, lossy) == [plain[0], *(r - round(0.25 * r) for r in plain[1:])]
    ledger = price_session(session, FixedCounter(), PRICE, misses=lossy)
    plain_ledger = price_session(session, FixedCounter(), PRICE, misses=NO_MISSES)
    moved = sum(plain) - sum(_reads(session, lossy))
    written = int(
        ledger.simulated.cache_write_5m.sum() - plain_ledger.simulated.cache_write_5m.sum()
    )
    assert written == moved  # what is not read is written again, at the call's TTL
    assert any("bedrock: 25% of servable reads lost" in n for n in ledger.notes)


def test_a_harness_reset_at_new_user_turns_only() -> None:
    session = _loop()
    plain = _reads(session, NO_MISSES)
    model = MissModel(turn_reset={"claude-code": TurnReset(probability=0.5, kept_share=0.0)})
    reads = _reads(session, model)
    assert reads[:2] == plain[:2]  # call 1 answers a tool result: not a new turn
    assert reads[2] == plain[2] - round(0.5 * plain[2])
    other = _loop(fmt="pi")  # the model names claude-code only
    assert _reads(other, model) == _reads(other, NO_MISSES)


def test_kept_share_keeps_what_the_file_omits() -> None:
    session = _loop()
    ledger = price_session(session, FixedCounter(), PRICE, misses=NO_MISSES)
    hidden = ledger.prefix_inferred_tokens or 0
    assert hidden > 0
    model = MissModel(turn_reset={"claude-code": TurnReset(probability=1.0, kept_share=0.5)})
    plain = _reads(session, NO_MISSES)
    assert _reads(session, model)[2] == round(0.5 * hidden)
    assert plain[2] > round(0.5 * hidden)


def test_save_and_load(tmp_path: Path) -> None:
    model = MissModel(route_loss={"bedrock": RouteLoss(share=0.3, calls=4)}, data=("x",))
    save_miss_model(model, tmp_path / "m.json")
    assert load_miss_model(tmp_path / "m.json") == model
    (tmp_path / "bad.json").write_text('{"route_loss": 3}')
    with pytest.raises(ConfigError, match="not a valid miss model"):
        load_miss_model(tmp_path / "bad.json")


def test_fit_on_hand_built_sessions() -> None:
    """A routed session that read nothing after call 0, beside one that read everything."""
    routed = _loop(route="bedrock")
    calls = list(routed.calls)
    calls[1] = calls[1].model_copy(
        update={"usage": Usage(input_tokens=2, cache_write_5m=20_300, cache_read=0)}
    )
    lossy = routed.model_copy(update={"calls": tuple(calls)})
    model = fit_miss_model([lossy, _loop(route="bedrock")])
    loss = model.route_loss["bedrock"]
    assert loss.lost_tokens == 20_000
    assert loss.share == pytest.approx(20_000 / loss.servable_tokens)


def _long_loop(route: str | None, lost_at: frozenset[int]) -> Session:
    """Six tool rounds; the calls in ``lost_at`` read nothing (the route served no entry)."""
    history = [user("x" * 400)]
    calls = []
    for k in range(6):
        total = 20_000 + 300 * k
        read = 0 if k == 0 or k in lost_at else 20_000 + 300 * (k - 1)
        usage = Usage(input_tokens=2, cache_write_5m=total - read, cache_read=read)
        calls.append(_call(list(history), usage, 10 * k, route))
        history += [assistant(tool_uses=[tool_use(f"t{k}")]), user(tool_result(f"t{k}", "y" * 400))]
    return Session(path="built", format="claude-code", calls=tuple(calls), prefix_known=False)


def test_a_session_with_enough_routed_calls_measures_its_own_route_loss() -> None:
    session = _long_loop("bedrock", frozenset({2, 4}))
    fitted = MissModel(route_loss={"bedrock": RouteLoss(share=0.05, calls=99)})
    own = session_miss_model(session, fitted)
    loss = own.route_loss["bedrock"]
    assert loss.calls == 5  # the calls after the first
    assert loss.share == pytest.approx(loss.lost_tokens / loss.servable_tokens)
    assert 0.3 < loss.share < 0.5  # two of five reads lost, the later (larger) ones among them
    assert session_miss_model(session, fitted) is own  # measured once per session in a row
    # price_session by default: the shipped model with the session's own measurement in place
    default = price_session(session, FixedCounter(), PRICE)
    measured = price_session(session, FixedCounter(), PRICE, misses=own)
    assert default.simulated.cache_read.tolist() == measured.simulated.cache_read.tolist()


def test_a_session_with_too_few_routed_calls_keeps_the_fitted_share() -> None:
    session = _long_loop("bedrock", frozenset({2}))
    short = session.model_copy(update={"calls": session.calls[:3]})  # two routed calls after 0
    fitted = MissModel(route_loss={"bedrock": RouteLoss(share=0.05, calls=99)})
    assert session_miss_model(short, fitted).route_loss == fitted.route_loss


def test_a_session_without_resets_at_its_turns_is_priced_without_them() -> None:
    """Its new user turns read what the file omits: its own probability is 0, not the fit's."""
    first = [user("x" * 400)]
    calls, history = [], list(first)
    for k in range(4):  # four calls, each opening a new user turn after the first
        total = 20_000 + 300 * k
        read = 0 if k == 0 else total - 300
        usage = Usage(input_tokens=2, cache_write_5m=total - read, cache_read=read)
        calls.append(_call(list(history), usage, 10 * k))
        history += [assistant("ok"), user(f"question {k} " * 10)]
    session = Session(path="built", format="claude-code", calls=tuple(calls), prefix_known=False)
    fitted = MissModel(turn_reset={"claude-code": TurnReset(probability=0.5, kept_share=0.5)})
    own = session_miss_model(session, fitted).turn_reset["claude-code"]
    assert own.turns == 3
    assert own.probability == 0.0


@pytest.mark.corpus
def test_the_corpus_bedrock_session_is_priced_with_its_own_route_loss(corpus: Path) -> None:
    """The 47-call Bedrock session: its own loss (33% of the servable reads, as the doctor
    finds) in place of the fitted one, and the simulated input cost comes within 5% of the bill
    (-3.6%; -70% without any miss model)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (session,) = load(corpus / "codemie-claude" / "session-196820da.jsonl").sessions
    own = session_miss_model(session, NO_MISSES).route_loss["bedrock"]
    assert own.calls == 46
    assert own.share == pytest.approx(0.33, abs=0.01)

    def error(misses: MissModel | None) -> float:
        ledger = price_session(session, output="recorded", misses=misses)
        assert ledger.recorded is not None
        sim = float(ledger.simulated.input_cost_usd.sum())
        return sim / float(ledger.recorded.input_cost_usd.sum()) - 1

    assert abs(error(None)) < 0.05
    assert error(NO_MISSES) < -0.5


@pytest.mark.corpus
def test_the_shipped_model_is_the_corpus_fit(corpus: Path) -> None:
    """scripts/fit_miss_model.py wrote it from the corpus sources it names in ``data`` (rerun the
    script if not). Sources added since (teams the model has never seen) are held out: they are
    what the leave-one-source-out check measures it on, not what it is fitted to."""
    shipped = shipped_miss_model()
    trained = {entry.split(":")[0] for entry in shipped.data}
    sessions: list[Session] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in find_session_files([corpus]).files:
            if path.relative_to(corpus).parts[0] not in trained:
                continue
            for top in load(path, lenient=True).sessions:
                sessions.extend(s for s in top.all_sessions() if s.calls)
    fitted = fit_miss_model(sessions)
    assert shipped.route_loss == fitted.route_loss
    assert shipped.turn_reset == fitted.turn_reset
    assert shipped.route_loss["bedrock"].share > 0.1
