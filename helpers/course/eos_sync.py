"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and note, and the
eager step's check read against the simple model (host and GPU run side by side; the check
adds what it exposes)."""
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
    at = ok[ok["seq_len"] == cap].set_index("method")["median_s"]
    gain = at[FREE] / at[CHECK] - 1 if {CHECK, FREE} <= set(at.index) else float("nan")
    tokens = int(part["tokens"].iloc[0])
    text = (f"The checking loop generates the same {tokens} tokens at every cap (the prefill's, "
            f"then {tokens - 1} decode steps: its rows all end by the smallest cap), yet its "
            f"median moved by {100 * drift:.0f}% ({caps}): the host's drift between runs, not a cost.")
    if gain == gain and judge:
        size = "far larger than" if gain > 2 * drift else "not clearly larger than"
        text += (f" At cap {cap}, running to the cap took {100 * gain:.0f}% longer than "
                 f"stopping early: {size} that drift.")
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


def eager_check_line(step_budget: pd.DataFrame, cost: pd.DataFrame, judge: bool = True) -> str:
    """The eager step's check, measured and read against the simple model, which predicts a
    small cost where the host sets the pace: what this run measured (as a share of the check's
    cost under the CUDA graph only when the eager cost is told apart from the noise), the
    verdict, and whether the measurement agrees with the model."""
    data = step_budget.set_index("method")
    check, free = data.loc[f"eager, {CHECK}"], data.loc[f"eager, {FREE}"]
    diff_us = 1e3 * (check["wall_ms"] - free["wall_ms"])
    ratio = stats.row_speedup(cost, f"eager, {FREE}", f"eager, {CHECK}")
    found = stats.verdict(ratio) if judge and ratio.n >= stats.MIN_TRIALS else None
    graph_us = float("nan")
    if f"CUDA graph, {CHECK}" in data.index and f"CUDA graph, {FREE}" in data.index:
        graph_us = 1e3 * (data.loc[f"CUDA graph, {CHECK}", "wall_ms"]
                          - data.loc[f"CUDA graph, {FREE}", "wall_ms"])
    text = (f"Eager step: {check['wall_ms']:.1f} ms of wall clock with the check"
            + ("" if check["gpu_ms"] != check["gpu_ms"] else
               f", of which the GPU works {check['gpu_ms']:.1f} ms"))
    if diff_us < 0:
        text += (f"; the loop with the check ran {-diff_us:.0f} µs per step faster (a check adds "
                 "work and cannot save time: this is the host's noise)")
    elif found == stats.NOISE:
        text += f"; the check measured {diff_us:+.0f} µs per step, inside the noise"
    else:
        text += f"; the check measured {diff_us:+.0f} µs per step"
        if graph_us > 0:
            text += f", {100 * diff_us / graph_us:.0f}% of its cost under the CUDA graph"
    text += f"; without it: {stats.say(cost, f'eager, {FREE}', f'eager, {CHECK}', judge)}."
    if found is None or check["gpu_ms"] != check["gpu_ms"]:  # no verdict, or no GPU time
        return text
    if check["gpu_ms"] >= 0.5 * check["wall_ms"]:
        return text + " Here the GPU's work is most of the eager step, so the model expects a cost."
    if found == stats.FASTER and not graph_us < 2 * diff_us:
        return text + " A small cost, as the simple model predicts for a step the host paces."
    if found == stats.FASTER:
        return (text + " That is more than the simple model predicts for a step the host paces: "
                "here the wait was not hidden behind the host's launches.")
    if found == stats.NOISE:
        return (text + " As the simple model predicts for a step the host paces, no cost can be "
                f"told apart from the host's noise; with an interval this wide "
                f"({ratio.low:.2f}\u2013{ratio.high:.2f}), a cost under about "
                f"{max(100 * (ratio.high - 1), 1):.0f}% would not show.")
    return text + " Dropping the check did not make the eager step faster here."


def figure_line(table: pd.DataFrame) -> str:
    """The figure's left panel in numbers: each loop's seconds per batch at every cap."""
    ok = table[table["status"] == harness.OK]
    caps = sorted(ok["seq_len"].unique())
    at = ok.set_index(["method", "seq_len"])["median_s"]
    times = lambda m: ", ".join(f"{at[m, c]:.2f} s at cap {int(c)}"  # noqa: E731
                                for c in caps if (m, c) in at.index)
    return (f"Figure, left: with the check the batch finishes in {times(CHECK)}; running to the "
            f"cap takes {times(FREE)}. Right, per decode step:")


def same_loop_note(table: pd.DataFrame, cost: pd.DataFrame, n_tokens: int) -> str:
    """The eager no-check loop at ``n_tokens`` is timed twice (the early-stop table, then the
    budget): its two medians per step side by side, against that loop's own spread in the first
    table. Each comparison reads its loops within its own rounds. Empty when either is absent."""
    ok = table[(table["status"] == harness.OK) & (table["method"] == FREE)
               & (table["seq_len"] == n_tokens)]
    again = cost[(cost["status"] == harness.OK) & (cost["method"] == f"eager, {FREE}")]
    if len(ok) != 1 or len(again) != 1:
        return ""
    first, row = ok.iloc[0], again.iloc[0]
    per_step = lambda s: 1e3 * s / n_tokens  # noqa: E731
    a, b = per_step(first["median_s"]), per_step(row["median_s"])
    low, high = per_step(first["min_s"]), per_step(first["max_s"])
    moved = 100 * abs(b / a - 1)
    where = "inside" if low <= b <= high else "outside"
    return (f"The eager no-check loop at {n_tokens} tokens ran {a:.2f} ms per step in the "
            f"early-stop table and {b:.2f} ms here, {moved:.0f}% apart ({where} the {low:.2f} to "
            f"{high:.2f} ms its runs spanned there): timed at different moments, the host's speed "
            "drifts between them, so each comparison reads its two loops within its own rounds.")


def three_costs_line(cost_us: float, gaps: pd.DataFrame) -> str:
    """The check's three numbers side by side (CUDA-graph step): its unprofiled cost per step,
    and under the profiler the CPU's wait at the check and the GPU's gap after it. While the
    CPU waits the GPU is running the queued step; only the gap is lost."""
    wait = gaps.loc[CHECK, "cpu_wait_us"]
    gap, free_gap = gaps.loc[CHECK, "gap_before_us"], gaps.loc[FREE, "gap_before_us"]
    text = "CUDA-graph step, one check seen three ways: "
    if cost_us == cost_us:
        text += f"unprofiled it costs {cost_us:.0f} µs per step; "
    text += (f"under the profiler the CPU waits {wait:.0f} µs at it, but the GPU is busy during "
             "that wait, running the step already queued, and only the gap after it is lost: "
             f"{gap:.0f} µs ({free_gap:.0f} µs without the check")
    if cost_us == cost_us and gap > cost_us:
        text += "; the profiler adds host time to every operation, which can lengthen the gap"
    return text + ")."
