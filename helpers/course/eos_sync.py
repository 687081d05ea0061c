"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and note, the two
costs of the check read against the simple model (host and GPU run side by side; the check
adds what it exposes), and the profiler's view of one check."""
from __future__ import annotations

import pandas as pd

from . import harness, plotting, profiling, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def early_stop_note(table: pd.DataFrame, judge: bool = True) -> str:
    """When the checking loop generated the same number of tokens at every cap, its medians
    should agree: how far they moved, against how far the no-check loop's time per token moved
    in the same rounds. Where the no-check loop moved at least half as much, the host's speed
    drifted between runs; otherwise the note says the lesson does not measure the cause (said
    only on a run that can judge). Empty when the token counts differ or one cap was run."""
    ok = table[table["status"] == harness.OK]
    part = ok[ok["method"] == CHECK].sort_values("seq_len")
    if len(part) < 2 or part["tokens"].nunique() != 1:
        return ""
    text = (f"The checking loop generates the same {int(part['tokens'].iloc[0])} tokens at every "
            "cap (its rows all end by the smallest cap)")
    if not judge:  # a smoke run states what ran, never reads its times
        return text + "."
    drift = part["median_s"].max() / part["median_s"].min() - 1
    free = ok[ok["method"] == FREE]
    per_token = free["median_s"] / free["tokens"]
    moved = per_token.max() / per_token.min() - 1 if len(free) > 1 else float("nan")
    text += (f"; its medians differ by {100 * drift:.0f}% between caps, the no-check loop's time "
             f"per token by {100 * moved:.0f}%")
    if moved >= drift / 2:
        return text + ": the host's speed drifted between runs."
    return text + ": not a drift both loops share; this lesson does not measure its cause."


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
    """The profiled checking loop's median GPU gap before a step (``gaps``: a row per loop,
    ``gap_before_us`` and ``cpu_us``) against the check's timed cost per step at ``regime``
    (``step_budget``'s wall clock with the check minus without); where the gap is the larger,
    the profiler's host cost as the likely cause only where the data show it."""
    wall = 1e3 * step_budget.set_index("method")["wall_ms"]
    cost = wall[f"{regime}, {CHECK}"] - wall[f"{regime}, {FREE}"]
    gap, cpu = gaps.at[CHECK, "gap_before_us"], gaps.at[CHECK, "cpu_us"]
    head = (f"With the check the profiled GPU idles {gap:.0f} µs before each step; the timed "
            f"rounds put the check's cost at {cost:.0f} µs per step")
    if not gap > cost:
        return head + "."
    why = profiling.profiler_host_cost(cpu, wall[f"{regime}, {CHECK}"])
    return head + (f". The gap is the larger: {why}." if why else
                   ". The gap is the larger; this lesson does not measure why.")


def cost_range_us(step_budget: pd.DataFrame, cost: pd.DataFrame, regime: str):
    """The check's cost per step at ``regime`` as a range in µs (the interval of the no-check
    loop's speedup over the checking loop, minus 1, times the step without the check), and
    whether that verdict is clear (the no-check loop told apart as faster)."""
    ratio = stats.row_speedup(cost, f"{regime}, {FREE}", f"{regime}, {CHECK}")
    step_ms = step_budget.set_index("method").loc[f"{regime}, {FREE}", "wall_ms"]
    return (1e3 * (ratio.low - 1) * step_ms, 1e3 * (ratio.high - 1) * step_ms,
            stats.verdict(ratio) == stats.FASTER)


def model_line(step_budget: pd.DataFrame, cost: pd.DataFrame, judge: bool = True) -> str:
    """The simple model's prediction (the check costs less with the eager step than under the
    CUDA graph) against this run's ranges (``cost_range_us``; a check cannot save time, so a
    range below zero starts at zero). Ranked only where the ranges do not overlap; otherwise the
    line says plainly which rounds cannot test it. Empty on a smoke run or without both
    regimes."""
    names = [f"{r}, {loop}" for r in ("eager", "CUDA graph") for loop in (CHECK, FREE)]
    if not judge or not set(names) <= set(step_budget["method"]):
        return ""
    (g_low, g_high, g_clear), (e_low, e_high, _) = (
        cost_range_us(step_budget, cost, r) for r in ("CUDA graph", "eager"))
    head = "The simple model expects the check to cost less with the eager step than under the CUDA graph"
    if not g_clear:
        return (f"{head}; this run cannot test it: under the CUDA graph the check's cost is not "
                "told apart from zero.")
    span = lambda low, high: (f"anywhere up to {high:.0f} µs" if low <= 0  # noqa: E731
                              else f"within {low:.0f}\u2013{high:.0f} µs")
    spans = (f"the check's cost per step lies {span(e_low, e_high)} with the eager step "
             f"and {span(g_low, g_high)} under the CUDA graph")
    if e_high < g_low:
        return f"{head}, and it held in this run: {spans}."
    if e_low > g_high:
        return f"{head}, and it did not hold in this run: {spans}; nothing this lesson measures says why."
    who = ("the eager rounds cannot test it" if e_high - max(e_low, 0) > g_high - g_low
           else "this run cannot rank the two")
    return f"{head}; {who}: {spans}, and the two ranges overlap."
