"""Per-family calibration of a tiktoken count against the input tokens Claude actually bills.

Claude's tokenizer is not public. The estimate of a request's total input (uncached + cache writes
+ cache reads) is ``factor * base + thinking_factor * thinking + per_message * messages + per_tool *
tools + per_tool_block * tool_blocks + fixed``, plus the documented hidden tool-use prompt
(:meth:`~contextkit.models.ModelInfo.tool_overhead`) when the request carries tools. ``base`` is the
o200k count of the messages (thinking excluded), system prompt and tool schemas; ``thinking`` the
o200k count of thinking blocks (``thinking_factor`` None: the same as ``factor``); ``tool_blocks``
the number of ``tool_use`` and ``tool_result`` blocks (one figure for both: they always come in
pairs, so the data cannot tell them apart).

Contract: a :class:`Calibration` holds one :class:`FamilyCalibration` per model family
(:attr:`~contextkit.models.ModelInfo.calibration_family`, the tokenizer generation), each with the
residuals of its fit; :meth:`Calibration.for_model` picks a model's. :func:`default_calibration`
reads the shipped defaults from ``contextkit/tokens/data/calibration.json`` (written by
``scripts/fit_calibration.py``) through :mod:`importlib.resources`. How they are fitted:
:mod:`contextkit.tokens._fit`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from contextkit.errors import ConfigError
from contextkit.models import ModelInfo

BASE_ENCODING = "o200k_base"
NEW_TOKENIZER_RATIO = 1.30
"""Opus 4.7's tokenizer yields about 30% more tokens than 4.6's for the same text (REFERENCE.md)."""
ASSUMED_NOISE = 0.02
"""Relative residual noise assumed by the prior (2%): sets how much data outweighs the prior."""
PAIR_NOISE_TOKENS = 20.0
"""Noise floor of one pair difference in tokens (framing of a step no feature describes)."""
OUTLIER_Z = 3.5
"""Pairs farther than this many scaled MADs (at least the assumed noise) from the median
standardised residual are dropped (Iglewicz and Hoaglin's cut-off for the modified z-score)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Residuals(Frozen):
    """How far a family's fit is from its data (absolute relative errors)."""

    calls: int = 0
    """Distinct exact requests the fit saw (repeats of one request counted once)."""
    median: float | None = None
    p90: float | None = None
    max: float | None = None
    loo_median: float | None = None
    """Median error when each exact request is predicted by a fit on the other data (None: too
    few)."""
    pairs: int = 0
    """Consecutive-call pairs of sessions the fit used, after the outlier rule."""
    pairs_dropped: int = 0
    """Pairs the outlier rule dropped."""
    session_calls: int = 0
    """Calls after the first of the sessions, predicted from call 1 (in sample)."""
    session_median: float | None = None
    session_p90: float | None = None


class FamilyCalibration(Frozen):
    family: str
    base_encoding: str = BASE_ENCODING
    factor: float
    per_message: float
    per_tool: float
    fixed: float
    per_tool_block: float = 0.0
    """Tokens added by each tool_use and each tool_result block beyond its counted text."""
    thinking_factor: float | None = None
    """Scale of thinking text (None: ``factor``)."""
    fitted: bool = False
    models: tuple[str, ...] = ()
    """Models whose recorded calls the fit used."""
    residuals: Residuals | None = None
    note: str = ""

    @property
    def thinking_scale(self) -> float:
        return self.factor if self.thinking_factor is None else self.thinking_factor


class Calibration(Frozen):
    created: date
    data: tuple[str, ...] = ()
    """What the fit was run on (files, number of calls)."""
    method: str = ""
    families: Mapping[str, FamilyCalibration]

    def for_model(self, model: ModelInfo) -> FamilyCalibration | None:
        family = model.calibration_family
        return self.families.get(family) if family is not None else None


PRIORS: dict[str, FamilyCalibration] = {
    # Third-party measurements put Claude 3.5 at 1.16x (English) to 1.30x (Python) of o200k.
    "claude-3": FamilyCalibration(
        family="claude-3", factor=1.2, per_message=3, per_tool=0, fixed=5, note="prior"
    ),
    "claude-4": FamilyCalibration(
        family="claude-4", factor=1.2, per_message=3, per_tool=0, fixed=5, note="prior"
    ),
}
PRIOR_SCALE = np.array([0.15, 5.0, 20.0, 50.0, 20.0, 0.5])
"""One standard deviation of the prior on (factor, per_message, per_tool, fixed, per_tool_block,
thinking_factor)."""
FIT_ORDER = ("claude-3", "claude-4", "claude-4.5", "claude-opus-4.7")
"""Fitted in this order: a family's prior may be the fit of the one before it."""


METHOD = (
    "MAP least squares: relative error of the total billed input of exact requests (documented "
    "tool-use prompt subtracted) and token error of the growth between consecutive calls of a "
    "session (hidden prefix cancels); features: o200k tokens of messages+system+tools (one shared "
    "factor), o200k tokens of thinking, messages, tools, tool_use/tool_result blocks, constant; "
    f"Gaussian prior (scale {PRIOR_SCALE.tolist()}, noise {ASSUMED_NOISE} relative, pair floor "
    f"{PAIR_NOISE_TOKENS} tokens); pairs with modified z-score > {OUTLIER_Z} dropped iteratively"
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
    """The shipped defaults (``contextkit/tokens/data/calibration.json``)."""
    data = resources.files("contextkit.tokens").joinpath("data", "calibration.json")
    try:
        return Calibration.model_validate_json(data.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        shipped = "contextkit/tokens/data/calibration.json"
        raise ConfigError(f"shipped {shipped} is invalid: {exc}") from None


__all__ = [
    "BASE_ENCODING",
    "Calibration",
    "FamilyCalibration",
    "Residuals",
    "default_calibration",
    "load_calibration",
    "save_calibration",
]
