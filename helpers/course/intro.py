"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and what an A/A comparison's interval resolves."""
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


def floor_reading(model, device, batch_size, prompt_len, new_tokens, floor_ms) -> str:
    """The floor as bytes over bandwidth, on average over the run's steps, e.g. "0.196 ms on
    average over the run's 40 steps = 582 MB / 2.97 TB/s measured: 498 MB of weights and 84 MB
    of keys and values (35.5 positions on average; 55 at the last step, 130 MB)": the bytes a
    step reads (``budget.floor_ms``'s weights and average keys and values), the cache at the
    last step for comparison, and the copy bandwidth that floor was divided by
    (``budget.bandwidth``, the same measurement)."""
    if not floor_ms > 0:
        return "no floor on a CPU run"
    kv = _floor.kv_bytes_per_step(model.config, batch_size, prompt_len, new_tokens)
    last = prompt_len + new_tokens - 1  # positions the last step attends to
    kv_last = _floor.kv_bytes_per_step(model.config, batch_size, last, 1)
    mean = prompt_len + (new_tokens - 1) / 2
    weights = parameter_bytes(model)
    return (f"{floor_ms:.3f} ms on average over the run's {new_tokens} steps = "
            f"{(weights + kv) / 1e6:.0f} MB / {budget.bandwidth(device) / 1e12:.2f} TB/s measured: "
            f"{weights / 1e6:.0f} MB of weights and {kv / 1e6:.0f} MB of keys and values "
            f"({mean:g} positions on average; {last} at the last step, {kv_last / 1e6:.0f} MB)")


def swing(by_round) -> str:
    """The range of one round's A / B ratio in ``rounds``'s table, e.g. "one round's A / B ran
    from 0.84 to 1.88 (-16% to +88%)": how far a single round can stray (a slow trial moves its
    round's ratio by its full size)."""
    r = by_round["A / B"]
    if len(r) == 0:
        return "no rounds"
    lo, hi = float(r.min()), float(r.max())
    return (f"one round's A / B ran from {lo:.2f} to {hi:.2f} "
            f"({100 * (lo - 1):+.0f}% to {100 * (hi - 1):+.0f}%) over {len(r)} rounds")


def resolution(ratio, judge: bool) -> str:
    """What an A/A comparison's interval says about this run: a difference inside its bounds,
    in percent (not symmetric: e.g. -7% to +34%), would not show at this many rounds. Empty
    without an interval."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high):
        return ""
    if stats.verdict(ratio) != stats.NOISE:  # identical loops told apart: say what that means
        return ("identical loops told apart: a false alarm, which a 95% interval gives about one "
                "run in twenty, or more often when the host's speed drifts during the rounds; "
                "every later verdict of this run carries that risk, which is why the course "
                "compares runs (docs/runs.md)")
    return (f"so in this run, at {ratio.n} rounds, a difference between "
            f"{100 * (ratio.low - 1):+.0f}% and {100 * (ratio.high - 1):+.0f}% would not show")
