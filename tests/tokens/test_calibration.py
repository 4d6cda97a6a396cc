"""Calibration: the fit on synthetic data, the shipped defaults, and the error on the raw traces."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from contextkit.errors import ConfigError
from contextkit.models import resolve_model
from contextkit.tokens import (
    Calibration,
    CalibrationSample,
    SessionSamples,
    anchored_errors,
    counter_for,
    default_calibration,
    distinct,
    fit,
    fit_family,
    load_calibration,
    relative_errors,
    save_calibration,
    session_pairs,
)
from contextkit.tokens._calibration import NEW_TOKENIZER_RATIO, PRIORS

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fit_calibration.py"
TRACE = Path("claude-trace-lemmy") / "test-traffic-part1.jsonl"


def synthetic(
    n: int, factor: float, per_message: float, fixed: float, *, seed: int = 0, noise: float = 0.0
) -> list[CalibrationSample]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        messages = int(rng.integers(1, 40))
        text = int(rng.integers(200, 40_000))
        billed = factor * (text + 9000 + 3000) + per_message * messages + fixed + 346
        billed *= 1 + rng.normal(0, noise)
        out.append(
            CalibrationSample(
                model="claude-sonnet-4-20250514",
                billed=round(billed),
                message_tokens=text,
                tool_tokens=9000,
                system_tokens=3000,
                messages=messages,
                tools=17,
                overhead=346,
                label=f"s{i}",
            )
        )
    return out


def test_fit_recovers_known_parameters() -> None:
    params = fit_family("claude-4", synthetic(40, factor=1.23, per_message=4.0, fixed=10.0))
    assert params.factor == pytest.approx(1.23, abs=0.002)
    assert params.fitted
    assert params.residuals is not None
    assert params.residuals.median is not None
    assert params.residuals.median < 0.001
    assert params.residuals.loo_median is not None
    assert params.residuals.loo_median < 0.001


def test_thin_collinear_data_stays_near_the_prior() -> None:
    # Every call has one message and no tools: per_message, per_tool and fixed cannot be told apart.
    samples = [
        CalibrationSample(
            model="claude-3-5-haiku-20241022",
            billed=round(1.15 * t + 8),
            message_tokens=t,
            tool_tokens=0,
            system_tokens=0,
            messages=1,
            tools=0,
            overhead=0,
        )
        for t in (1, 80, 190)
    ]
    params = fit_family("claude-3", samples)
    prior = PRIORS["claude-3"]
    assert np.isfinite([params.factor, params.per_message, params.per_tool, params.fixed]).all()
    assert params.per_tool == pytest.approx(prior.per_tool, abs=1e-6)  # no tool data: the prior
    assert params.factor == pytest.approx(1.15, abs=0.05)
    assert float(relative_errors(params, samples).max()) < 0.05


def test_noisy_fit_reports_its_residuals() -> None:
    params = fit_family("claude-4", synthetic(30, 1.2, 3.0, 0.0, seed=3, noise=0.03))
    r = params.residuals
    assert r is not None
    assert r.median is not None
    assert r.p90 is not None
    assert r.max is not None
    assert 0.005 < r.median < 0.05
    assert r.p90 >= r.median
    assert r.max >= r.p90


def test_repeated_requests_count_once() -> None:
    one = synthetic(1, 1.2, 3.0, 0.0)[0]
    samples = [one] * 10 + synthetic(5, 1.2, 3.0, 0.0, seed=1)
    assert len(distinct(samples)) == 6
    params = fit_family("claude-4", samples)
    assert params.residuals is not None
    assert params.residuals.calls == 6


def test_fit_derives_families_without_data() -> None:
    calibration = fit(synthetic(20, 1.25, 3.0, 0.0), data=("synthetic",))
    fitted = calibration.families["claude-4"]
    assert fitted.fitted
    assert not calibration.families["claude-3"].fitted  # the prior
    newer = calibration.families["claude-opus-4.7"]
    assert not newer.fitted
    assert newer.factor == pytest.approx(fitted.factor * NEW_TOKENIZER_RATIO, abs=1e-3)
    assert calibration.families["claude-4.5"].factor == fitted.factor


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-3-5-haiku-20241022", "claude-3"),
        ("claude-sonnet-4-20250514", "claude-4"),
        ("claude-opus-4-1", "claude-4"),
        ("claude-sonnet-4-5-20250929", "claude-4.5"),
        ("claude-opus-4-6", "claude-4.5"),
        ("claude-opus-4-7", "claude-opus-4.7"),
        ("gpt-4o", None),
    ],
)
def test_family_of(model: str, family: str | None) -> None:
    assert resolve_model(model).calibration_family == family


def test_shipped_defaults_load_as_package_data() -> None:
    calibration = default_calibration()
    assert set(calibration.families) >= {"claude-3", "claude-4", "claude-4.5", "claude-opus-4.7"}
    for params in calibration.families.values():
        if params.fitted:
            r = params.residuals
            assert r is not None
            assert r.median is not None or r.session_median is not None  # it reports its error
            assert r.median is None or r.median < 0.05
            assert r.session_median is None or r.session_median < 0.10
            assert params.models
        assert 0.8 < params.factor < 2.0
    assert calibration.data  # says what it was fitted on
    assert calibration.families["claude-4.5"].fitted  # from the Claude Code sessions


def test_calibration_file_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    save_calibration(default_calibration(), path)
    assert load_calibration(path) == default_calibration()
    path.write_text(json.dumps({"created": "2026-01-01"}))
    with pytest.raises(ConfigError, match=re.escape(str(path))):
        load_calibration(path)
    with pytest.raises(ConfigError, match="not a valid calibration file"):
        load_calibration(tmp_path / "absent.json")


# --- sessions with a hidden prefix: calibration through consecutive differences --------------

TRUE = {"factor": 1.1, "per_message": 6.0, "per_tool_block": 40.0, "thinking": 1.7}


def _step_sample(
    model: str, text: int, thinking: int, messages: int, blocks: int, hidden: int
) -> CalibrationSample:
    billed = (
        TRUE["factor"] * text
        + TRUE["thinking"] * thinking
        + TRUE["per_message"] * messages
        + TRUE["per_tool_block"] * blocks
        + hidden
    )
    return CalibrationSample(
        model=model,
        billed=round(billed),
        message_tokens=text,
        tool_tokens=0,
        system_tokens=0,
        messages=messages,
        tools=0,
        overhead=0,
        thinking_tokens=thinking,
        tool_blocks=blocks,
    )


def synthetic_session(
    seed: int, calls: int = 30, model: str = "claude-opus-4-6", label: str = ""
) -> SessionSamples:
    """A session whose hidden prefix (system prompt + tools) is unknown and different each time;
    each step adds an assistant message (0-3 tool calls, some thinking) and a user message."""
    rng = np.random.default_rng(seed)
    hidden = int(rng.integers(8_000, 30_000))
    text, thinking, messages, blocks = int(rng.integers(5, 500)), 0, 1, 0
    samples = [_step_sample(model, text, thinking, messages, blocks, hidden)]
    for _ in range(calls - 1):
        tools = int(rng.integers(0, 4))
        text += int(rng.integers(20, 3000))
        thinking += int(rng.integers(0, 300)) * int(rng.integers(0, 2))
        messages += 2
        blocks += 2 * tools
        samples.append(_step_sample(model, text, thinking, messages, blocks, hidden))
    return SessionSamples(label=label or f"s{seed}", samples=tuple(samples))


def test_pairs_recover_parameters_and_leave_the_prefix_to_the_prior() -> None:
    sessions = [synthetic_session(seed) for seed in range(6)]
    prior = PRIORS["claude-4"].model_copy(update={"family": "claude-4.5", "fixed": 77.0})
    params = fit_family("claude-4.5", [], prior, sessions)
    assert params.factor == pytest.approx(TRUE["factor"], abs=0.005)
    assert params.thinking_factor == pytest.approx(TRUE["thinking"], abs=0.02)
    assert params.per_tool_block == pytest.approx(TRUE["per_tool_block"], abs=1.0)
    assert params.per_message == pytest.approx(TRUE["per_message"], abs=1.5)
    # The hidden prefix cancels in differences: nothing in the data moves the constant.
    assert params.fixed == pytest.approx(77.0, abs=1e-6)
    assert params.per_tool == pytest.approx(prior.per_tool, abs=1e-6)
    r = params.residuals
    assert r is not None
    assert r.calls == 0
    assert r.median is None
    assert r.pairs == 6 * 29
    assert r.session_median is not None
    assert r.session_median < 0.001


def test_outlier_pairs_are_dropped() -> None:
    clean = [synthetic_session(seed) for seed in range(4)]
    spoiled = []
    for record in clean:
        samples = list(record.samples)
        # Content the file does not hold (say a 2,000-token attachment) lands in one call and stays.
        samples[10:] = [s.model_copy(update={"billed": s.billed + 2000}) for s in samples[10:]]
        spoiled.append(record.model_copy(update={"samples": tuple(samples)}))
    params = fit_family("claude-4.5", [], None, spoiled)
    assert params.residuals is not None
    assert params.residuals.pairs_dropped == 4
    assert params.factor == pytest.approx(TRUE["factor"], abs=0.005)
    naive = fit_family("claude-4.5", [], None, clean)
    assert abs(params.per_tool_block - naive.per_tool_block) < 1.0


def test_session_pairs_skip_what_does_not_extend() -> None:
    record = synthetic_session(0, calls=8)
    samples = list(record.samples)
    samples[5] = samples[5].model_copy(update={"billed": samples[4].billed - 10})  # a drop
    samples[7] = samples[7].model_copy(update={"model": "claude-sonnet-4-20250514"})
    record = record.model_copy(
        update={
            "samples": tuple(samples),
            "compactions": (3,),
            "extends": (True, True, True, True, True, False, True),
        }
    )
    pairs, skipped = session_pairs(record)
    assert [p.after for p in pairs] == [samples[1], samples[2], samples[4]]
    assert skipped == {
        "first call after a compaction": 1,
        "recorded total dropped": 1,
        "request does not extend the previous one": 1,
        "model family changed": 1,
    }


def test_session_with_impossible_usage_gives_no_pair() -> None:
    record = synthetic_session(1, calls=5)
    samples = list(record.samples)
    samples[2] = samples[2].model_copy(update={"billed": samples[2].base // 2})
    pairs, skipped = session_pairs(record.model_copy(update={"samples": tuple(samples)}))
    assert pairs == []
    assert sum(skipped.values()) == 4


def test_fit_takes_the_prefix_of_a_session_only_family_from_the_family_below() -> None:
    sessions = [synthetic_session(seed) for seed in range(3)]
    calibration = fit(synthetic(20, 1.25, 3.0, 40.0), sessions=sessions)
    older, newer = calibration.families["claude-4"], calibration.families["claude-4.5"]
    assert older.fitted
    assert newer.fitted
    assert newer.fixed == pytest.approx(older.fixed, abs=1e-3)
    assert newer.factor == pytest.approx(TRUE["factor"], abs=0.01)
    opus47 = calibration.families["claude-opus-4.7"]
    assert not opus47.fitted
    assert opus47.factor == pytest.approx(newer.factor * NEW_TOKENIZER_RATIO, abs=1e-3)


def test_anchored_error_is_the_accountants_prediction() -> None:
    record = synthetic_session(2, calls=5)
    exact = fit_family("claude-4.5", [], None, [record])
    wrong = exact.model_copy(update={"factor": exact.factor * 1.1})
    assert float(anchored_errors(exact, record).max()) < 0.002
    errors = anchored_errors(wrong, record)
    assert errors.size == 4
    first = record.samples[0]
    grown = (record.samples[-1].base - first.base) * exact.factor * 0.1
    assert errors[-1] == pytest.approx(grown / record.samples[-1].billed, rel=0.05)


# --- the recorded raw API traces -----------------------------------------------------------


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fit_calibration", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.corpus
def test_calibrated_estimate_within_5_percent_on_raw_traces(corpus: Path) -> None:
    """Median |estimate - billed| / billed under 5% per family, on every call and on distinct ones.

    Honest caveat: the shipped defaults were fitted on this same trace, so this is a training error;
    the leave-one-out figure below is the out-of-sample check.
    """
    samples = _script().samples_from_traces([corpus / TRACE])
    assert len(samples) >= 30
    calibration = default_calibration()
    for group in (samples, distinct(samples)):
        errors = []
        for sample in group:
            params = calibration.for_model(resolve_model(sample.model))
            assert params is not None
            errors.extend(relative_errors(params, [sample]).tolist())
        assert float(np.median(errors)) < 0.05
        assert float(np.max(errors)) < 0.10


@pytest.mark.corpus
def test_leave_one_out_error_on_raw_traces(corpus: Path) -> None:
    samples = _script().samples_from_traces([corpus / TRACE])
    refit = fit(samples)
    for name in ("claude-3", "claude-4"):
        residuals = refit.families[name].residuals
        assert residuals is not None
        assert residuals.loo_median is not None
        assert residuals.loo_median < 0.05, name


@pytest.mark.corpus
def test_script_writes_a_loadable_calibration(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    assert _script().main([str(corpus / TRACE), "--out", str(out)]) == 0
    written = load_calibration(out)
    assert written.families["claude-4"].fitted
    assert written.families["claude-4.5"].fitted  # the corpus's Claude Code sessions
    assert "test-traffic-part1.jsonl" in written.data[0]
    assert "claude-code" in written.data[-1]


@pytest.mark.corpus
def test_counter_for_estimates_billed_input_on_raw_traces(corpus: Path) -> None:
    """The user-facing path (per-part rounding, hidden tool prompt) meets the same 5% bound."""
    calls = [c for c in _script().calls_from_trace(corpus / TRACE) if c.usage is not None]
    errors = []
    for call in calls:
        assert call.usage is not None
        billed = call.usage.total_input
        estimate = counter_for(resolve_model(call.model)).count_conversation(call.request)
        errors.append(abs(estimate - billed) / billed)
    assert len(errors) >= 30
    assert float(np.median(errors)) < 0.05


@pytest.mark.corpus
def test_claude_code_sessions_improve_held_out_sessions(corpus: Path) -> None:
    """Leave one session out: a fit that saw the other Claude Code sessions predicts the held-out
    session's per-call total input better than the trace-only fit (claude-4.5: not fitted).

    Compared per session (the median of the sessions' median errors) and over all calls at the
    90th percentile. Not the median over all calls pooled: there the two longest sessions (287 and
    151 calls) decide, and the 168 calls of the subagents read from agent_progress records
    (errors near 1% either way) moved that median onto calls of the 287-call session, the one the
    held-out fit predicts worse (13% against 11%), while every new subagent session is predicted
    as well or better."""
    script = _script()
    samples = script.samples_from_traces([corpus / TRACE])
    sessions = script.sessions_from_claude_code([corpus])
    trace_only: Calibration = fit(samples)
    held_out = script.loso_errors(samples, sessions)
    assert len(held_out) >= 8
    for family in ("claude-4", "claude-4.5"):
        mine = [r for r in sessions if r.label in held_out and r.family == family]
        assert mine, family
        params = trace_only.for_model(resolve_model(mine[0].samples[0].model))
        assert params is not None
        before_each = [anchored_errors(params, r) for r in mine]
        after_each = [held_out[r.label] for r in mine]
        median_before = np.median([np.median(e) for e in before_each])
        assert float(np.median([np.median(e) for e in after_each])) < float(median_before), family
        before, after = np.concatenate(before_each), np.concatenate(after_each)
        assert float(np.percentile(after, 90)) < float(np.percentile(before, 90)), family


@pytest.mark.corpus
def test_synthetic_claude_code_logs_are_rejected(corpus: Path) -> None:
    sessions = _script().sessions_from_claude_code([corpus / "claude-code-log-synthetic"])
    assert sessions
    for record in sessions:
        pairs, skipped = session_pairs(record)
        assert pairs == []
        assert "usage below the counted messages (not a real recording)" in skipped
