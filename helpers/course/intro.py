"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import floor as _floor
from . import budget, stats
from ..model import parameter_bytes


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
    if ratios >= trials:
        return ("pairing cancelled none of the spread in this run (the ratios spread more than "
                "the trials): the noise here changed within rounds, not between them")
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


def floor_reading(model, device, batch_size, prompt_len, new_tokens, floor_ms) -> str:
    """The floor as bytes over bandwidth, e.g. "0.196 ms = 522 MB / 2.66 TB/s measured": the
    bytes a step reads (``budget.floor_ms``'s weights and average keys and values) and the copy
    bandwidth that floor was divided by (``budget.bandwidth``, the same measurement)."""
    if not floor_ms > 0:
        return "no floor on a CPU run"
    kv = _floor.kv_bytes_per_step(model.config, batch_size, prompt_len, new_tokens)
    nbytes = parameter_bytes(model) + kv
    bandwidth = budget.bandwidth(device)
    return (f"{floor_ms:.3f} ms = {nbytes / 1e6:.0f} MB ({parameter_bytes(model) / 1e6:.0f} MB of "
            f"weights, {kv / 1e6:.0f} MB of keys and values) / {bandwidth / 1e12:.2f} TB/s measured")


def resolution(ratio, judge: bool) -> str:
    """What an A/A comparison's interval says about this machine: its half-width in percent is
    about the smallest difference the rounds can resolve. Empty without an interval."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high):
        return ""
    half = 100 * (ratio.high - ratio.low) / 2
    return (f"so on this machine, differences smaller than about \u00b1{half:.0f}% at "
            f"{ratio.n} rounds are invisible")
