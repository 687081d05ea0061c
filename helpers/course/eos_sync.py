"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and token ratio,
the check's cost per regime (those the rounds cannot resolve read "can't tell apart"), the
budget in words, and the profiler's view."""
from __future__ import annotations

import pandas as pd

from . import budget, harness, plotting, profiling, stats

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


def cost_line(step_budget: pd.DataFrame, cost: pd.DataFrame, unclear=(), judge: bool = True) -> str:
    """What the check costs per step in each regime, from the rounds: each read as how many
    times faster the loop runs without the check. A resolved regime gives its cost in µs and as a
    share of the step without it; then which regime pays more each way (they can differ: a long
    eager step hides a large cost in a small share). A regime in ``unclear`` gives its verdict
    ("can't tell apart"), then what its medians and rounds show (``unclear_note``); where it is
    the CUDA-graph step, that notebook 07 times the same loops again. Empty on a smoke run."""
    if not judge:
        return ""
    wall = step_budget.set_index("method")["wall_ms"]
    parts, paid, notes = [], {}, ""
    for regime in ("eager", "CUDA graph"):
        check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
        if not {check, free} <= set(wall.index):
            continue
        us = 1e3 * (wall[check] - wall[free])
        if regime in unclear or not us > 0:  # no medians' note: its direction read backwards
            parts.append(f"with the {regime} step, "
                         f"{stats.plain(stats.row_speedup(cost, free, check), judge)}")
            notes += unclear_note(cost, wall, regime) + host_behind(step_budget, [regime])
            continue
        paid[regime] = (us, 100 * (wall[check] - wall[free]) / wall[free])
        parts.append(f"with the {regime} step it costs {us:.0f} µs per step, {paid[regime][1]:.0f}% "
                     f"of the {wall[free]:.2f} ms step without it, which runs "
                     f"{stats.say(cost, free, check, judge)}")
    if not parts:
        return ""
    text = ("What the check costs, read as how many times faster each loop runs without it: "
            + "; ".join(parts) + ".")
    text += who_pays(paid) + notes
    if "CUDA graph" in unclear:
        text += " Notebook 07 times the same two CUDA-graph loops again."
    return text


def unclear_note(cost: pd.DataFrame, wall: pd.Series, regime: str) -> str:
    """For a regime whose rounds can't tell the two loops apart: their medians per step (where
    the loop with the check ran the faster, that this is the host's noise: a check cannot make
    a step faster) and the range of each loop's rounds, which is what hides the difference."""
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    per_step = {m: [1e3 * t / float(cost.loc[cost["method"] == m, "seq_len"].iloc[0])
                    for t in stats.method_trials(cost, m)] for m in (check, free)}
    medians = f"({wall[check]:.2f} against {wall[free]:.2f} ms per step)"
    rounds = (f"its rounds ran from {min(per_step[check]):.2f} to {max(per_step[check]):.2f} ms "
              f"per step with the check and from {min(per_step[free]):.2f} to "
              f"{max(per_step[free]):.2f} without it" if all(per_step.values()) else "")
    if wall[check] < wall[free]:
        return (f" With the {regime} step the loop with the check even ran the faster by the "
                f"medians {medians}: a check cannot make a step faster, so that is the host's "
                "noise" + (f"; {rounds}." if rounds else "."))
    return (f" With the {regime} step the medians differ {medians}, but "
            + (f"{rounds}: " if rounds else "the rounds do not agree: ")
            + "this run cannot say what the check costs.")


def host_behind(step_budget: pd.DataFrame, unclear=()) -> str:
    """Why the eager step shows no cost, where its rounds leave it unresolved (``unclear``) and
    its GPU works less than half of its wall clock without the check: the host sets the pace,
    so the GPU has finished when the CPU reaches the check. Empty otherwise, or without the
    GPU's numbers."""
    rows = step_budget.set_index("method")
    free = f"eager, {FREE}"
    if "eager" not in unclear or free not in rows.index or "gpu_ms" not in rows.columns:
        return ""
    wall, gpu = rows.at[free, "wall_ms"], rows.at[free, "gpu_ms"]
    if pd.isna(wall) or pd.isna(gpu) or not gpu < 0.5 * wall:
        return ""
    return (f" In the eager step the GPU works {gpu:.2f} of the {wall:.2f} ms a step takes: the "
            "host sets the pace, so when the CPU reaches the check the GPU has already finished "
            "and there is little to wait for.")


def speedup_why(table: pd.DataFrame, judge: bool = True) -> str:
    """Why early stopping's speedup at the largest cap differs from its token ratio, where the
    rounds' whole range lies on one side of it. Above: the no-check loop's time per step grows
    from the smallest cap to the largest (the steps early stopping skips are the slower ones).
    Below: a token cost more in the loop with the check (medians over tokens, the prefill
    included); the prefill weighs more on the shorter run, and where the checking loop ran the
    same tokens at two caps with medians more than ``stats.MEDIANS_APART`` apart, the host's
    drift shows in them. Empty otherwise, or on a smoke run."""
    ok = table[table["status"] == harness.OK]
    caps = sorted(ok["seq_len"].unique())
    if not judge or len(caps) < 2:
        return ""
    low, cap = caps[0], caps[-1]
    here = ok[ok["seq_len"] == cap].set_index("method")
    free = ok[ok["method"] == FREE].set_index("seq_len")
    if not {CHECK, FREE} <= set(here.index) or low not in free.index:
        return ""
    tokens = {m: int(here.at[m, "tokens"]) for m in (CHECK, FREE)}
    ratio = tokens[FREE] / tokens[CHECK]
    speedup = stats.row_speedup(ok, CHECK, FREE, seq_len=cap)
    if speedup.high < ratio:
        return _short_of_ratio(ok, here, tokens, low, cap)
    per_step = {c: 1e3 * free.at[c, "median_s"] / c for c in (low, cap)}
    if not (speedup.low > ratio and round(per_step[cap], 2) > round(per_step[low], 2)):
        return ""
    return (f"The speedup exceeds the token ratio because steps get slower as the cache grows: "
            f"without the check a step takes {per_step[low]:.2f} ms on average at cap {low} and "
            f"{per_step[cap]:.2f} ms at cap {cap}, so the steps early stopping skips are the "
            "slower ones.")


def _short_of_ratio(ok, here, tokens, low, cap) -> str:
    """``speedup_why``'s reading where the speedup falls short of the token ratio."""
    per_token = {m: 1e3 * here.at[m, "median_s"] / tokens[m] for m in (CHECK, FREE)}
    if not round(per_token[CHECK], 2) > round(per_token[FREE], 2):
        return ""
    text = (f"It falls short of the token ratio because a token cost more in the loop with the "
            f"check ({per_token[CHECK]:.2f} against {per_token[FREE]:.2f} ms, the prefill "
            "included): the prefill, paid once by both, weighs more on its fewer tokens, as does any "
            "cost of the check itself (below)")
    check = ok[ok["method"] == CHECK].set_index("seq_len")
    same = low in check.index and int(check.at[low, "tokens"]) == tokens[CHECK]
    at = {c: 1e3 * check.at[c, "median_s"] for c in (low, cap)} if same else {}
    if same and stats.medians_apart(at[low], at[cap]):
        text += (f", and the eager step's speed drifts with the host's (the same {tokens[CHECK]} "
                 f"tokens with the check took {at[low]:.0f} ms in the cap-{low} rounds and "
                 f"{at[cap]:.0f} ms in the cap-{cap} rounds)")
    return text + "."


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
        # inside the bar, clear of the whisker that starts at its top
        ax.bar_label(bars, labels=["" if pd.isna(v) else f"{v:.2f}" for v in part["median_s"]],
                     label_type="center", color="white", fontsize=9)
    ax.set_xticks(range(len(caps)), [f"cap {int(c)}" for c in caps])
    ax.set(ylabel="seconds per batch (median)", xlabel="whiskers: fastest to slowest run",
           title=f"Early stopping: time to finish (rows stop at {stop_low}-{stop_high})")
    ax.legend(loc="upper left", fontsize=9, frameon=False)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)


def gap_line(gaps: pd.DataFrame, step_budget: pd.DataFrame = None, unclear=()) -> str:
    """The profiled CUDA-graph steps in one sentence (``gaps``: a row per loop, medians of
    ``gap_before_us``, and of ``cpu_us`` where known): the GPU's idle before a step with the
    check and without it; where a profiled step with the check ran over
    ``profiling.PROFILER_SLOWED`` times the timed one (``step_budget``), that the profiler
    slowed the host; then the idle the check adds
    under the profiler beside the cost timed without it (the one to quote), or that the rounds
    left it unresolved (``unclear``)."""
    with_gap, free_gap = gaps.at[CHECK, "gap_before_us"], gaps.at[FREE, "gap_before_us"]
    text = (f"Profiled, the GPU idles {with_gap:.0f} µs before each step with the check and "
            f"{free_gap:.0f} µs without")
    wall = None if step_budget is None else step_budget.set_index("method")["wall_ms"]
    check, free = f"CUDA graph, {CHECK}", f"CUDA graph, {FREE}"
    if wall is None or not {check, free} <= set(wall.index):
        return text + "."
    profiled = gaps.at[CHECK, "cpu_us"] if "cpu_us" in gaps.columns else float("nan")
    if profiled > profiling.PROFILER_SLOWED * 1e3 * wall[check]:
        text += (f"; the profiler slows the host: a profiled step with the check took "
                 f"{profiled:.0f} µs, against {1e3 * wall[check]:.0f} µs timed")
    if "CUDA graph" in unclear or not wall[check] > wall[free]:
        return (text + ". Timed without the profiler, the rounds can't tell the check's cost apart "
                "(above), so this gap is the profiler's view only.")
    added = int(f"{with_gap:.0f}") - int(f"{free_gap:.0f}")  # the difference of the printed gaps
    return (text + f". Under the profiler the check adds {added} µs of idle per step; timed "
            f"without it, it costs {1e3 * (wall[check] - wall[free]):.0f} µs, the number to quote.")


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)


def budget_line(view: pd.DataFrame, regime: str = "CUDA graph") -> str:
    """The budget of ``regime``'s step in words, from ``profiling.check_cost``'s table (``view``,
    its values as printed): what the check adds to the wall clock per step (the table's last
    column), and whether that is GPU work or GPU idle. Where the check's cost is not a number
    (a "can't tell"), what the bars differ in, and that the rounds decide whether it is a cost.
    Empty without both loops' GPU numbers."""
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    if not {check, free} <= set(view.index):
        return ""
    added = view.at[check, "the check adds ms"]
    cells = view.loc[[check, free], ["wall ms", "GPU busy ms", "GPU idle ms"]]
    if cells.isna().any().any():
        return ""
    work = (f"{view.at[free, 'GPU busy ms']:.3f} -> {view.at[check, 'GPU busy ms']:.3f} ms")
    idle = f"{view.at[free, 'GPU idle ms']:.3f} to {view.at[check, 'GPU idle ms']:.3f} ms"
    same = budget.about_same(view.at[free, "GPU busy ms"], view.at[check, "GPU busy ms"])
    if not isinstance(added, (int, float)):
        return (f"With the {regime} step, the bars without and with the check differ by "
                + (f"GPU idle only: the GPU's work stayed about the same ({work}), its idle went "
                   f"from {idle} per step" if same else
                   f"GPU work ({work}) and GPU idle ({idle} per step)")
                + "; whether the wall clock differs by more than the host's noise, the rounds "
                "decide (below).")
    text = (f"With the {regime} step, the check adds {added:.3f} ms of wall clock per step "
            f"({view.at[free, 'wall ms']:.3f} -> {view.at[check, 'wall ms']:.3f} ms). ")
    if same:
        return text + (f"The GPU's work stayed about the same ({work}), so the added time is "
                       f"GPU idle: it went from {idle} per step.")
    return text + f"The GPU's work went {work}, its idle from {idle} per step."


def cost_summary(step_budget: pd.DataFrame, unclear=(), judge: bool = True) -> str:
    """The check's cost per step for the summary, one item per regime: µs and share of the step
    without it where the rounds resolved it, "can't tell" where they did not (``unclear``, or a
    check that did not slow the step). Empty on a smoke run."""
    if not judge:
        return ""
    wall = step_budget.set_index("method")["wall_ms"]
    items = []
    for regime in ("eager", "CUDA graph"):
        check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
        if not {check, free} <= set(wall.index):
            continue
        us = 1e3 * (wall[check] - wall[free])
        items.append(f"{regime} step, can't tell" + (" (notebook 07 times it again)"
                                                     if regime == "CUDA graph" else "")
                     if regime in unclear or not us > 0 else
                     f"{regime} step, {us:.0f} µs ({100 * us / 1e3 / wall[free]:.0f}% of the step "
                     "without it)")
    return "The check's cost per step on this run: " + "; ".join(items) + "." if items else ""
