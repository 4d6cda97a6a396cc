"""Distributions of a workload profile: what one value of a TOML profile may be.

Contract: a profile value is a plain number (fixed) or a table with a ``dist`` key:
``{dist="lognormal", mean=, sd=}``, ``{dist="poisson", mean=}``, ``{dist="uniform", low=, high=}``,
``{dist="choice", values=[...], weights=[...]}`` (weights optional). Each :data:`Dist` draws a
vectorised sample (``sample(rng, n)``, floats) and knows its first two moments exactly
(``moments()``), so the closed-form expectation and the Monte Carlo use the same definitions.

Counts (user turns, calls per turn) are drawn as ``max(1, round(x))``: a ticket has at least one
turn and a turn at least one call. :meth:`count_sample` and :meth:`count_moments` apply that
transform; the moments stay exact (Poisson in closed form, the others by summing the probability
mass of each integer).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

FloatArray = npt.NDArray[np.float64]
_TAIL = 1e-12
_MAX_SUPPORT = 2_000_000


class _Dist(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        raise NotImplementedError

    def moments(self) -> tuple[float, float]:
        """(E[X], E[X^2])."""
        raise NotImplementedError

    def pmf(self) -> tuple[FloatArray, FloatArray]:
        """(integers k >= 1, P(max(1, round(X)) = k)): the count distribution's mass."""
        raise NotImplementedError

    @property
    def expected(self) -> float:
        """E[X]."""
        return self.moments()[0]

    def count_sample(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        return np.maximum(1, np.rint(self.sample(rng, n))).astype(np.int64)

    def count_moments(self) -> tuple[float, float]:
        k, p = self.pmf()
        return float((k * p).sum()), float((k * k * p).sum())

    def to_toml(self) -> dict[str, Any] | float:
        return dict(self.model_dump(exclude_none=True))


class Fixed(_Dist):
    dist: Literal["fixed"] = "fixed"
    value: float = Field(ge=0)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return np.full(n, self.value)

    def moments(self) -> tuple[float, float]:
        return self.value, self.value**2

    def pmf(self) -> tuple[FloatArray, FloatArray]:
        return np.array([max(1.0, float(round(self.value)))]), np.array([1.0])

    def to_toml(self) -> dict[str, Any] | float:
        return int(self.value) if float(self.value).is_integer() else self.value


class LogNormal(_Dist):
    """Parametrised by the mean and standard deviation of the value itself (not of its log)."""

    dist: Literal["lognormal"] = "lognormal"
    mean: float = Field(gt=0)
    sd: float = Field(ge=0)

    @property
    def _log_params(self) -> tuple[float, float]:
        sigma2 = math.log1p((self.sd / self.mean) ** 2)
        return math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        mu, sigma = self._log_params
        return rng.lognormal(mu, sigma, n) if sigma > 0 else np.full(n, self.mean)

    def moments(self) -> tuple[float, float]:
        return self.mean, self.sd**2 + self.mean**2

    def _cdf(self, x: FloatArray) -> FloatArray:
        mu, sigma = self._log_params
        if sigma == 0:
            return (x >= self.mean).astype(np.float64)
        z = (np.log(np.maximum(x, 1e-300)) - mu) / (sigma * math.sqrt(2))
        erf: FloatArray = np.vectorize(math.erf, otypes=[np.float64])(z)
        return 0.5 * (1 + erf)

    def pmf(self) -> tuple[FloatArray, FloatArray]:
        mu, sigma = self._log_params
        top = math.exp(mu + sigma * 7.1)  # P(X > top) < 1e-12
        k = np.arange(1, min(max(int(top) + 2, 2), _MAX_SUPPORT), dtype=np.float64)
        upper = self._cdf(k + 0.5)
        lower = np.concatenate([[0.0], upper[:-1]])
        p = upper - lower
        p[-1] += 1.0 - upper[-1]
        return k, p


class Poisson(_Dist):
    dist: Literal["poisson"] = "poisson"
    mean: float = Field(ge=0)

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return rng.poisson(self.mean, n).astype(np.float64)

    def moments(self) -> tuple[float, float]:
        return self.mean, self.mean + self.mean**2

    def count_moments(self) -> tuple[float, float]:
        # max(1, X) differs from X only at X = 0, which becomes 1.
        p0 = math.exp(-self.mean)
        m1, m2 = self.moments()
        return m1 + p0, m2 + p0

    def pmf(self) -> tuple[FloatArray, FloatArray]:
        top = int(self.mean + 12 * math.sqrt(self.mean + 1) + 10)
        k = np.arange(0, top + 1, dtype=np.float64)
        logp = k * math.log(max(self.mean, 1e-300)) - self.mean - np.vectorize(math.lgamma)(k + 1)
        p = np.exp(logp) if self.mean > 0 else (k == 0).astype(np.float64)
        p[1] += p[0]
        return k[1:], p[1:]


class Uniform(_Dist):
    """Continuous on [low, high] for sizes; as a count, each integer of [low, high] alike."""

    dist: Literal["uniform"] = "uniform"
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"uniform: high ({self.high}) is below low ({self.low})")
        return self

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return rng.uniform(self.low, self.high, n)

    def count_sample(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        lo, hi = math.ceil(self.low), math.floor(self.high)
        draws = rng.integers(lo, max(hi, lo) + 1, n)
        return np.maximum(1, draws).astype(np.int64)

    def moments(self) -> tuple[float, float]:
        lo, hi = self.low, self.high
        return (lo + hi) / 2, (lo * lo + lo * hi + hi * hi) / 3

    def pmf(self) -> tuple[FloatArray, FloatArray]:
        lo, hi = math.ceil(self.low), math.floor(self.high)
        k = np.maximum(1, np.arange(lo, max(hi, lo) + 1)).astype(np.float64)
        return k, np.full(k.size, 1.0 / k.size)


class Choice(_Dist):
    dist: Literal["choice"] = "choice"
    values: tuple[float, ...] = Field(min_length=1)
    weights: tuple[float, ...] | None = None

    @model_validator(mode="after")
    def _valid(self) -> Choice:
        if any(v < 0 for v in self.values):
            raise ValueError("choice: values must not be negative")
        if self.weights is not None and (
            len(self.weights) != len(self.values) or any(w < 0 for w in self.weights)
        ):
            raise ValueError("choice: weights must be as many as values and not negative")
        if self.weights is not None and sum(self.weights) <= 0:
            raise ValueError("choice: weights must not all be zero")
        return self

    @property
    def _p(self) -> FloatArray:
        w = np.ones(len(self.values)) if self.weights is None else np.asarray(self.weights, float)
        return w / w.sum()  # type: ignore[no-any-return]

    def sample(self, rng: np.random.Generator, n: int) -> FloatArray:
        return rng.choice(np.asarray(self.values, dtype=np.float64), size=n, p=self._p)

    def moments(self) -> tuple[float, float]:
        v = np.asarray(self.values, dtype=np.float64)
        return float((v * self._p).sum()), float((v * v * self._p).sum())

    def pmf(self) -> tuple[FloatArray, FloatArray]:
        k = np.maximum(1.0, np.rint(np.asarray(self.values, dtype=np.float64)))
        return k, self._p


def _coerce(value: object) -> object:
    """A plain number is a fixed value."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"dist": "fixed", "value": value}
    return value


Dist: TypeAlias = Annotated[
    Fixed | LogNormal | Poisson | Uniform | Choice,
    Field(discriminator="dist"),
    BeforeValidator(_coerce),
]

__all__ = ["Choice", "Dist", "Fixed", "LogNormal", "Poisson", "Uniform"]
