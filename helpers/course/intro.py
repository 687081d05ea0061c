"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import stats


def rounds(table, a: str, b: str) -> pd.DataFrame:
    """One row per round of ``harness.compare`` for methods ``a`` and ``b`` (in that order in
    the call, so round 0 ran A then B, round 1 B then A, ...): both times in ms and their
    ratio A / B (above 1: B was faster in that round)."""
    ta, tb = (np.asarray(stats.method_trials(table, m)) * 1e3 for m in (a, b))
    n = min(len(ta), len(tb))
    return pd.DataFrame({"round": range(1, n + 1),
                         "order": ["A B" if r % 2 == 0 else "B A" for r in range(n)],
                         "A ms": ta[:n].round(2), "B ms": tb[:n].round(2),
                         "A / B": (ta[:n] / tb[:n]).round(3)})


def pairing_reading(spread: dict) -> str:
    """How much of the trials' spread pairing by round cancelled (on a log scale: a ratio spread
    of 1.39x against trials of 1.51x cancelled 20% of it), in words."""
    trials, ratios = spread["trials"], spread["ratios"]
    if not trials > 1:
        return "the trials did not spread"
    cancelled = 1 - math.log(max(ratios, 1.0)) / math.log(trials)
    if cancelled >= 0.5:
        return (f"pairing by round cancelled most of the spread ({cancelled:.0%}): the host's "
                "drift hit both trials of a round")
    if cancelled >= 0.15:
        return (f"pairing by round cancelled some of the spread ({cancelled:.0%}); the rest "
                "changed within a round, and only more rounds narrow the interval")
    return ("pairing by round cancelled little of the spread: the noise changed within a round, "
            "and only more rounds narrow the interval")


def spreads(rounds_table) -> dict:
    """The spread (largest / smallest) of A's trials, and of the per-round ratios A / B: where
    the ratios spread less, pairing by round cancelled what the host did to both trials."""
    ratios = rounds_table["A / B"].to_numpy(dtype=float)
    return {"trials": float(rounds_table["A ms"].max() / rounds_table["A ms"].min()),
            "ratios": float(ratios.max() / ratios.min())}
