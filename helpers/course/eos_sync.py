"""Notebook 06's readings, kept out of the lesson: the early-stopping figure, token ratio and
eager drift, the regimes whose check cost the rounds cannot resolve, and the profiler's view."""
from __future__ import annotations

import pandas as pd

from . import harness, plotting, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def stop_bound(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """The token counts behind early stopping's gain at ``cap``: the checking loop's new tokens
    per row against the cap, and their ratio (the no-check loop's over the checking loop's).
    Empty on a smoke run or without both rows."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == cap)].set_index("method")
    if not judge or not {CHECK, FREE} <= set(ok.index):
        return ""
    free, check = int(ok.at[FREE, "tokens"]), int(ok.at[CHECK, "tokens"])
    return (f"with early stopping the batch ran {check} of its {free} tokens per row (a token "
            f"ratio of {free / check:.2f})")


def per_token_line(table: pd.DataFrame, judge: bool = True) -> str:
    """Why the timed gain need not equal the token ratio: each loop's eager time per token
    (median over its tokens per row) at each cap. Where they differ by more than a tenth, eager
    tokens are not all priced alike, so the gain need not match the ratio. Empty on a smoke run."""
    ok = table[table["status"] == harness.OK]
    if not judge or ok.empty or not {CHECK, FREE} <= set(ok["method"]):
        return ""
    per = {(m, int(c)): 1e3 * s / t for m, c, s, t in
           zip(ok["method"], ok["seq_len"], ok["median_s"], ok["tokens"])}
    text = "Per token, eager: " + "; ".join(
        f"{m} {', '.join(f'{v:.2f} ms at cap {c}' for (mm, c), v in sorted(per.items()) if mm == m)}"
        for m in (CHECK, FREE)) + "."
    if max(per.values()) > 1.1 * min(per.values()):
        return text + (" Eager tokens are not all priced alike, so the timed gain need not match "
                       "the token ratio, which is the saving in steps.")
    return text + " Eager tokens cost about the same, so the gain should sit near the token ratio."


def eager_drift_line(early: pd.DataFrame, cost: pd.DataFrame, n_cost: int,
                     judge: bool = True) -> str:
    """The same eager no-check run of ``n_cost`` tokens in the early-stop call and in the budget
    call, per token, with the budget call's fastest and slowest round: eager steps are set by the
    host, whose speed drifts between and within calls. Empty where either row is missing."""
    ok = early[(early["status"] == harness.OK) & (early["method"] == FREE)
               & (early["seq_len"] == n_cost)]
    row = cost[cost["method"] == f"eager, {FREE}"]
    if not judge or ok.empty or row.empty:
        return ""
    a = 1e3 * float(ok["median_s"].iloc[0]) / n_cost
    b, lo, hi = (1e3 * float(row[k].iloc[0]) / n_cost for k in ("median_s", "min_s", "max_s"))
    return (f"Eager times drift: the same {n_cost}-token run without the check took {a:.2f} ms "
            f"per token in the early-stop call and {b:.2f} ms in the budget call (its rounds "
            f"there: {lo:.2f} to {hi:.2f} ms), so compare eager rows only within one table.")


def idle_line(step_budget: pd.DataFrame, regime: str, resolved: bool) -> str:
    """What the check does to one step of ``regime``: where the rounds resolved a cost, the
    GPU's idle time per step without and with it; otherwise that the two loops could not be told
    apart (so a bar that looks shorter with the check is noise). Empty without GPU numbers."""
    data = step_budget.set_index("method")
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    if not {check, free} <= set(data.index):
        return ""
    name = regime[:1].upper() + regime[1:]
    if not resolved:
        return (f"{name} step: the rounds can't tell the two loops apart "
                f"({data.at[check, 'wall_ms']:.2f} against {data.at[free, 'wall_ms']:.2f} ms per "
                "step); the difference between its bars is noise.")
    i0, i1 = data.at[free, "idle_ms"], data.at[check, "idle_ms"]
    if i0 != i0 or i1 != i1:  # NaN: no GPU numbers
        return ""
    return f"The GPU idles {i0:.2f} ms per step without the check, {i1:.2f} ms with it."


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
    """The idle the check adds under the profiler (the checking loop's median GPU gap before a
    step less the no-check loop's; ``gaps``: a row per loop, ``gap_before_us``) against its timed
    cost per step at ``regime`` (``step_budget``'s wall clock with the check less without).
    Where they differ by more than a fifth of the cost, the timed cost is the one to quote: the
    timed rounds ran without the profiler, which adds host time to every op it records."""
    wall = 1e3 * step_budget.set_index("method")["wall_ms"]
    cost = wall[f"{regime}, {CHECK}"] - wall[f"{regime}, {FREE}"]
    with_gap, free_gap = gaps.at[CHECK, "gap_before_us"], gaps.at[FREE, "gap_before_us"]
    added = with_gap - free_gap
    head = (f"Under the profiler the GPU idles {with_gap:.0f} µs before each step with the check "
            f"and {free_gap:.0f} µs without, so the check adds {added:.0f} µs of idle")
    if cost <= 0:
        return head + "; the timed rounds show no cost per step."
    head += f" against its timed cost of {cost:.0f} µs per step"
    if abs(added - cost) <= 0.2 * cost:
        return head + ", within a fifth of each other: the check's cost is the idle gap it opens."
    return (f"{head}: the profiler adds host time to every op it records, so the timed cost, "
            "measured without it, is the one to quote.")


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)
