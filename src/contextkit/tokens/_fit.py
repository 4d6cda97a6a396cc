"""Fitting the calibration of :mod:`contextkit.tokens._calibration` on recorded usage.

Contract:

- :func:`sample_from_call` turns a request whose billed total input is known into a
  :class:`CalibrationSample` (the features). :func:`session_samples` does it for every call of a
  session whose system prompt and tools are NOT known (Claude Code files); such a session only
  calibrates through DIFFERENCES of consecutive calls (:func:`session_pairs`), where the unknown
  prefix cancels. A pair is used when the later request extends the earlier one (same messages
  first), is not the first call after a compaction, is of the same family, and its recorded total
  does not drop; a session whose recorded total is ever below the o200k count of its own messages
  is not a real recording (synthetic usage) and gives no pair.
- :func:`fit` fits one :class:`FamilyCalibration` per model family: MAP least squares on relative
  errors of exact requests (noise ``ASSUMED_NOISE``) and on token errors of pair differences
  (noise ``sqrt((ASSUMED_NOISE*delta)^2 + PAIR_NOISE_TOKENS^2)``), with a Gaussian prior on each
  parameter, so a family with few or collinear data stays well-posed and falls back towards the
  prior. Pairs are trimmed robustly: refit without those whose standardised residual lies more
  than ``OUTLIER_Z`` scaled MADs (never less than the assumed noise) from the median (the modified
  z-score rule), until the kept set is stable. Parameters pairs cannot see (``fixed``,
  ``per_tool``) keep the prior, which for a family without exact requests is the fitted family
  below it (claude-4.5 from claude-4). Families
  without data keep their prior (``fitted=False``), derived from the fitted ones where the
  documentation says how (Opus 4.7's tokenizer: about 1.30x Opus 4.6's).
- Every fitted family reports its residuals: on exact requests (median, p90, max absolute relative
  error and a leave-one-out median), and on sessions (the per-call error of total input predicted
  as the accountant does: call 1's recorded total plus the counted growth since call 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from itertools import pairwise

import numpy as np

from contextkit.messages import Conversation, ThinkingBlock, ToolResultBlock, ToolUseBlock
from contextkit.models import ModelInfo, resolve_model
from contextkit.session import Call, Session
from contextkit.tokens._calibration import (
    ASSUMED_NOISE,
    BASE_ENCODING,
    FIT_ORDER,
    METHOD,
    NEW_TOKENIZER_RATIO,
    OUTLIER_Z,
    PAIR_NOISE_TOKENS,
    PRIOR_SCALE,
    PRIORS,
    Calibration,
    FamilyCalibration,
    Frozen,
    Residuals,
)
from contextkit.tokens._counters import TiktokenCounter
from contextkit.tokens._memo import MemoCounter


class CalibrationSample(Frozen):
    """Features of one recorded call whose billed total input is known."""

    model: str
    billed: int
    message_tokens: int
    """o200k tokens of the message content, thinking excluded."""
    tool_tokens: int
    system_tokens: int
    messages: int
    tools: int
    overhead: int
    """Hidden tool-use prompt from the reference data (0 without tools)."""
    thinking_tokens: int = 0
    tool_blocks: int = 0
    """tool_use and tool_result blocks in the messages."""
    label: str = ""

    @property
    def base(self) -> int:
        return self.message_tokens + self.tool_tokens + self.system_tokens

    @property
    def family(self) -> str | None:
        """The calibration family of the sample's model (its id is kept as recorded)."""
        return resolve_model(self.model).calibration_family

    @property
    def key(self) -> tuple[object, ...]:
        """Identical requests give identical keys (their repeats add no information)."""
        return tuple(self.model_dump(exclude={"label"}).values())


class SessionSamples(Frozen):
    """The calls of one session whose hidden prefix (system prompt, tools) is not known."""

    label: str
    samples: tuple[CalibrationSample, ...]
    compactions: tuple[int, ...] = ()
    extends: tuple[bool, ...] = ()
    """Per call after the first: its request starts with every message of the one before."""

    @property
    def family(self) -> str | None:
        return self.samples[0].family if self.samples else None


class CalibrationPair(Frozen):
    """Two consecutive calls of one session: their difference is free of the hidden prefix."""

    before: CalibrationSample
    after: CalibrationSample
    session: str


def distinct(samples: Iterable[CalibrationSample]) -> list[CalibrationSample]:
    """Samples with repeated requests (a harness's identical probe calls) kept once."""
    seen: dict[tuple[object, ...], CalibrationSample] = {}
    for sample in samples:
        seen.setdefault(sample.key, sample)
    return list(seen.values())


def base_counter() -> MemoCounter:
    """The raw o200k counter the features use (no per-message or fixed framing)."""
    counter = TiktokenCounter(BASE_ENCODING)
    counter.per_message = 0
    counter.per_tool = 0
    counter.fixed = 0
    return counter


def sample_from_call(call: Call, counter: MemoCounter, label: str = "") -> CalibrationSample | None:
    """Features of a call with an exact request and billed usage (None when it has neither)."""
    model = call.model_info
    if call.usage is None or not call.exact or model.calibration_family is None:
        return None
    return sample_from_request(
        call.request, model, call.usage.total_input, counter, call=call, label=label
    )


def sample_from_request(
    request: Conversation,
    model: ModelInfo,
    billed: int,
    counter: MemoCounter,
    *,
    call: Call | None = None,
    label: str = "",
) -> CalibrationSample:
    """Features of one request whose billed total input is ``billed``."""
    when = call.timestamp if call is not None else None
    choice = (request.model_extra or {}).get("tool_choice")
    blocks = [b for m in request.messages if not isinstance(m.content, str) for b in m.content]
    thinking = sum(counter.count_block(b) for b in blocks if isinstance(b, ThinkingBlock))
    return CalibrationSample(
        model=model.id,
        billed=billed,
        message_tokens=sum(counter.count_message(m) for m in request.messages) - thinking,
        tool_tokens=sum(counter.count_tool(t) for t in request.tools),
        system_tokens=counter.count_system(request),
        messages=len(request.messages),
        tools=len(request.tools),
        overhead=model.tool_overhead(choice, when) if request.tools else 0,
        thinking_tokens=thinking,
        tool_blocks=sum(isinstance(b, ToolUseBlock | ToolResultBlock) for b in blocks),
        label=label,
    )


def session_samples(session: Session, counter: MemoCounter, label: str) -> SessionSamples | None:
    """Every call's features, when every call has billed usage and a Claude model (else None)."""
    samples = []
    for i, call in enumerate(session.calls):
        model = call.model_info
        if call.usage is None or model.calibration_family is None:
            return None
        billed = call.usage.total_input
        samples.append(
            sample_from_request(call.request, model, billed, counter, call=call, label=f"{i}")
        )
    calls = session.calls
    extends = tuple(
        len(b.request.messages) >= len(a.request.messages)
        and b.request.messages[: len(a.request.messages)] == a.request.messages
        for a, b in pairwise(calls)
    )
    return SessionSamples(
        label=label, samples=tuple(samples), compactions=session.compactions, extends=extends
    )


def session_pairs(record: SessionSamples) -> tuple[list[CalibrationPair], Counter[str]]:
    """The usable consecutive pairs of a session, and why the others were skipped."""
    skipped: Counter[str] = Counter()
    samples = record.samples
    if any(s.billed < s.base + s.thinking_tokens for s in samples):
        skipped["usage below the counted messages (not a real recording)"] += len(samples) - 1
        return [], skipped
    pairs = []
    for k in range(1, len(samples)):
        before, after = samples[k - 1], samples[k]
        if k in record.compactions:
            skipped["first call after a compaction"] += 1
        elif before.family != after.family:
            skipped["model family changed"] += 1
        elif record.extends and not record.extends[k - 1]:
            skipped["request does not extend the previous one"] += 1
        elif after.billed < before.billed:
            skipped["recorded total dropped"] += 1
        else:
            pairs.append(CalibrationPair(before=before, after=after, session=record.label))
    return pairs, skipped


# --- the fit ----------------------------------------------------------------------------------


def _features(samples: Sequence[CalibrationSample]) -> np.ndarray:
    """Columns in the order of PRIOR_SCALE."""
    return np.array(
        [[s.base, s.messages, s.tools, 1.0, s.tool_blocks, s.thinking_tokens] for s in samples],
        dtype=float,
    ).reshape(len(samples), len(PRIOR_SCALE))


def _pair_rows(pairs: Sequence[CalibrationPair]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(feature differences, billed differences, noise) of pairs."""
    x = _features([p.after for p in pairs]) - _features([p.before for p in pairs])
    y = np.array([p.after.billed - p.before.billed for p in pairs], dtype=float)
    noise = np.sqrt((ASSUMED_NOISE * y) ** 2 + PAIR_NOISE_TOKENS**2)
    return x, y, noise


def _theta0(prior: FamilyCalibration) -> np.ndarray:
    p = prior
    return np.array(
        [p.factor, p.per_message, p.per_tool, p.fixed, p.per_tool_block, p.thinking_scale]
    )


def _solve(
    samples: Sequence[CalibrationSample],
    prior: FamilyCalibration,
    pairs: Sequence[CalibrationPair] = (),
) -> np.ndarray:
    """MAP estimate: (relative or pair) squared error / noise^2 + ((theta - prior) / scale)^2."""
    x = _features(samples)
    y = np.array([s.billed - s.overhead for s in samples], dtype=float)
    billed = np.array([max(s.billed, 1) for s in samples], dtype=float)
    px, py, pnoise = _pair_rows(pairs)
    a = np.vstack(
        [
            x / billed[:, None] / ASSUMED_NOISE,
            px / pnoise[:, None],
            np.diag(1.0 / PRIOR_SCALE),
        ]
    )
    b = np.concatenate([y / billed / ASSUMED_NOISE, py / pnoise, _theta0(prior) / PRIOR_SCALE])
    theta, *_ = np.linalg.lstsq(a, b, rcond=None)
    return np.asarray(theta, dtype=float)


def _robust_solve(
    samples: Sequence[CalibrationSample],
    prior: FamilyCalibration,
    pairs: Sequence[CalibrationPair],
) -> tuple[np.ndarray, list[CalibrationPair]]:
    """Solve, drop pairs with modified z-score above OUTLIER_Z, repeat until the set is stable."""
    kept = list(pairs)
    theta = _solve(samples, prior, kept)
    if not pairs:
        return theta, kept
    x, y, noise = _pair_rows(pairs)
    mask = np.ones(len(pairs), dtype=bool)
    for _ in range(20):
        z = (y - x @ theta) / noise
        centre = np.median(z[mask])
        # Never below the assumed noise: clean data must not lose pairs to rounding.
        spread = max(1.4826 * float(np.median(np.abs(z[mask] - centre))), 1.0)
        new = np.abs(z - centre) <= OUTLIER_Z * spread
        if np.array_equal(new, mask):
            break
        mask = new
        kept = [p for p, keep in zip(pairs, mask, strict=True) if keep]
        theta = _solve(samples, prior, kept)
    return theta, kept


def predict(params: FamilyCalibration, sample: CalibrationSample) -> float:
    """The calibrated estimate of a sample's total input."""
    return (
        params.factor * sample.base
        + params.thinking_scale * sample.thinking_tokens
        + params.per_message * sample.messages
        + params.per_tool * sample.tools
        + params.per_tool_block * sample.tool_blocks
        + params.fixed
        + sample.overhead
    )


def relative_errors(params: FamilyCalibration, samples: Sequence[CalibrationSample]) -> np.ndarray:
    return np.array([abs(predict(params, s) - s.billed) / max(s.billed, 1) for s in samples])


def anchored_errors(params: FamilyCalibration, record: SessionSamples) -> np.ndarray:
    """Per call after the first: |predicted - billed| / billed, the total input predicted as the
    accountant does (call 1's recorded total + the counted growth since call 1)."""
    first = record.samples[0]
    start = predict(params, first)
    rest = [s for s in record.samples[1:] if s.family == first.family]
    return np.array(
        [abs(first.billed + predict(params, s) - start - s.billed) / max(s.billed, 1) for s in rest]
    )


def _params(family: str, theta: np.ndarray, thinking: bool, **extra: object) -> FamilyCalibration:
    factor, per_message, per_tool, fixed, per_block, think = (round(float(v), 4) for v in theta)
    return FamilyCalibration.model_validate(
        {
            "family": family,
            "factor": factor,
            "per_message": per_message,
            "per_tool": per_tool,
            "fixed": fixed,
            "per_tool_block": per_block,
            "thinking_factor": think if thinking else None,
            **extra,
        }
    )


def _loo_median(
    samples: Sequence[CalibrationSample],
    prior: FamilyCalibration,
    pairs: Sequence[CalibrationPair],
    thinking: bool,
) -> float | None:
    if len(samples) < 3:
        return None
    errors = []
    for i, held_out in enumerate(samples):
        rest = [s for j, s in enumerate(samples) if j != i]
        params = _params(prior.family, _solve(rest, prior, pairs), thinking)
        errors.append(relative_errors(params, [held_out])[0])
    return float(np.median(errors))


def _stats(errors: np.ndarray) -> tuple[float | None, float | None]:
    if not errors.size:
        return None, None
    return round(float(np.median(errors)), 5), round(float(np.percentile(errors, 90)), 5)


def fit_family(
    family: str,
    samples: Sequence[CalibrationSample],
    prior: FamilyCalibration | None = None,
    sessions: Sequence[SessionSamples] = (),
) -> FamilyCalibration:
    """Fit one family on its distinct exact samples and the pairs of its sessions (not both empty).

    Repeats of one request are dropped first: 15 identical probe calls would otherwise outweigh
    every other call and make the reported errors look better than they are.
    """
    samples = distinct(samples)
    by_session = [(record, session_pairs(record)[0]) for record in sessions]
    sessions = [record for record, found in by_session if found]  # rejected ones say nothing
    pairs = [p for _, found in by_session for p in found]
    if not samples and not pairs:
        raise ValueError(f"no samples to fit {family}")
    prior = prior or PRIORS.get(family) or PRIORS["claude-4"].model_copy(update={"family": family})
    thinking = any(p.after.thinking_tokens != p.before.thinking_tokens for p in pairs) or any(
        s.thinking_tokens for s in samples
    )
    theta, kept = _robust_solve(samples, prior, pairs)
    if not thinking:
        theta[5] = prior.thinking_scale
    draft = _params(family, theta, thinking or prior.thinking_factor is not None)
    residuals = _residuals(draft, samples, sessions, pairs, kept, prior, thinking)
    used = [*samples, *(s for p in kept for s in (p.before, p.after))]
    note = f"MAP fit on relative errors and pair differences (prior: {prior.family} {prior.note})"
    return draft.model_copy(
        update={
            "fitted": True,
            "models": tuple(sorted({s.model for s in used})),
            "residuals": residuals,
            "note": note,
        }
    )


def _residuals(
    params: FamilyCalibration,
    samples: Sequence[CalibrationSample],
    sessions: Sequence[SessionSamples],
    pairs: Sequence[CalibrationPair],
    kept: Sequence[CalibrationPair],
    prior: FamilyCalibration,
    thinking: bool,
) -> Residuals:
    errors = relative_errors(params, samples) if samples else np.zeros(0)
    anchored = [anchored_errors(params, r) for r in sessions if len(r.samples) > 1]
    session_errors = np.concatenate(anchored) if anchored else np.zeros(0)
    median, p90 = _stats(errors)
    session_median, session_p90 = _stats(session_errors)
    return Residuals(
        calls=len(samples),
        median=median,
        p90=p90,
        max=round(float(errors.max()), 5) if errors.size else None,
        loo_median=_round(_loo_median(samples, prior, kept, thinking)),
        pairs=len(kept),
        pairs_dropped=len(pairs) - len(kept),
        session_calls=int(session_errors.size),
        session_median=session_median,
        session_p90=session_p90,
    )


def _round(value: float | None) -> float | None:
    return round(value, 5) if value is not None else None


def _derived(fitted: Mapping[str, FamilyCalibration]) -> dict[str, FamilyCalibration]:
    """Families without data, from the closest fitted one and the documented tokenizer change."""
    base = fitted.get("claude-4") or fitted.get("claude-3") or PRIORS["claude-4"]
    same = f"not fitted: assumed to share {base.family}'s tokenizer (fitted={base.fitted})"
    copy = {"fitted": False, "residuals": None, "models": ()}
    out = {"claude-4.5": base.model_copy(update={**copy, "family": "claude-4.5", "note": same})}
    older = fitted.get("claude-4.5") or out["claude-4.5"]
    think = older.thinking_factor
    out["claude-opus-4.7"] = older.model_copy(
        update={
            **copy,
            "family": "claude-opus-4.7",
            "factor": round(older.factor * NEW_TOKENIZER_RATIO, 4),
            "thinking_factor": None if think is None else round(think * NEW_TOKENIZER_RATIO, 4),
            "note": f"not fitted: {older.family} x{NEW_TOKENIZER_RATIO} (Opus 4.7's new "
            f"tokenizer, per docs; fitted={older.fitted})",
        }
    )
    return out


def _prior(family: str, fitted: Mapping[str, FamilyCalibration]) -> FamilyCalibration:
    """The family's own prior, else what the families fitted before it imply for it."""
    if family in PRIORS:
        return PRIORS[family]
    derived = _derived(fitted).get(family)
    if derived is None:
        return PRIORS["claude-4"].model_copy(update={"family": family})
    return derived.model_copy(update={"note": f"({derived.note})"})


def fit(
    samples: Iterable[CalibrationSample],
    data: Sequence[str] = (),
    created: date | None = None,
    sessions: Iterable[SessionSamples] = (),
) -> Calibration:
    """Fit every family the samples or sessions cover; derive the others (module docstring)."""
    by_family: dict[str, list[CalibrationSample]] = {}
    for sample in samples:
        family = sample.family
        if family is not None:
            by_family.setdefault(family, []).append(sample)
    records: dict[str, list[SessionSamples]] = {}
    for record in sessions:
        if record.family is not None:
            records.setdefault(record.family, []).append(record)
    families: dict[str, FamilyCalibration] = {}
    order = [*FIT_ORDER, *sorted((set(by_family) | set(records)) - set(FIT_ORDER))]
    for family in order:
        mine, recs = by_family.get(family, []), records.get(family, [])
        if mine or any(session_pairs(r)[0] for r in recs):
            families[family] = fit_family(family, mine, _prior(family, families), recs)
    for family, prior in PRIORS.items():
        families.setdefault(family, prior)
    for family, derived in _derived(families).items():
        families.setdefault(family, derived)
    return Calibration(
        created=created or date.today(), data=tuple(data), method=METHOD, families=families
    )


__all__ = [
    "CalibrationPair",
    "CalibrationSample",
    "SessionSamples",
    "anchored_errors",
    "base_counter",
    "distinct",
    "fit",
    "fit_family",
    "predict",
    "relative_errors",
    "sample_from_call",
    "sample_from_request",
    "session_pairs",
    "session_samples",
]
