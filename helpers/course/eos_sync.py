"""Notebook 06's readings, kept out of the lesson: the early-stopping figure and token ratio,
the check's cost per regime (those the rounds cannot resolve read "can't tell apart"), the
budget in words, and the profiler's view."""
from __future__ import annotations

import pandas as pd

from . import budget, harness, plotting, results, stats

CHECK, FREE = "check every step", "no check"  # the two loops' names in every table and figure


def stop_view(table: pd.DataFrame) -> pd.DataFrame:
    """The early-stop table as the lesson shows it, narrow enough not to wrap (round 36): its
    ``status`` column only where some row is not ok."""
    columns = ["method", "seq_len", "tokens", "useful", "status", "median_s", "min_s", "max_s",
               "tokens_per_s"]
    if (table["status"] == harness.OK).all():
        columns.remove("status")
    return results.pretty(table, columns=columns).rename(
        columns={"seq_len": "cap"})


def stop_bound(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """The token counts behind early stopping's gain at ``cap``: the checking loop's new tokens
    per row against the cap, and their ratio (the no-check loop's over the checking loop's).
    Empty on a smoke run or without both rows."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == cap)].set_index("method")
    if not judge or not {CHECK, FREE} <= set(ok.index):
        return ""
    free, check = int(ok.at[FREE, "tokens"]), int(ok.at[CHECK, "tokens"])
    return (f"with early stopping the batch stopped with its longest row, after {check} of the "
            f"cap's {free} tokens (a token ratio of {free / check:.2f})")


def cost_line(step_budget: pd.DataFrame, cost: pd.DataFrame, unclear=(), judge: bool = True,
              said=()) -> str:
    """What the check costs per step in each regime, from the rounds, a line each. A
    resolved regime gives its cost in µs and as a share of the step without it, and how many
    times faster that step runs; then which regime pays more each way (they can differ: a long
    eager step hides a large cost in a small share). A regime in ``unclear`` says what its rounds
    show instead (``unclear_note``) and, for the eager step, its medians' share against the
    CUDA-graph step's (``host_behind``); where it is the CUDA-graph step, that notebook 07 times the same loops
    again. A regime in ``said`` is left out: the line under the figure gave its verdict
    (``budget_line`` with ``cost``), and the lesson says it once. Empty on a smoke run."""
    if not judge:
        return ""
    wall = step_budget.set_index("method")["wall_ms"]
    parts, paid = [], {}
    for regime in ("eager", "CUDA graph"):
        check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
        if not {check, free} <= set(wall.index):
            continue
        us = 1e3 * (wall[check] - wall[free])
        if regime in said:  # given under the figure; still weighed in ``who_pays``
            if regime not in unclear and us > 0:
                paid[regime] = (us, 100 * us / 1e3 / wall[free])
            continue
        if regime in unclear or not us > 0:
            parts.append(unclear_note(cost, step_budget, regime)
                         + (host_behind(step_budget, unclear, cost, "CUDA graph" in said)
                            if regime == "eager" else "")
                         + left_out(wall, regime))
            continue
        paid[regime] = (us, 100 * (wall[check] - wall[free]) / wall[free])
        runs = _with_medians(stats.say(cost, free, check, judge), wall[check] / wall[free])
        parts.append(f"With the {regime} step the check costs {us:.0f} µs per step, "
                     f"{paid[regime][1]:.0f}% of the {wall[free]:.2f} ms step without it, which "
                     f"runs {runs}." + left_out(wall, regime))
    if not parts:
        return ""
    parts[-1] += who_pays(paid)
    if "CUDA graph" in unclear and "CUDA graph" not in said:
        parts[-1] += " Notebook 07 times the same two CUDA-graph loops again."
    return "\n".join(parts)  # a line per step


def graph_rows(step_budget: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``step_budget`` that the budget figure draws: the CUDA-graph step's where it
    ran (the eager step's long, noisy bars would hide them; ``cost_line`` gives the eager step
    in a line with its rounds' range), else every row (a CPU run has the eager step only)."""
    graph = step_budget["method"].str.startswith("CUDA graph")
    return step_budget[graph] if graph.any() else step_budget


def left_out(wall: pd.Series, regime: str) -> str:
    """" The figure leaves the eager step out." where ``graph_rows`` leaves it out."""
    graph = any(str(m).startswith("CUDA graph") for m in wall.index)
    return " The figure leaves the eager step out." if regime == "eager" and graph else ""


def per_step_rounds(cost: pd.DataFrame, method: str) -> list:
    """One row's timed rounds in ms per decode step (its trials over its ``seq_len``)."""
    rows = cost.loc[cost["method"] == method, "seq_len"]
    if rows.empty:
        return []
    return [1e3 * t / float(rows.iloc[0]) for t in stats.method_trials(cost, method)]


def apart(check: list, free: list) -> str:
    """Whether two loops' runs separate: "check" where every run of the loop with the check was
    faster than every run without it, "free" the other way, "" where they overlap (or none)."""
    if not check or not free:
        return ""
    return "check" if max(check) < min(free) else "free" if max(free) < min(check) else ""


def unclear_note(cost: pd.DataFrame, step_budget: pd.DataFrame, regime: str,
                 lead: bool = True) -> str:
    """For a regime whose rounds do not show the check as a cost, what they show, in words: the
    loop with the check faster in every round (no cost shows; the course does not explain why,
    the GPU's work being about the same where it is); the loop without it faster in every one of
    fewer than ``stats.MIN_TRIALS`` rounds (the cost by the table's medians, named so, and its
    share of the step without it; no range, so the table's "can't tell" stands); else the verdict
    with each loop's range of rounds (and, from ``stats.MIN_TRIALS`` rounds on, its interval).
    ``lead`` False: without its "With the ... step" (``timed_verdict`` names the step itself)."""
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    head = lambda body, comma="": f"With the {regime} step{comma} {body}" if lead else body  # noqa: E731
    per_step = {m: per_step_rounds(cost, m) for m in (check, free)}
    n = min(len(v) for v in per_step.values())
    spread = lambda m: f"{min(per_step[m]):.2f} to {max(per_step[m]):.2f}"  # noqa: E731
    rounds = (f"{spread(check)} ms per step with the check, {spread(free)} without it"
              if n else "")
    side = apart(per_step[check], per_step[free])
    if side == "check":
        gpu = step_budget.set_index("method")["gpu_ms"] if "gpu_ms" in step_budget else None
        same = gpu is not None and budget.about_same(gpu.get(free, 0), gpu.get(check, 0))
        return head(f"the loop with the check was faster in every one of its "
                    f"{n} rounds ({rounds})"
                    + (f", its GPU work about the same ({gpu[check]:.2f} against {gpu[free]:.2f} ms)"
                       if same else "")
                    + ": no cost shows, and this course does not explain why the loop without the "
                    "check ran slower.")
    if side == "free":  # only with fewer rounds than a range needs: more would resolve it
        wall = step_budget.set_index("method")["wall_ms"]
        added = wall[check] - wall[free]  # every round apart: the medians keep that order
        return head(f"the loop without the check was faster in every one of "
                    f"its {n} rounds ({rounds}); by the table's medians the check costs "
                    f"{added:.3f} ms per step, {100 * added / wall[free]:.0f}% of the "
                    f"{wall[free]:.2f} ms step without it. The table reads \"can't tell\" all the "
                    f"same: {n} rounds give no range (it takes {stats.MIN_TRIALS}).")
    if n < stats.MIN_TRIALS:
        return head(f"the two loops' {n} rounds overlap ({rounds}): too few "
                    f"to tell them apart, since with fewer than {stats.MIN_TRIALS} one odd round sways "
                    "the figure.")
    said = stats.plain(stats.row_speedup(cost, free, check))
    return head(f"how many times faster the loop without the check ran: "
                f"{said}; its rounds overlap ({rounds}).", ",")


def host_behind(step_budget: pd.DataFrame, unclear=(), cost: pd.DataFrame = None,
                above: bool = False) -> str:
    """Where the eager step's rounds leave the check's cost unresolved (``unclear``) but the
    CUDA-graph step's resolve it: from the two ranges of the rounds (``cost``), the most the check
    can add to the eager step, as a share of the step without it (the top of its range), against
    the least it adds to the CUDA-graph step (the bottom of its range), and that as a share of
    the step it matters less in the eager loop, said only where the first is the smaller. The
    lesson does not measure why; nothing is said of a mechanism. ``above``: that range was
    printed under the figure, before this line. Empty otherwise."""
    wall = step_budget.set_index("method")["wall_ms"]
    names = {r: (f"{r}, {CHECK}", f"{r}, {FREE}") for r in ("eager", "CUDA graph")}
    if cost is None or "eager" not in unclear or "CUDA graph" in unclear or not all(
            {c, f} <= set(wall.index) for c, f in names.values()):
        return ""
    ratio = {r: stats.row_speedup(cost, f, c) for r, (c, f) in names.items()}
    if min(r.n for r in ratio.values()) < stats.MIN_TRIALS:
        return ""
    most, least = round(100 * (ratio["eager"].high - 1)), round(100 * (ratio["CUDA graph"].low - 1))
    if not 0 < most < least:
        return ""
    return (f" Even at the top of that range the check adds at most {most}% to the eager step, "
            f"against at least {least}% to the CUDA-graph step (the bottom of its range"
            f"{', above' if above else ', below'}): "
            "as a share of the step it matters less in the eager loop.")


def _with_medians(said: str, medians: float) -> str:
    """``stats.say``'s "1.36x faster (1.33–1.39)" with the table's medians' ratio added once, so
    that it agrees with a share computed from those medians (unless ``say`` already names it)."""
    if ("the table's medians" in said or not said.endswith(")")
            or said.startswith(f"{medians:.2f}x")):  # the same number: nothing to reconcile
        return said
    return said[:-1] + f"; the table's medians: {medians:.2f}x)"


def stop_speedup(table: pd.DataFrame, cap: int, judge: bool = True) -> str:
    """Early stopping's speedup at ``cap`` (the loop with the check against running to the cap):
    ``stats.say`` from ``stats.MIN_TRIALS`` rounds on. With fewer the course gives no range, so
    the line says in words what the runs show: every run of one loop faster than every run of
    the other, or that they overlap; with the rounds' ratio and, where they differ, the medians'."""
    check, free = (stats.method_trials(table, m, seq_len=cap) for m in (CHECK, FREE))
    n = min(len(check), len(free))
    if not judge or n >= stats.MIN_TRIALS or not n:
        said = stats.say(table, CHECK, FREE, judge, seq_len=cap)
        return f"timed against running to the cap, {said}"
    ratio = stats.row_speedup(table, CHECK, FREE, seq_len=cap).estimate
    medians = stats.medians_ratio(check, free)
    also = f" (the table's medians: {medians:.2f}x)" if stats.medians_apart(medians, ratio) else ""
    ms = lambda v: f"{1e3 * v:.1f} ms"  # noqa: E731
    side = apart(check, free)
    if side == "check":
        return (f"timed, every run that stopped early beat every run to the cap ({ms(max(check))} "
                f"at the slowest, against {ms(min(free))} at the fastest): {ratio:.2f}x faster, averaged "
                f"round by round{also}; {n} runs give no range (it takes {stats.MIN_TRIALS})")
    if side == "free":
        return (f"timed, every run to the cap beat every run that stopped early ({ms(max(free))} "
                f"at the slowest, against {ms(min(check))} at the fastest): {1 / ratio:.2f}x slower, "
                f"averaged round by round{also}; {n} runs give no range (it takes "
                f"{stats.MIN_TRIALS})")
    return (f"timed against running to the cap, {ratio:.2f}x, averaged round by round{also}, but "
            f"the runs overlap ({ms(min(check))} to {ms(max(check))} stopping early, "
            f"{ms(min(free))} to {ms(max(free))} to the cap): "
            f"{n} runs are too few to tell them apart, since with fewer than {stats.MIN_TRIALS} "
            "one odd run sways the figure")


def speedup_why(table: pd.DataFrame, judge: bool = True) -> str:
    """Whether early stopping's speedup at the largest cap agrees with its token ratio, said
    plainly: inside the printed range (the time saved is what the steps saved predict, to within
    this run's noise), above or below it (said so, with no cause: the lesson does not measure
    one), or, with fewer than ``stats.MIN_TRIALS`` runs, that without a range this run cannot say
    (the round-27b review: the workshop's 2.60x beside 2.50 went unread). First, where the
    headline names the table's medians beside a range, which of the two the lesson quotes and why
    they differ, without printing either ratio again (the headline holds both). Then ``drift_line``: identical runs of one table that differ. Empty
    on a smoke run or with one cap."""
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
    runs = min(len(stats.method_trials(ok, m, seq_len=cap)) for m in (CHECK, FREE))
    medians = stats.medians_ratio(*(stats.method_trials(ok, m, seq_len=cap) for m in (CHECK, FREE)))
    trials = {m: [1e3 * t for t in stats.method_trials(ok, m, seq_len=cap)] for m in (CHECK, FREE)}
    span = lambda m: f"{min(trials[m]):.0f} to {max(trials[m]):.0f} ms"  # noqa: E731
    uses = (f"The lesson quotes the ratio of runs taken in pairs side by side; single runs vary "
            f"({span(CHECK)} with the check, {span(FREE)} without it, at cap {cap}), so the "
            "table's medians give another. "
            if runs >= stats.MIN_TRIALS and stats.medians_apart(medians, speedup.estimate) else "")
    digits = stats._digits(speedup.low, speedup.high)
    bounds = f"({speedup.low:.{digits}f}\u2013{speedup.high:.{digits}f})"
    if not runs:
        why = ""
    elif runs < stats.MIN_TRIALS:  # the headline prints no range
        why = (f"Without a range, this run cannot say whether the speedup differs from the token "
               f"ratio ({ratio:.2f}).")
    elif speedup.low <= ratio <= speedup.high:
        why = (f"The token ratio ({ratio:.2f}) lies inside the printed range: the time saved is what the "
               "steps saved predict, to within this run's noise.")
    else:  # outside: said, with no cause (none is measured here)
        side, more = ("above", "less") if speedup.high < ratio else ("below", "more")
        why = (f"The token ratio ({ratio:.2f}) lies {side} the speedup's range {bounds}: early "
               f"stopping saved {more} time than the steps it skipped predict, and this lesson "
               "does not measure why.")
    return (uses + " ".join(t for t in (why, drift_line(ok, low, cap, tokens[CHECK])) if t)).strip()


def drift_line(ok: pd.DataFrame, low: int, cap: int, tokens: int) -> str:
    """Where the loop with the check ran the same ``tokens`` per row at caps ``low`` and ``cap``
    (identical work) and its medians lie more than ``stats.MEDIANS_APART`` apart: both times, and
    whether their runs overlap; where the two loops' medians at ``low`` lie no further apart than
    that, that the low cap's comparison can't be read (round 31: 1.25x against 1.25x), or, where
    every run at one cap ran slower per token (``slow_point``), that. Empty otherwise."""
    check = ok[ok["method"] == CHECK].set_index("seq_len")
    if low not in check.index or cap not in check.index or int(check.at[low, "tokens"]) != tokens:
        return ""
    at = {c: 1e3 * check.at[c, "median_s"] for c in (low, cap)}
    if not stats.medians_apart(at[low], at[cap]):
        return ""
    runs = {c: [1e3 * t for t in stats.method_trials(ok, CHECK, seq_len=c)] for c in (low, cap)}
    spread = (f" (runs {min(runs[low]):.1f} to {max(runs[low]):.1f} against {min(runs[cap]):.1f} "
              f"to {max(runs[cap]):.1f} ms, no overlap)" if apart(runs[low], runs[cap]) else "")
    drift = max(at.values()) / min(at.values())
    pair = {c: ok[(ok["seq_len"] == c) & (ok["method"] == FREE)]["median_s"].max() * 1e3 / at[c]
            for c in (low, cap)}  # the two loops' medians apart, no check over the check
    if pair[low] <= drift and (slow := slow_point(ok, low, cap)):  # round 33: not run-to-run noise
        return slow
    read = ("so times in this table move by about that much from one point to another."
            if pair[low] > drift else f"at least as far apart as the two loops at cap {low} "
            f"({pair[low]:.2f}x), so " + (f"only cap {cap}'s comparison can be read."
                                          if pair[cap] > drift else "neither cap's comparison can be read."))
    return (f"The loop with the check ran the same {tokens} tokens (its longest row) at caps "
            f"{low} and {cap}, yet its median run took {at[low]:.1f} ms at cap {low} and {at[cap]:.1f} ms "
            f"at cap {cap}{spread}, {drift:.2f}x apart: identical work, {read}")


def slow_point(ok: pd.DataFrame, low: int, cap: int) -> str:
    """Round 33: where every run of both loops at one cap took longer per token than that loop's
    median at the other cap (round 35: said so, not "than at cap 200": a no-check run at cap 100
    beat the slowest cap-200 run in 2f157b6) (4448ee4: 9.8 and 9.7 ms per token at cap 100, against 6.0 and 6.1
    at cap 200), that the whole comparison at that cap ran slower, with the identical work's two
    medians; the table's two loops at each cap were timed side by side. Empty otherwise."""
    per = {}  # (loop, cap): ms per token of each run, and of the median run
    for m in (CHECK, FREE):
        rows = ok[ok["method"] == m].set_index("seq_len")
        if low not in rows.index or cap not in rows.index:
            return ""
        for c in (low, cap):
            n = int(rows.at[c, "tokens"])
            per[m, c] = ([1e3 * t / n for t in stats.method_trials(ok, m, seq_len=c)],
                         1e3 * rows.at[c, "median_s"] / n)
    for slow, fast in ((low, cap), (cap, low)):
        if all(per[m, slow][0] and min(per[m, slow][0]) > per[m, fast][1] for m in (CHECK, FREE)):
            break
    else:
        return ""
    check = ok[ok["method"] == CHECK].set_index("seq_len")
    ms = lambda c: f"{1e3 * check.at[c, 'median_s']:.1f} ms"  # noqa: E731
    return (f"At cap {slow} every run of both loops took longer per token than that loop's median "
            f"run at cap {fast} "
            f"({per[CHECK, slow][1]:.1f} and {per[FREE, slow][1]:.1f} ms per token by the medians, "
            f"against {per[CHECK, fast][1]:.1f} and {per[FREE, fast][1]:.1f}): the whole cap-{slow} "
            f"comparison ran slower, so the same {int(check.at[low, 'tokens'])} tokens with the "
            f"check took {ms(low)} at cap {low} and {ms(cap)} at cap {cap}.")


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
    # green and orange: blue (GPU work) and red (the floor) mean other things in the budget beside it
    for i, (method, colour) in enumerate(((CHECK, plotting.PALETTE[2]), (FREE, plotting.PALETTE[3]))):
        part = ok[ok["method"] == method].set_index("seq_len").reindex(caps)
        x = [k + (i - 0.5) * width for k in range(len(caps))]
        bars = ax.bar(x, part["median_s"], width, color=colour, label=method,
                      yerr=[part["median_s"] - part["min_s"], part["max_s"] - part["median_s"]],
                      capsize=3, ecolor="#555555")
        # inside the bar, clear of the whisker that starts at its top
        ax.bar_label(bars, labels=["" if pd.isna(v) else f"{v:.2f}" for v in part["median_s"]],
                     label_type="center", color="white", fontsize=9)
    ax.set_xticks(range(len(caps)), [f"cap {int(c)}" for c in caps])
    ax.set(ylabel="seconds per batch (median)",
           title=f"Early stopping: time to finish (rows stop at {stop_low}-{stop_high})")
    ax.legend(loc="upper left", fontsize=9, frameon=False, title="whiskers: fastest to slowest run",
              title_fontsize=9)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)


QUEUED_AHEAD_US = 50  # a median GPU gap below this without the check: the CPU queued ahead


def gap_line(gaps: pd.DataFrame, step_budget: pd.DataFrame = None, unclear=()) -> str:
    """The profiled CUDA-graph steps in words (``gaps``: a row per loop, medians of
    ``gap_before_us``, ``cpu_us`` and, where known, ``idle_inside_us``): the GPU's idle before a
    step with the check, after the CPU's wait, and without it. Then (round 37) why the gap the
    check adds differs from its timed cost (``step_budget``): the profiled host step with the
    check against the timed one, said only where the two differ the same way (after the check
    the GPU waits for the host, so a slower host widens the gap), and not where the two are about
    the same (``budget.about_same``); or that the rounds left the
    cost unresolved (``unclear``). Last, where the CPU queued ahead without the check (a median
    gap under ``QUEUED_AHEAD_US``), that the timed idle without it (its share of the step) lies
    inside the steps, between a replay's kernels, and in the prefill, not between steps."""
    with_gap, free_gap = gaps.at[CHECK, "gap_before_us"], gaps.at[FREE, "gap_before_us"]
    text = (f"Profiled, the GPU idles {with_gap:.0f} µs before each step with the check, after "
            f"the CPU's wait, and {free_gap:.0f} µs without it.")
    ahead = free_gap < QUEUED_AHEAD_US  # the gap is then the check's alone
    data = None if step_budget is None else step_budget.set_index("method")
    check, free = f"CUDA graph, {CHECK}", f"CUDA graph, {FREE}"
    if data is None or not {check, free} <= set(data.index):
        return text
    wall = data["wall_ms"]
    if "CUDA graph" in unclear or not wall[check] > wall[free]:
        text += (" Timed without the profiler, the rounds can't tell the check's cost apart "
                 "(above).")
    else:
        cost, timed, host = 1e3 * (wall[check] - wall[free]), 1e3 * wall[check], gaps.at[CHECK, "cpu_us"]
        added = with_gap if ahead else with_gap - free_gap
        if (added > cost) == (host > timed) and not budget.about_same(added, cost):
            text += (f" {'The gap' if ahead else f'The gap the check adds ({added:.0f} µs)'} is "
                     f"{'wider' if added > cost else 'narrower'} than the check's timed cost "
                     f"({cost:.0f} µs) because the host's step with the check ran "
                     f"{'longer' if host > timed else 'shorter'} under the profiler ({host:.0f} µs "
                     f"against {timed:.0f} µs timed), and after the check the GPU waits for the host.")
    if ahead and "idle_inside_us" in gaps and "idle_ms" in data:
        share = 100 * round(data.at[free, "idle_ms"], 3) / round(wall[free], 3)  # as the view prints
        text += (f" Without the check the GPU's idle ({share:.0f}% of the timed step) lies inside "
                 f"the steps, {gaps.at[FREE, 'idle_inside_us']:.0f} µs between the kernels of each "
                 "replay (profiled), and in the prompt's prefill, not between steps.")
    return text


def unresolved(cost: pd.DataFrame, judge: bool = True) -> list:
    """The regimes whose rounds do not tell the no-check loop apart as faster than the checking
    loop: their cost is shown as "can't tell", never as a signed number. None on a smoke run."""
    if not judge:
        return []
    regimes = {m.rpartition(", ")[0] for m in cost["method"]}
    return sorted(r for r in regimes if {f"{r}, {CHECK}", f"{r}, {FREE}"} <= set(cost["method"])
                  and stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}"))
                  != stats.FASTER)


def pace_rule() -> str:
    """Lesson 00's rule for who sets a step's pace, with its thresholds (``budget.pace``), for a
    lesson that names the pace: the same words in 06 and 07."""
    return (f"lesson 00's rule: the GPU sets the pace where it idles at most "
            f"{budget.GPU_PACE_PCT}% of the step, the host where it idles {budget.HOST_PACE_PCT}% "
            "or more, and they share it in between")


def budget_line(view: pd.DataFrame, regime: str = "CUDA graph", rule: bool = False,
                cost: pd.DataFrame = None, step_budget: pd.DataFrame = None) -> str:
    """The budget of ``regime``'s step in words, from ``profiling.check_cost``'s table (``view``,
    its values as printed): what the check adds to the wall clock per step (the table's last
    column), and whether that is GPU work or GPU idle. Where the check's cost is not a number
    (a "can't tell"), what the bars differ in, and that the rounds decide whether it is a cost.
    Empty without both loops' GPU numbers. With ``rule``, the pace's rule is written out
    (``pace_rule``) in place of "(lesson 00's rule)". With the timed rounds (``cost``, and
    ``step_budget``), the line gives the lesson's answer there, once (``timed_verdict``), in
    place of sending the reader on; ``cost_line`` then leaves the regime out."""
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    if not {check, free} <= set(view.index):
        return ""
    if rule:
        return budget_line(view, regime, cost=cost, step_budget=step_budget).replace(
            "(lesson 00's rule)", f"({pace_rule()})")
    timed = timed_verdict(cost, step_budget, regime) if cost is not None else ""
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
                + (f"; timed, {timed}" if timed else "; whether the wall clock differs by more "
                   "than the host's noise, the rounds decide (below).") + pace_note(view, regime))
    text = (f"With the {regime} step, the check adds {added:.3f} ms of wall clock per step "
            f"({view.at[free, 'wall ms']:.3f} -> {view.at[check, 'wall ms']:.3f} ms"
            + (f"): without it the step runs {timed}. " if timed else "). "))
    if same:
        return text + (f"The GPU's work stayed about the same ({work}), so the added time is "
                       f"GPU idle: it went from {idle} per step." + pace_note(view, regime))
    return text + f"The GPU's work went {work}, its idle from {idle} per step." + pace_note(view, regime)


def eager_row_line(view: pd.DataFrame, step_budget: pd.DataFrame) -> str:
    """The eager row of the cost table in one sentence (round 32): the GPU's idle share of the
    eager step without the check and who sets its pace (lesson 00's rule); where the host does
    and the check adds, by the medians (``step_budget``), under half the CUDA-graph step's share,
    that the check has little to add; where the eager rounds can't tell the loops apart (the
    table's "can't tell"), nothing more: ``cost_line`` gives that verdict, once (round 36). Empty
    where the host does not set that pace."""
    rows = {f"{r}, {m}" for r in ("eager", "CUDA graph") for m in (CHECK, FREE)}
    share = _free_share(view, "eager") if rows <= set(view.index) else None
    if share is None or budget.pace(share, why=False) != "the host sets the pace":
        return ""
    wall = step_budget.set_index("method")["wall_ms"]
    adds = {r: wall[f"{r}, {CHECK}"] / wall[f"{r}, {FREE}"] - 1 for r in ("eager", "CUDA graph")}
    little = adds["CUDA graph"] > 0 and adds["eager"] < adds["CUDA graph"] / 2
    told = isinstance(view.at[f"eager, {CHECK}", "the check adds ms"], (int, float))
    return (f"With the eager step the GPU idles {share:.0f}% of the step even without the check: "
            "the host sets that step's pace" + (", so the check adds little to it." if told and little
                                                else "."))  # round 36: "can't tell" once, below


def timed_verdict(cost: pd.DataFrame, step_budget: pd.DataFrame, regime: str) -> str:
    """What ``regime``'s timed rounds say of the check, for ``budget_line``: where they resolve
    it, how many times faster the step runs without it ("1.26x faster (1.25–1.28; the table's
    medians: 1.27x)"); else ``unclear_note``'s words, without its "With the ... step"."""
    check, free = f"{regime}, {CHECK}", f"{regime}, {FREE}"
    wall = step_budget.set_index("method")["wall_ms"]
    if not {check, free} <= set(wall.index):
        return ""
    if regime not in unresolved(cost) and wall[check] > wall[free]:
        return _with_medians(stats.say(cost, free, check, True), wall[check] / wall[free])
    return unclear_note(cost, step_budget, regime, lead=False)


def pace_note(view: pd.DataFrame, regime: str) -> str:
    """Who sets the pace of ``regime``'s step without the check, by lesson 00's rule
    (``budget.pace``) on the idle share of the values ``view`` prints."""
    share = _free_share(view, regime)
    if share is None:
        return ""
    return (f" Without the check the GPU idles {share:.0f}% of this step: "
            f"{budget.pace(share, why=False)} (lesson 00's rule).")


def _free_share(view: pd.DataFrame, regime: str):
    """The GPU's idle share of ``regime``'s step without the check, from the values ``view``
    prints; None where the step has no time."""
    free = f"{regime}, {FREE}"
    idle, wall = view.at[free, "GPU idle ms"], view.at[free, "wall ms"]
    return 100 * idle / wall if wall > 0 else None


def summary_line(step_budget: pd.DataFrame, unclear=(), judge: bool = True, stopped: int = None,
                 cap: int = None, cost: pd.DataFrame = None) -> str:
    """The lesson's takeaway in one line for its summary, a number in every preset (round 30):
    where the batch stopped (``stopped`` of the ``cap``'s tokens, as a share of the cap); then,
    timed, the check's cost with the CUDA-graph step, how many times as long it made the step (the
    rounds' estimate, the lesson's answer, as the line under the figure quotes it) where its rounds
    resolve it, else (with ``cost``) its GPU idle before and
    after and the rounds' verdict in a few words (``stats.short``, no range); a smoke run says
    it makes no timing claim. Empty with nothing to say."""
    wall = step_budget.set_index("method")["wall_ms"]
    check, free = f"CUDA graph, {CHECK}", f"CUDA graph, {FREE}"
    parts = []
    if stopped and cap:
        parts.append(f"with the check the batch stopped after {stopped} of the cap's {cap} tokens "
                     f"({100 * stopped / cap:.0f}% of the cap)")
    graph = {check, free} <= set(wall.index)
    if judge and graph and "CUDA graph" not in unclear and wall[check] > wall[free]:
        # round 33: the rounds' estimate, as the line under the figure quotes it (1.41x, not
        # the medians' 1.47x); the ms stay the table's medians, named so
        times = (stats.row_speedup(cost, free, check).estimate if cost is not None
                 else wall[check] / wall[free])
        # round 36: the ratio alone; the ms and the medians' ratio are under the figure, once
        parts.append(f"with the CUDA-graph step the check's idle made each step {times:.2f}x as "
                     f"long")
    elif judge and graph and cost is not None:
        idle = step_budget.set_index("method")["idle_ms"]
        said = stats.short(stats.row_speedup(cost, free, check))
        parts.append("with the CUDA-graph step "
                     + (f"the check raised the GPU's idle from {idle[free]:.2f} to "
                        f"{idle[check]:.2f} ms per step, yet timed, the loop without it: {said}"
                        if idle[check] > idle[free] else f"the loop without the check: {said}"))
    elif not judge and parts:
        parts.append("a smoke run: no timing claim")
    return f"This run: {'; '.join(parts)}." if parts else ""
