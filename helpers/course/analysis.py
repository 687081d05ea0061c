"""Small analyses the notebooks compute their verdicts from."""
from __future__ import annotations

import math

import numpy as np


def growth_exponent(lengths, times) -> float:
    """k in time ~ length**k, fitted by least squares in log-log space (needs two or more
    distinct positive lengths)."""
    x, y = np.asarray(lengths, dtype=float), np.asarray(times, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    x, y = x[keep], y[keep]
    if len(np.unique(x)) < 2:
        raise ValueError("growth_exponent needs at least two distinct lengths with valid times")
    slope, _ = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope)


def ratio(a, b) -> float:
    """a / b, NaN when either is missing or b is zero."""
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return float("nan")
    return a / b if b and not (math.isnan(a) or math.isnan(b)) else float("nan")


def linear_quadratic_fit(lengths, times) -> tuple:
    """(a, b) in time = a*N + b*N**2, least squares with both terms >= 0 (a negative term is
    dropped and the other refitted). a*N is the per-step cost that does not grow with the
    sequence (launches, Python, the EOS sync); b*N**2 the work that does. Needs two lengths."""
    x, y = np.asarray(lengths, dtype=float), np.asarray(times, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0)
    x, y = x[keep], y[keep]
    if len(np.unique(x)) < 2:
        raise ValueError("linear_quadratic_fit needs at least two distinct lengths with valid times")
    (a, b), *_ = np.linalg.lstsq(np.stack([x, x**2], axis=1), y, rcond=None)
    if a < 0:
        a, b = 0.0, float(np.dot(x**2, y) / np.dot(x**2, x**2))
    elif b < 0:
        a, b = float(np.dot(x, y) / np.dot(x, x)), 0.0
    return float(a), float(b)


def quadratic_share(a, b, length) -> float:
    """The share (0..1) of the fitted time at ``length`` that the N**2 term accounts for."""
    linear, quadratic = a * length, b * length**2
    total = linear + quadratic
    return quadratic / total if total > 0 else float("nan")
