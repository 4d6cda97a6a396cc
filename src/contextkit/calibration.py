"""Per-family calibration of a tiktoken count against the input tokens Claude actually bills.

Claude's tokenizer is not public. The estimate of a request's total input (uncached + cache writes
+ cache reads) is ``factor * base + per_message * messages + per_tool * tools + fixed``, plus the
documented hidden tool-use prompt (:func:`contextkit.reference.tool_use_overhead`) when the request
carries tools, where ``base`` is the o200k count of the messages, system prompt and tool schemas.

Contract:

- :func:`sample_from_call` turns a request whose billed total input is known into a
  :class:`CalibrationSample` (the features); :func:`fit` fits one :class:`FamilyCalibration` per
  model family by least squares on RELATIVE errors (the figure we report), with a Gaussian prior on
  each parameter, so a family with few or collinear calls (all one message, no tools) stays
  well-posed and falls back towards the prior rather than to nonsense. Families without data keep
  their prior (``fitted=False``), derived from the fitted ones where the documentation says how
  (Opus 4.7's tokenizer: about 1.30x Opus 4.6's).
- Every fitted family reports its residuals (median, p90, max absolute relative error) and a
  leave-one-out median error.
- :func:`default_calibration` reads the shipped defaults from ``contextkit/data/calibration.json``
  (written by ``scripts/fit_calibration.py``) through :mod:`importlib.resources`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from contextkit.errors import ConfigError
from contextkit.messages import Conversation
from contextkit.reference import parse_claude, tool_use_overhead
from contextkit.session import Call
from contextkit.tokens import MemoCounter, TiktokenCounter

BASE_ENCODING = "o200k_base"
NEW_TOKENIZER_RATIO = 1.30
"""Opus 4.7's tokenizer yields about 30% more tokens than 4.6's for the same text (REFERENCE.md)."""
ASSUMED_NOISE = 0.02
"""Relative residual noise assumed by the prior (2%): sets how much data outweighs the prior."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Residuals(Frozen):
    """Absolute relative errors |estimate - billed| / billed over the calls of a fit."""

    calls: int
    """Distinct requests the fit saw (repeats of one request counted once)."""
    median: float
    p90: float
    max: float
    loo_median: float | None = None
    """Median error when each call is predicted by a fit on the other calls (None: too few)."""


class FamilyCalibration(Frozen):
    family: str
    base_encoding: str = BASE_ENCODING
    factor: float
    per_message: float
    per_tool: float
    fixed: float
    fitted: bool = False
    models: tuple[str, ...] = ()
    """Models whose recorded calls the fit used."""
    residuals: Residuals | None = None
    note: str = ""


class Calibration(Frozen):
    created: date
    data: tuple[str, ...] = ()
    """What the fit was run on (files, number of calls)."""
    method: str = ""
    families: Mapping[str, FamilyCalibration]

    def for_model(self, model: str | None) -> FamilyCalibration | None:
        family = family_of(model)
        return self.families.get(family) if family is not None else None


def family_of(model: str | None) -> str | None:
    """Calibration family of a Claude model (tokenizer generation), None for other models."""
    claude = parse_claude(model)
    if claude is None:
        return None
    version = (claude.major, claude.minor)
    if version < (4, 0):
        return "claude-3"
    if version < (4, 5):
        return "claude-4"
    if version < (4, 7):
        return "claude-4.5"
    return "claude-opus-4.7"  # Opus 4.7 and later: the newer tokenizer


PRIORS: dict[str, FamilyCalibration] = {
    # Third-party measurements put Claude 3.5 at 1.16x (English) to 1.30x (Python) of o200k.
    "claude-3": FamilyCalibration(
        family="claude-3", factor=1.2, per_message=3, per_tool=0, fixed=5, note="prior"
    ),
    "claude-4": FamilyCalibration(
        family="claude-4", factor=1.2, per_message=3, per_tool=0, fixed=5, note="prior"
    ),
}
PRIOR_SCALE = np.array([0.15, 5.0, 20.0, 50.0])
"""One standard deviation of the prior on (factor, per_message, per_tool, fixed)."""


class CalibrationSample(Frozen):
    """Features of one recorded call whose billed total input is known."""

    model: str
    billed: int
    message_tokens: int
    tool_tokens: int
    system_tokens: int
    messages: int
    tools: int
    overhead: int
    """Hidden tool-use prompt from the reference data (0 without tools)."""
    label: str = ""

    @property
    def base(self) -> int:
        return self.message_tokens + self.tool_tokens + self.system_tokens

    @property
    def key(self) -> tuple[object, ...]:
        """Identical requests give identical keys (their repeats add no information)."""
        return (
            self.model,
            self.billed,
            self.message_tokens,
            self.tool_tokens,
            self.system_tokens,
            self.messages,
            self.tools,
            self.overhead,
        )


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
    counter.fixed = 0
    return counter


def sample_from_call(call: Call, counter: MemoCounter, label: str = "") -> CalibrationSample | None:
    """Features of a call with an exact request and billed usage (None when it has neither)."""
    model = call.model or call.request.model
    if call.usage is None or not call.exact or model is None or family_of(model) is None:
        return None
    return sample_from_request(
        call.request, model, call.usage.total_input, counter, call=call, label=label
    )


def sample_from_request(
    request: Conversation,
    model: str,
    billed: int,
    counter: MemoCounter,
    *,
    call: Call | None = None,
    label: str = "",
) -> CalibrationSample:
    """Features of one request whose billed total input is ``billed``."""
    when = call.timestamp if call is not None else None
    choice = (request.model_extra or {}).get("tool_choice")
    return CalibrationSample(
        model=model,
        billed=billed,
        message_tokens=sum(counter.count_message(m) for m in request.messages),
        tool_tokens=sum(counter.count_tool(t) for t in request.tools),
        system_tokens=counter.count_system(request),
        messages=len(request.messages),
        tools=len(request.tools),
        overhead=tool_use_overhead(model, choice, when) if request.tools else 0,
        label=label,
    )


def _design(samples: Sequence[CalibrationSample]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[s.base, s.messages, s.tools, 1.0] for s in samples], dtype=float)
    y = np.array([s.billed - s.overhead for s in samples], dtype=float)
    return x, y


def _solve(samples: Sequence[CalibrationSample], prior: FamilyCalibration) -> np.ndarray:
    """MAP estimate: relative squared error / noise^2 + ((theta - prior) / scale)^2."""
    x, y = _design(samples)
    billed = np.array([max(s.billed, 1) for s in samples], dtype=float)
    theta0 = np.array([prior.factor, prior.per_message, prior.per_tool, prior.fixed])
    a_data = x / billed[:, None] / ASSUMED_NOISE
    b_data = y / billed / ASSUMED_NOISE
    a_prior = np.diag(1.0 / PRIOR_SCALE)
    b_prior = theta0 / PRIOR_SCALE
    theta, *_ = np.linalg.lstsq(np.vstack([a_data, a_prior]), np.concatenate([b_data, b_prior]))
    return np.asarray(theta, dtype=float)


def predict(params: FamilyCalibration, sample: CalibrationSample) -> float:
    """The calibrated estimate of a sample's total input."""
    return (
        params.factor * sample.base
        + params.per_message * sample.messages
        + params.per_tool * sample.tools
        + params.fixed
        + sample.overhead
    )


def relative_errors(params: FamilyCalibration, samples: Sequence[CalibrationSample]) -> np.ndarray:
    return np.array([abs(predict(params, s) - s.billed) / max(s.billed, 1) for s in samples])


def _params(family: str, theta: np.ndarray, **extra: object) -> FamilyCalibration:
    factor, per_message, per_tool, fixed = (round(float(v), 4) for v in theta)
    return FamilyCalibration.model_validate(
        {
            "family": family,
            "factor": factor,
            "per_message": per_message,
            "per_tool": per_tool,
            "fixed": fixed,
            **extra,
        }
    )


def _loo_median(samples: Sequence[CalibrationSample], prior: FamilyCalibration) -> float | None:
    if len(samples) < 3:
        return None
    errors = []
    for i, held_out in enumerate(samples):
        rest = [s for j, s in enumerate(samples) if j != i]
        params = _params(prior.family, _solve(rest, prior))
        errors.append(relative_errors(params, [held_out])[0])
    return float(np.median(errors))


def fit_family(
    family: str, samples: Sequence[CalibrationSample], prior: FamilyCalibration | None = None
) -> FamilyCalibration:
    """Fit one family's parameters on its distinct samples; ``samples`` must not be empty.

    Repeats of one request are dropped first: 15 identical probe calls would otherwise outweigh
    every other call and make the reported errors look better than they are.
    """
    samples = distinct(samples)
    if not samples:
        raise ValueError(f"no samples to fit {family}")
    prior = prior or PRIORS.get(family) or PRIORS["claude-4"].model_copy(update={"family": family})
    theta = _solve(samples, prior)
    draft = _params(family, theta)
    errors = relative_errors(draft, samples)
    residuals = Residuals(
        calls=len(samples),
        median=round(float(np.median(errors)), 5),
        p90=round(float(np.percentile(errors, 90)), 5),
        max=round(float(errors.max()), 5),
        loo_median=_round(_loo_median(samples, prior)),
    )
    models = tuple(sorted({s.model for s in samples}))
    note = f"MAP fit on relative errors (prior: {prior.family} {prior.note or 'default'})"
    return draft.model_copy(
        update={"fitted": True, "models": models, "residuals": residuals, "note": note}
    )


def _round(value: float | None) -> float | None:
    return round(value, 5) if value is not None else None


def _derived(fitted: Mapping[str, FamilyCalibration]) -> dict[str, FamilyCalibration]:
    """Families without data, from the closest fitted one and the documented tokenizer change."""
    base = fitted.get("claude-4") or fitted.get("claude-3") or PRIORS["claude-4"]
    same = f"not fitted: assumed to share {base.family}'s tokenizer (fitted={base.fitted})"
    newer = f"not fitted: {base.family} x{NEW_TOKENIZER_RATIO} (Opus 4.7's new tokenizer, per docs)"
    copy = {"fitted": False, "residuals": None, "models": ()}
    return {
        "claude-4.5": base.model_copy(update={**copy, "family": "claude-4.5", "note": same}),
        "claude-opus-4.7": base.model_copy(
            update={
                **copy,
                "family": "claude-opus-4.7",
                "factor": round(base.factor * NEW_TOKENIZER_RATIO, 4),
                "note": newer,
            }
        ),
    }


def fit(
    samples: Iterable[CalibrationSample], data: Sequence[str] = (), created: date | None = None
) -> Calibration:
    """Fit every family the samples cover; derive the others (see the module docstring)."""
    by_family: dict[str, list[CalibrationSample]] = {}
    for sample in samples:
        family = family_of(sample.model)
        if family is not None:
            by_family.setdefault(family, []).append(sample)
    families = {f: fit_family(f, s) for f, s in sorted(by_family.items())}
    for family, prior in PRIORS.items():
        families.setdefault(family, prior)
    for family, derived in _derived(families).items():
        families.setdefault(family, derived)
    return Calibration(
        created=created or date.today(),
        data=tuple(data),
        method=(
            "MAP least squares on relative error of total billed input; features: o200k tokens "
            "of messages+system+tools (one shared factor), messages, tools, constant; documented "
            f"tool-use prompt subtracted; Gaussian prior (scale {PRIOR_SCALE.tolist()}, noise "
            f"{ASSUMED_NOISE})"
        ),
        families=families,
    )


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file; a bad one raises :class:`ConfigError` naming it."""
    file = Path(path)
    try:
        return Calibration.model_validate(json.loads(file.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"{file}: not a valid calibration file: {exc}") from None


def save_calibration(calibration: Calibration, path: str | Path) -> None:
    Path(path).write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")


@cache
def default_calibration() -> Calibration:
    """The shipped defaults (``contextkit/data/calibration.json``)."""
    data = resources.files("contextkit").joinpath("data", "calibration.json")
    try:
        return Calibration.model_validate_json(data.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise ConfigError(f"shipped contextkit/data/calibration.json is invalid: {exc}") from None


__all__ = [
    "Calibration",
    "CalibrationSample",
    "FamilyCalibration",
    "Residuals",
    "base_counter",
    "default_calibration",
    "distinct",
    "family_of",
    "fit",
    "fit_family",
    "load_calibration",
    "predict",
    "relative_errors",
    "sample_from_call",
    "sample_from_request",
    "save_calibration",
]
