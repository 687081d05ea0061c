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
