"""Token counts: the :class:`TokenCounter` protocol, tiktoken and approximate counters memoised per
block, the calibrated counter for Claude models, the provider's counting endpoint, and the
calibration fitted on recorded usage.
"""

from __future__ import annotations

from contextkit.tokens._calibration import (
    BASE_ENCODING,
    Calibration,
    FamilyCalibration,
    Residuals,
    default_calibration,
    load_calibration,
    save_calibration,
)
from contextkit.tokens._counters import (
    AnthropicCountingCounter,
    CalibratedCounter,
    TiktokenCounter,
    TokenizerUnavailable,
    TokenizerUnavailableWarning,
    UnfittedTokenizerWarning,
    counter_for,
    default_counter,
    get_counter,
)
from contextkit.tokens._fit import (
    CalibrationPair,
    CalibrationSample,
    SessionSamples,
    anchored_errors,
    base_counter,
    distinct,
    fit,
    fit_family,
    predict,
    relative_errors,
    sample_from_call,
    sample_from_request,
    session_pairs,
    session_samples,
)
from contextkit.tokens._memo import (
    IMAGE_TOKENS_DEFAULT,
    ApproxCounter,
    MemoCounter,
    TokenCounter,
)
from contextkit.tokens._text import (
    block_text,
)

__all__ = [
    "BASE_ENCODING",
    "IMAGE_TOKENS_DEFAULT",
    "AnthropicCountingCounter",
    "ApproxCounter",
    "CalibratedCounter",
    "Calibration",
    "CalibrationPair",
    "CalibrationSample",
    "FamilyCalibration",
    "MemoCounter",
    "Residuals",
    "SessionSamples",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerUnavailable",
    "TokenizerUnavailableWarning",
    "UnfittedTokenizerWarning",
    "anchored_errors",
    "base_counter",
    "block_text",
    "counter_for",
    "default_calibration",
    "default_counter",
    "distinct",
    "fit",
    "fit_family",
    "get_counter",
    "load_calibration",
    "predict",
    "relative_errors",
    "sample_from_call",
    "sample_from_request",
    "save_calibration",
    "session_pairs",
    "session_samples",
]
