"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and bound, the two
costs of the check read against the simple model (host and GPU run side by side; the check
adds what it exposes), and the profiler's view of one check."""
from __future__ import annotations

import pandas as pd

from . import harness, plotting, profiling, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def stop_bound(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """The token counts behind early stopping's gain at ``cap`` (the no-check loop's new tokens
    per row over the checking loop's), in brackets after its verdict: a ratio of tokens, not a
    bound on time, because a step costs more as the cache grows; with a second, smaller cap, the
    no-check loop's time per token at both caps shows by how much. Empty on a smoke run or
    without both rows."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == cap)].set_index("method")
    if not judge or not {CHECK, FREE} <= set(ok.index):
        return ""
    free, check = int(ok.at[FREE, "tokens"]), int(ok.at[CHECK, "tokens"])
    text = f" ({free} against {check} tokens per row, a token ratio of {free / check:.2f}"
    runs = table[(table["status"] == harness.OK) & (table["method"] == FREE)].set_index("seq_len")
    if (low := int(runs.index.min())) < cap:
        step = 1e3 * runs["median_s"] / runs["tokens"]  # ms per token, the prefill included
        text += (f"; without the check a step took {step[low]:.2f} ms at cap {low} and "
                 f"{step[cap]:.2f} ms at cap {cap}")
        if step[cap] > step[low]:
            text += ": a step costs more as the cache grows, so time need not follow the tokens"
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
    """The profiled checking loop's median GPU gap before a step (``gaps``: a row per loop,
    ``gap_before_us`` and ``cpu_us``) against the check's timed cost per step at ``regime``
    (``step_budget``'s wall clock with the check minus without); where the gap is the larger,
    the profiler's host time as the likely cause only where a profiled step ran longer than a
    timed one by at least half the excess."""
    wall = 1e3 * step_budget.set_index("method")["wall_ms"]
    cost = wall[f"{regime}, {CHECK}"] - wall[f"{regime}, {FREE}"]
    gap, cpu, timed = gaps.at[CHECK, "gap_before_us"], gaps.at[CHECK, "cpu_us"], wall[f"{regime}, {CHECK}"]
    head = (f"With the check the profiled GPU idles {gap:.0f} µs before each step; the timed "
            f"rounds put the check's cost at {cost:.0f} µs per step")
    if not gap > cost:
        return head + "."
    if cpu - timed >= 0.5 * (gap - cost):
        return (f"{head}. The gap is {gap - cost:.0f} µs the larger, and a profiled step ran "
                f"{cpu - timed:.0f} µs longer than a timed one ({cpu:.0f} against {timed:.0f} µs): "
                "the profiler's own host time is the likely cause.")
    return head + ". The gap is the larger; this lesson does not measure why."


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)


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
    CUDA graph) against this run's ranges (``cost_range_us``). Where the eager rounds do not
    tell the loops apart, no eager range: the graph's cost as a share of the eager step, which
    those rounds cannot resolve. Ranked only where the ranges do not overlap. Empty on a smoke run or without both
    regimes."""
    names = [f"{r}, {loop}" for r in ("eager", "CUDA graph") for loop in (CHECK, FREE)]
    if not judge or not set(names) <= set(step_budget["method"]):
        return ""
    (g_low, g_high, g_clear), (e_low, e_high, e_clear) = (
        cost_range_us(step_budget, cost, r) for r in ("CUDA graph", "eager"))
    wall = step_budget.set_index("method")["wall_ms"]
    e_step = wall[f"eager, {FREE}"]
    head = "The simple model expects the check to cost less with the eager step than under the CUDA graph"
    if not g_clear:
        return (f"{head}; this run cannot test it: under the CUDA graph the check's cost is not "
                "told apart from zero.")
    if not e_clear:  # no signed eager cost: the rounds cannot resolve it
        g_cost = 1e3 * (wall[f"CUDA graph, {CHECK}"] - wall[f"CUDA graph, {FREE}"])
        return (f"{head}. Even the CUDA graph's cost ({g_cost:.0f} µs per step) would be "
                f"{g_cost / (10 * e_step):.0f}% of the {e_step:.2f} ms eager step, and the eager "
                "rounds cannot resolve an effect of this size on this host: they cannot tell the "
                "two eager loops apart.")
    span = lambda low, high: f"within {low:.0f}\u2013{high:.0f} µs"  # noqa: E731
    spans = (f"the check's cost per step lies {span(e_low, e_high)} with the eager step "
             f"and {span(g_low, g_high)} under the CUDA graph")
    if e_high < g_low:
        return f"{head}, and it held in this run: {spans}."
    if e_low > g_high:
        return f"{head}, and it did not hold in this run: {spans}; nothing this lesson measures says why."
    return f"{head}; this run cannot rank the two: {spans}, and the two ranges overlap."
