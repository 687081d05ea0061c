"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and token ratio,
the regimes whose check cost the rounds cannot resolve, and the profiler's view of one check."""
from __future__ import annotations

import pandas as pd

from . import harness, plotting, profiling, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def stop_bound(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """The token counts behind early stopping's gain at ``cap`` (the no-check loop's new tokens
    per row over the checking loop's), in brackets after its verdict: the gain should come out
    at about this ratio. Where the checking loop was timed at several caps doing the same work
    at each, how far its medians moved between them: the drift between eager calls, which the
    gain carries too. Empty on a smoke run or without both rows."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == cap)].set_index("method")
    if not judge or not {CHECK, FREE} <= set(ok.index):
        return ""
    free, check = int(ok.at[FREE, "tokens"]), int(ok.at[CHECK, "tokens"])
    text = f" ({free} against {check} tokens per row, a token ratio of {free / check:.2f}"
    same = table[(table["status"] == harness.OK) & (table["method"] == CHECK)]
    if same["seq_len"].nunique() > 1 and same["tokens"].nunique() == 1:
        moved = same["median_s"].max() / same["median_s"].min() - 1
        text += (f"; the checking loop does the same work at every cap, yet its median moved "
                 f"{100 * moved:.0f}% between caps: eager times drift that much between calls, "
                 "and the gain with them")
    return text + ")"


def plot_early_stop(ax, table: pd.DataFrame, stop_low: int, stop_high: int):
    """Seconds per batch of each loop at each cap, as bars side by side (the caps are separate
    points, not a trend), with each loop's fastest and slowest run as a whisker."""
    ok = table[table["status"] == harness.OK]
    caps = sorted(ok["seq_len"].unique())
    width = 0.38
    for i, (method, colour) in enumerate(((CHECK, plotting.PALETTE[0]), (FREE, plotting.PALETTE[1]))):
        part = ok[ok["method"] == method].set_index("seq_len").reindex(caps)
        x = [k + (i - 0.5) * width for k in range(len(caps))]
        bars = ax.bar(x, part["median_s"], width, color=colour, label=method,
                      yerr=[part["median_s"] - part["min_s"], part["max_s"] - part["median_s"]],
                      capsize=3, ecolor="#555555")
        plotting.label_bars(ax, bars, fmt="{:.2f}")
    ax.set_xticks(range(len(caps)), [f"cap {int(c)}" for c in caps])
    ax.set(ylabel="seconds per batch (median)", xlabel="whiskers: fastest to slowest run",
           title=f"Early stopping: time to finish (rows stop at {stop_low}-{stop_high})")
    ax.legend(loc="upper left", fontsize=9, frameon=False)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)


def gap_line(gaps: pd.DataFrame, step_budget: pd.DataFrame, regime: str = "CUDA graph") -> str:
    """Like with like: the idle the check adds under the profiler (the checking loop's median GPU
    gap before a step less the no-check loop's; ``gaps``: a row per loop, ``gap_before_us`` and
    ``cpu_us``) against its timed cost per step at ``regime`` (``step_budget``'s wall clock with
    the check less without). Where the two agree within a fifth of the cost, the cost is that
    gap; where the profiled difference is the larger, the profiler's own host time is named only
    where a profiled step ran longer than a timed one by at least the excess."""
    wall = 1e3 * step_budget.set_index("method")["wall_ms"]
    cost, timed = wall[f"{regime}, {CHECK}"] - wall[f"{regime}, {FREE}"], wall[f"{regime}, {CHECK}"]
    with_gap, free_gap = gaps.at[CHECK, "gap_before_us"], gaps.at[FREE, "gap_before_us"]
    added, cpu = with_gap - free_gap, gaps.at[CHECK, "cpu_us"]
    head = (f"Under the profiler the GPU idles {with_gap:.0f} µs before each step with the check "
            f"and {free_gap:.0f} µs without, so the check adds {added:.0f} µs of idle")
    if cost <= 0:
        return head + "; the timed rounds show no cost per step."
    head += f" against its timed cost of {cost:.0f} µs per step"
    if abs(added - cost) <= 0.2 * cost:
        return head + ", within a fifth of each other: the check's cost is the idle gap it opens."
    if added < cost:
        return (f"{head}: the timed cost is {cost - added:.0f} µs the larger, and this lesson does "
                "not measure why.")
    if cpu - timed >= added - cost:
        return (f"{head}: the profiled idle is {added - cost:.0f} µs the larger, and a profiled "
                f"step ran {cpu - timed:.0f} µs longer than a timed one ({cpu:.0f} against "
                f"{timed:.0f} µs): the profiler's own host time may account for it.")
    return (f"{head}: the profiled idle is {added - cost:.0f} µs the larger, and this lesson does "
            "not measure why.")


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)
