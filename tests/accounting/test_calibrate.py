"""A session's counter calibrated on its own recorded usage
(:mod:`contextkit.accounting._calibrate`), and the accountant's accuracy on teams it has never seen,
leave-one-team-out."""

from __future__ import annotations

import importlib.util
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from contextkit.accounting import MIN_PAIRS, price_session, session_counter, session_factor
from contextkit.cache import strip_prior_thinking
from contextkit.formats import load
from contextkit.messages import Conversation, Message, TextBlock, ToolResultBlock, ToolUseBlock
from contextkit.models import resolve_model
from contextkit.session import Call, Session, Usage
from contextkit.testing import words
from contextkit.tokens import CalibratedCounter, counter_for

MODEL = "claude-sonnet-4-5"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HIDDEN = 9_000


def billed_by(factor: float, rounds: int, model: str = MODEL) -> Session:
    """A tool loop whose recorded input is what a tokenizer ``factor`` times the shipped one
    would bill: the hidden prefix, then the shipped counter's overheads plus ``factor`` x its
    encoding's text tokens (the calibration's own model of a request)."""
    shipped = counter_for(resolve_model(model))
    assert isinstance(shipped, CalibratedCounter)
    params = shipped.params
    truth = CalibratedCounter(
        shipped.base,
        params.model_copy(
            update={"factor": factor, "thinking_factor": params.thinking_scale * factor}
        ),
        shipped.model,
    )
    history: list[Message] = [Message(role="user", content=(TextBlock(text=words(800, "p")),))]
    calls: list[Call] = []
    for k in range(rounds):
        request = Conversation(model=model, messages=tuple(history))
        total = HIDDEN + truth.count_conversation(strip_prior_thinking(request))
        usage = Usage(cache_read=total - 50, cache_write_5m=50, output_tokens=20)
        use = ToolUseBlock(id=f"t{k}", name="Read", input={"path": f"f{k}.py"})
        answer = Message(role="assistant", content=(use,))
        at = T0 + timedelta(seconds=20 * k)
        calls.append(Call(request=request, response=answer, timestamp=at, usage=usage))
        result = ToolResultBlock(tool_use_id=f"t{k}", content=words(300 + 40 * k, f"r{k}_"))
        history += [answer, Message(role="user", content=(result,))]
    return Session(path="<built>", format="claude-code", calls=tuple(calls), prefix_known=False)


def test_the_factor_of_the_session_is_measured_from_its_growth() -> None:
    session = billed_by(1.62, rounds=12)
    shipped = counter_for(session.model_info)
    assert isinstance(shipped, CalibratedCounter)
    measured = session_factor(session, shipped)
    assert measured is not None
    assert measured.factor == pytest.approx(1.62, abs=0.01)
    assert measured.pairs == 11
    counter = session_counter(session)
    assert isinstance(counter, CalibratedCounter)
    assert counter.params.factor == pytest.approx(1.62, abs=0.01)
    assert "measured on this session's usage" in counter.name
    # the counter carries the correction into the simulation: the bill is reproduced
    ledger = price_session(session, output="recorded")
    assert ledger.recorded is not None
    simulated, recorded = ledger.context_tokens.sum(), ledger.recorded.total_input.sum()
    assert abs(simulated / recorded - 1) < 0.005
    with_shipped = price_session(session, shipped, output="recorded").context_tokens.sum()
    # the shipped factor (1.1) is 10.8% short: the hidden prefix, measured at call 1, absorbs the
    # part of call 1 and only the growth after it is off
    assert abs(with_shipped / recorded - 1) > 0.08
    assert any("measured on this session" in note for note in ledger.notes)


def test_too_few_pairs_or_another_model_keep_the_shipped_counter() -> None:
    short = billed_by(1.62, rounds=MIN_PAIRS)  # MIN_PAIRS calls: one pair too few
    shipped = counter_for(short.model_info)
    assert isinstance(shipped, CalibratedCounter)
    assert session_factor(short, shipped) is None
    assert session_counter(short).name == shipped.name
    long = billed_by(1.62, rounds=12)
    other = resolve_model("claude-opus-4-6")
    assert session_counter(long, other).name == counter_for(other).name  # a what-if's model
    without = long.model_copy(
        update={"calls": tuple(c.model_copy(update={"usage": None}) for c in long.calls)}
    )
    assert session_counter(without).name == shipped.name


def test_a_model_shipped_after_the_last_fit_is_a_claude_model() -> None:
    """``claude-fable-5`` (a tier no fit knew) counts with its version's generation, not with the
    four-characters approximation, and a session with usage measures its own factor."""
    info = resolve_model("claude-fable-5")
    assert info.is_claude
    assert info.calibration_family == "claude-opus-4.7"
    session = billed_by(1.85, rounds=10, model="claude-fable-5")
    counter = session_counter(session)
    assert isinstance(counter, CalibratedCounter)
    assert counter.params.factor == pytest.approx(1.85, abs=0.01)


FIVE_SERIES = {
    "oh-my-posh-claude/s-55-d5cdc9f52a-0.jsonl": (-0.064, 0.03),  # -1.7% now
    "oh-my-posh-claude/s-f1-cc7fb29063-0.jsonl": (-0.237, 0.03),  # -0.6% now
}
"""The corpus's 5-series sessions (teams and models the project had never seen): total input
tokens against the recording before the session's own calibration, and the bound after it (the
trust issue's floor, 3%). The session's own factor took them to -4.8% and -5.9%; thinking the
files hold empty or summarised, sized from the bill, and content steps of 2% to -1.7% and -0.6%
(docs/accuracy.md)."""


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(FIVE_SERIES))
def test_the_5_series_sessions_count_their_input_from_their_own_usage(
    corpus: Path, name: str
) -> None:
    before, bound = FIVE_SERIES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (session,) = load(corpus / name).sessions
        ledger = price_session(session, output="recorded")
    assert ledger.recorded is not None
    error = float(ledger.context_tokens.sum() / ledger.recorded.total_input.sum() - 1)
    assert abs(error) < bound < abs(before)


def _script() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "scripts" / "fit_miss_model.py"
    spec = importlib.util.spec_from_file_location("fit_miss_model", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.corpus
@pytest.mark.slow
def test_leave_one_team_out_floors(corpus: Path) -> None:
    """Every Claude Code session with usage and 2+ calls, each priced with a miss model fitted on
    the other teams only (and its own counter): median |error| of the input-side cost 1.3%, per
    call 1.2%, mean signed -1.1% (the trust issue's floors: 3%, 2% and +-1.5%; docs/accuracy.md).
    Were 2.0%, 1.1% and -1.9% with the shipped factors alone, 1.3%, 1.4% and -1.5% with the
    session's own factor before thinking was sized from the bill."""
    script = _script()
    result: dict[str, Any] = script.loso(list(script.corpus_sessions(corpus)))
    assert result["median_abs_error"] <= 0.03
    assert result["per_call_median_abs_error"] <= 0.02
    assert abs(result["mean_signed_error"]) <= 0.015
    teams = {row["source"] for row in result["sessions"]}
    assert {"oh-my-posh-claude", "packmind-claude"} <= teams


def test_a_model_with_no_fitted_calibration_and_no_usage_is_named_in_a_warning() -> None:
    """A 5-series session without usage counts with its generation's factor, not fitted to its
    tokenizer: a warning names the model (once per process), beside the ledger's counter note."""
    import contextkit.accounting._calibrate as calibrate  # noqa: PLC0415
    from contextkit.tokens import UnfittedTokenizerWarning  # noqa: PLC0415

    calibrate._WARNED.clear()
    session = billed_by(1.85, rounds=10, model="claude-fable-5")
    without = session.model_copy(
        update={"calls": tuple(c.model_copy(update={"usage": None}) for c in session.calls)}
    )
    with pytest.warns(UnfittedTokenizerWarning, match="claude-fable-5: no calibration is fitted"):
        session_counter(without)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session_counter(without)  # once per model and process
        session_counter(session)  # measured on its own usage: nothing to warn of
