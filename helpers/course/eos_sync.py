"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and bound, the two
costs of the check read against the simple model (host and GPU run side by side; the check
adds what it exposes), and the profiler's view of one check."""
from __future__ import annotations

import pandas as pd

from . import harness, plotting, profiling, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def stop_bound(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """The most early stopping can gain at ``cap`` by its token counts (the no-check loop's new
    tokens per row over the checking loop's), in brackets after its verdict; where the rounds'
    estimate exceeds it, the rest put down to the no-check loop's slower steps. Empty on a smoke run or
    without both rows."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == cap)].set_index("method")
    if not judge or not {CHECK, FREE} <= set(ok.index):
        return ""
    free, check = int(ok.at[FREE, "tokens"]), int(ok.at[CHECK, "tokens"])
    bound = free / check
    text = f" ({free} against {check} tokens per row allow at most {bound:.2f}x"
    estimate = stats.row_speedup(table, CHECK, FREE, seq_len=cap).estimate
    if estimate > bound:  # the rest: the no-check loop's slower steps, not the check
        text += "; the rest is the no-check loop's slower steps: its longer cache, or drift"
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


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)


def drift_line(table: pd.DataFrame, judge: bool = True, swing: float = 1.15) -> str:
    """Where the checking loop does the same work at every cap (the same tokens per row) yet its
    median differs by more than ``swing`` between caps: the host drifted between points. Empty
    otherwise, on a smoke run, or with one cap."""
    part = table[(table["status"] == harness.OK) & (table["method"] == CHECK)]
    if not judge or part["seq_len"].nunique() < 2 or part["tokens"].nunique() != 1:
        return ""
    low, high = part.loc[part["median_s"].idxmin()], part.loc[part["median_s"].idxmax()]
    if not high["median_s"] > swing * low["median_s"]:
        return ""
    return (f"The checking loop does the same work at every cap ({int(low['tokens'])} tokens per "
            f"row), yet its median ran {1e3 * low['median_s']:.0f} ms at cap {int(low['seq_len'])} "
            f"and {1e3 * high['median_s']:.0f} ms at cap {int(high['seq_len'])}: the host drifted "
            "between points, so compare the loops within a cap.")


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
