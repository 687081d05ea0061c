"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and note, the two
costs of the check read against the simple model (host and GPU run side by side; the check
adds what it exposes), and the profiler's view of one check."""
from __future__ import annotations

import pandas as pd

from . import harness, plotting, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def early_stop_note(table: pd.DataFrame, judge: bool = True) -> str:
    """When the checking loop generated the same number of tokens at every cap, its medians
    should agree: how far they moved is the host's drift between runs, and early stopping's
    gain at the largest cap is read against it (not on a run that cannot judge). Empty when the
    token counts differ or one cap was run."""
    ok = table[table["status"] == harness.OK]
    part = ok[ok["method"] == CHECK].sort_values("seq_len")
    if len(part) < 2 or part["tokens"].nunique() != 1:
        return ""
    low, high = part["median_s"].min(), part["median_s"].max()
    drift = high / low - 1
    caps = ", ".join(f"{1e3 * m:.1f} ms at cap {int(c)}" for c, m in
                     zip(part["seq_len"], part["median_s"]))
    cap = int(ok["seq_len"].max())
    tokens = int(part["tokens"].iloc[0])
    text = (f"The checking loop generates the same {tokens} tokens at every cap (the prefill's, "
            f"then {tokens - 1} decode steps: its rows all end by the smallest cap)")
    if not judge:  # a smoke run states what ran, never reads its times
        return text + "."
    text += (f", yet its slowest median is {100 * drift:.0f}% slower than its fastest ({caps}): "
             "the host's drift between runs, not a cost.")
    ratio = stats.row_speedup(ok, CHECK, FREE, seq_len=cap)
    if judge and ratio.estimate == ratio.estimate:
        far = stats.verdict(ratio) == stats.FASTER and ratio.estimate - 1 > 2 * drift
        size = "far larger than" if far else "not clearly larger than"
        text += (f" At cap {cap}, stopping early against running to the cap: "
                 f"{stats.say(ok, CHECK, FREE, judge, seq_len=cap)}, {size} that drift.")
    return text


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


def cost_range_us(step_budget: pd.DataFrame, cost: pd.DataFrame, regime: str):
    """The check's cost per step at ``regime`` as a range in µs (the interval of the no-check
    loop's speedup over the checking loop, minus 1, times the step without the check), and
    whether that verdict is clear (the no-check loop told apart as faster)."""
    ratio = stats.row_speedup(cost, f"{regime}, {FREE}", f"{regime}, {CHECK}")
    step_ms = step_budget.set_index("method").loc[f"{regime}, {FREE}", "wall_ms"]
    return (1e3 * (ratio.low - 1) * step_ms, 1e3 * (ratio.high - 1) * step_ms,
            stats.verdict(ratio) == stats.FASTER)


def model_line(step_budget: pd.DataFrame, cost: pd.DataFrame, judge: bool = True) -> str:
    """The simple model's prediction (the check costs more under the CUDA graph than with the
    eager step) against this run. The two costs are ranked only when both verdicts are clear and
    their ranges (``cost_range_us``) do not overlap; otherwise this run can't rank them. Empty
    on a smoke run or without both regimes."""
    names = [f"{r}, {loop}" for r in ("eager", "CUDA graph") for loop in (CHECK, FREE)]
    if not judge or not set(names) <= set(step_budget["method"]):
        return ""
    (g_low, g_high, g_clear), (e_low, e_high, e_clear) = (
        cost_range_us(step_budget, cost, r) for r in ("CUDA graph", "eager"))
    head = "The simple model expects the check to cost more under the CUDA graph than with the eager step"
    if not (g_clear and e_clear):
        unclear = " and ".join(name for name, clear in (("under the CUDA graph", g_clear),
                                                        ("with the eager step", e_clear)) if not clear)
        return (f"{head}; this run can't rank them on this machine: {unclear} the check's cost "
                "is not told apart from zero.")
    spans = (f"the check's cost per step lies within {g_low:.0f}\u2013{g_high:.0f} µs under the "
             f"CUDA graph and {e_low:.0f}\u2013{e_high:.0f} µs with the eager step")
    if g_low <= e_high and e_low <= g_high:
        return f"{head}; {spans}: they overlap, so this run can't rank them on this machine."
    if g_low > e_high:
        return f"{head}, and it held in this run: {spans}."
    return f"{head}, and it did not hold in this run: {spans}; nothing this lesson measures says why."


def three_costs_line(cost_us: float, gaps: pd.DataFrame) -> str:
    """The check's three numbers side by side (CUDA-graph step): its unprofiled cost per step,
    and under the profiler the CPU's wait at the check and the GPU's gap after it. While the
    CPU waits the GPU is running the queued step; only the gap is lost."""
    wait = gaps.loc[CHECK, "cpu_wait_us"]
    gap, free_gap = gaps.loc[CHECK, "gap_before_us"], gaps.loc[FREE, "gap_before_us"]
    text = "CUDA-graph step, one check seen three ways: "
    if cost_us == cost_us and cost_us <= 0:  # a check cannot save time: the host's noise
        text += (f"unprofiled it showed no cost (the loop with the check ran {-cost_us:.0f} µs "
                 "per step faster: the host's noise); ")
    elif cost_us == cost_us:
        text += f"unprofiled it costs {cost_us:.0f} µs per step; "
    text += (f"under the profiler the CPU waits {wait:.0f} µs at it, but the GPU is busy during "
             "that wait, running the step already queued, and only the gap after it is lost: "
             f"{gap:.0f} µs ({free_gap:.0f} µs without the check")
    if cost_us == cost_us and gap > max(cost_us, 0):
        text += "; the profiler adds host time to every operation, which can lengthen the gap"
    return text + ")."
