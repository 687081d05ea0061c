"""Notebook 06's readings, kept out of the lesson: the early-stopping figure, token ratio and
gain, the check's cost per regime (those the rounds cannot resolve read "can't tell apart"),
and the profiler's view."""
from __future__ import annotations

import math

import pandas as pd

from . import budget, harness, plotting, stats

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


def other_caps_line(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """Early stopping's verdict at every cap but ``cap`` (whose verdict the answer line gives):
    its token ratio and the rounds' verdict of the checking loop against running to that cap.
    Empty on a smoke run or with one cap."""
    ok = table[table["status"] == harness.OK]
    caps = sorted(int(c) for c in ok["seq_len"].unique() if int(c) != int(cap))
    parts = []
    for c in caps if judge else []:
        rows = ok[ok["seq_len"] == c].set_index("method")
        if not {CHECK, FREE} <= set(rows.index):
            continue
        ratio = rows.at[FREE, "tokens"] / rows.at[CHECK, "tokens"]
        parts.append(f"at cap {c} (a token ratio of {ratio:.2f}), timed against running to the "
                     f"cap: {stats.say(ok, CHECK, FREE, judge, seq_len=c)}")
    return ("; ".join(parts)[:1].upper() + "; ".join(parts)[1:] + ".") if parts else ""


def gain_line(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """Whether the timed gain at ``cap`` falls short of the token ratio, from the rounds' range
    (the one the answer line prints): short only where the whole range lies below the token
    ratio, and then the two loops' times per step of the batch (a run's median over its steps)
    say which loop's steps took longer; above it likewise; a range that holds the token ratio
    says the gain is the steps skipped, within this machine's noise. Empty on a smoke run,
    without both rows or with too few rounds for a range."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == cap)].set_index("method")
    if not judge or not {CHECK, FREE} <= set(ok.index):
        return ""
    rounds = stats.row_speedup(table, CHECK, FREE, seq_len=cap)
    if rounds.n < stats.MIN_TRIALS or not (math.isfinite(rounds.low) and math.isfinite(rounds.high)):
        return ""
    tokens = {m: float(ok.at[m, "tokens"]) for m in (CHECK, FREE)}
    ratio = tokens[FREE] / tokens[CHECK]
    head = f"At cap {cap} the rounds' range"
    if rounds.low <= ratio <= rounds.high:
        return (f"{head} holds the token ratio ({ratio:.2f}): early stopping gained the steps it "
                "skipped, within this machine's noise.")
    per = {m: 1e3 * float(ok.at[m, "median_s"]) / tokens[m] for m in (CHECK, FREE)}
    steps = (f"{per[CHECK]:.2f} ms per step of the batch with the check against "
             f"{per[FREE]:.2f} ms without it, by the medians")
    if rounds.high < ratio:
        return (f"{head} lies wholly below the token ratio ({ratio:.2f}): the checking loop's steps "
                f"took longer ({steps}), so the gain falls short of the steps skipped.")
    return (f"{head} lies wholly above the token ratio ({ratio:.2f}): the checking loop's steps "
            f"took less time ({steps}): they run on shorter sequences (at most {int(tokens[CHECK])} "
            f"tokens against {cap}), and a check itself cannot speed a step up.")


def cost_line(step_budget: pd.DataFrame, cost: pd.DataFrame, unclear=(), judge: bool = True) -> str:
    """What the check costs per step in each regime, in µs and as a share of the step without
    it, with the rounds' verdict of the loop without it; then which regime pays more in µs and
    which as a share of its step (they can differ: a long eager step hides a large cost in a
    small share). A regime in ``unclear`` reads "can't tell apart". Empty on a smoke run."""
    if not judge:
        return ""
    wall = step_budget.set_index("method")["wall_ms"]
    parts, paid = [], {}
    for regime in ("eager", "CUDA graph"):
        check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
        if not {check, free} <= set(wall.index):
            continue
        said = stats.say(cost, free, check, judge)
        us = 1e3 * (wall[check] - wall[free])
        if regime in unclear or not us > 0:  # no medians' note: its direction read backwards
            parts.append(f"with the {regime} step, the loops with and without it: "
                         f"{stats.plain(stats.row_speedup(cost, free, check), judge)}")
            continue
        paid[regime] = (us, 100 * (wall[check] - wall[free]) / wall[free])
        parts.append(f"with the {regime} step it costs {us:.0f} µs per step, {paid[regime][1]:.0f}% "
                     f"of the {wall[free]:.2f} ms step without it, which runs {said}")
    if not parts:
        return ""
    text = "The check every step: " + "; ".join(parts) + "."
    return text + who_pays(paid)


def who_pays(paid: dict) -> str:
    """Which step pays more for the check, in µs and as a share of its step, from ``paid``
    ({step name: (µs, % of the step without the check)}); said only where both steps paid."""
    if len(paid) != 2:
        return ""
    by_us = max(paid, key=lambda r: paid[r][0])
    by_share = max(paid, key=lambda r: paid[r][1])
    return (f" The {by_us} step pays more, in µs and as a share of its step." if by_us == by_share
            else f" In µs the {by_us} step pays more; as a share of the step, the {by_share} step.")


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


def gap_line(gaps: pd.DataFrame, step_budget: pd.DataFrame = None, unclear=()) -> str:
    """The profiled CUDA-graph steps in one sentence (``gaps``: a row per loop, medians of
    ``gap_before_us``): the GPU's idle before a step with the check and without it, the idle the
    check adds under the profiler, and beside it the cost timed without the profiler (from
    ``step_budget``, the one to quote), or that the rounds left it unresolved (``unclear``)."""
    with_gap, free_gap = gaps.at[CHECK, "gap_before_us"], gaps.at[FREE, "gap_before_us"]
    text = (f"Profiled, the GPU idles {with_gap:.0f} µs before each step with the check and "
            f"{free_gap:.0f} µs without")
    wall = None if step_budget is None else step_budget.set_index("method")["wall_ms"]
    check, free = f"CUDA graph, {CHECK}", f"CUDA graph, {FREE}"
    if wall is None or not {check, free} <= set(wall.index):
        return text + "."
    if "CUDA graph" in unclear or not wall[check] > wall[free]:
        return (text + "; timed without the profiler, the rounds do not tell the check's cost "
                "apart, so this gap is the profiler's view only.")
    added = int(f"{with_gap:.0f}") - int(f"{free_gap:.0f}")  # the difference of the printed gaps
    return (text + f": under the profiler the check adds {added} µs of idle per "
            f"step; timed without the profiler it costs {1e3 * (wall[check] - wall[free]):.0f} µs, "
            "the number to quote.")


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)


def idle_why(step_budget: pd.DataFrame, regime: str = "CUDA graph") -> str:
    """What the checking loop's idle per step holds, for ``budget.sentence(..., why=...)`` read
    from the loop without the check: what the check adds, as the budget's figure prints them (each
    rounded to 0.01 ms first, so they subtract). Empty without both loops' GPU time."""
    data = step_budget.set_index("method")
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    if not {check, free} <= set(data.index) or data.loc[[check, free], "gpu_ms"].isna().any():
        return ""
    with_idle, free_idle = budget.printed_idle(data.loc[check]), budget.printed_idle(data.loc[free])
    # the idle without the check is budget.sentence's own 'went from' (its old method)
    return f"the check adds {max(with_idle - free_idle, 0.0):.2f} ms of it"
