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
        text += wide_runs_words(ok, cap)
    return text


WIDE_RUNS = 0.25  # a row whose slowest run is this much slower than its fastest is named


def wide_runs_words(ok: pd.DataFrame, cap: int) -> str:
    """Where a row below the largest cap spread its runs widely (its slowest run ``WIDE_RUNS``
    slower than its fastest, or more), the widest one named, and that only the largest cap is
    read; empty otherwise."""
    rows = ok[(ok["seq_len"] < cap) & (ok["min_s"] > 0)]
    if rows.empty:
        return ""
    spread = rows["max_s"] / rows["min_s"] - 1
    row = rows.loc[spread.idxmax()]
    if spread.max() < WIDE_RUNS:
        return ""
    name = "checking" if row["method"] == CHECK else "no-check"
    return (f" At cap {int(row['seq_len'])} the {name} loop's runs spread from "
            f"{1e3 * row['min_s']:.0f} to {1e3 * row['max_s']:.0f} ms (the slowest "
            f"{100 * spread.max():.0f}% slower), so early stopping is read at cap {cap} only.")


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


def eager_check_line(step_budget: pd.DataFrame, cost: pd.DataFrame, judge: bool = True,
                     drift: float = float("nan")) -> str:
    """The eager step's check, measured and read against the simple model, which predicts a
    small cost where the host sets the pace: what this run measured (as a share of the check's
    cost under the CUDA graph only when the eager cost is told apart from the noise), the
    verdict, and whether the measurement agrees with the model; where it does not, the cost is
    read against ``drift`` (``loop_drift``), never given a cause."""
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
        if found == stats.FASTER and graph_us > 0:
            text += f", {100 * diff_us / graph_us:.0f}% of its cost under the CUDA graph"
    text += f"; without it: {stats.say(cost, f'eager, {FREE}', f'eager, {CHECK}', judge)}."
    if found is None or check["gpu_ms"] != check["gpu_ms"]:  # no verdict, or no GPU time
        return text
    if check["gpu_ms"] >= 0.5 * check["wall_ms"]:
        return text + (" Here the GPU's work is most of the eager step, so the model expects a "
                       "cost" + ("; this run measured one." if found == stats.FASTER and diff_us > 0
                                 else "; this run did not measure one."))
    if found == stats.FASTER and diff_us <= 0:  # the rounds and the medians disagree on the sign
        return text + " The rounds and the medians disagree on which loop was faster: too small a cost to read on this host."
    if found == stats.FASTER and graph_us != graph_us:  # no CUDA-graph cost to compare with
        return text
    if found == stats.FASTER and graph_us >= 2 * diff_us:
        return text + " A small cost, as the simple model predicts for a step the host paces."
    if found == stats.FASTER and diff_us <= graph_us:
        return text + " That is more than the simple model predicts for a step the host paces."
    if found == stats.FASTER:  # more than the CUDA graph's cost (or the graph's is none)
        return text + " " + drift_words(diff_us, free["wall_ms"], drift)
    if found == stats.NOISE:
        pct, us = unseen_us(step_budget, cost)
        return (text + " No cost is told apart from the host's noise, as the simple model allows "
                f"for a step the host paces; a cost under about {max(pct, 1):.0f}% of the step "
                f"(about {us:.0f} µs) would not show in this run.")
    return text + " Dropping the check did not make the eager step faster here."


def unseen_us(step_budget: pd.DataFrame, cost: pd.DataFrame, regime: str = "eager"):
    """The smallest cost of the check this run could have told apart at ``regime``: the
    interval's upper end (no check over the checking loop, minus 1) as a share of the step
    without the check, and in µs per step; ``(nan, nan)`` without rounds to judge."""
    ratio = stats.row_speedup(cost, f"{regime}, {FREE}", f"{regime}, {CHECK}")
    if ratio.n < stats.MIN_TRIALS or ratio.high != ratio.high:
        return float("nan"), float("nan")
    share = max(ratio.high - 1, 0.0)
    step_ms = step_budget.set_index("method").loc[f"{regime}, {FREE}", "wall_ms"]
    return 100 * share, 1e3 * share * step_ms


def drift_words(diff_us: float, step_ms: float, drift: float) -> str:
    """An eager check that cost more than the CUDA graph's: the model did not predict it, and,
    given ``drift`` (how far one loop moved between timings, a fraction), its size as a share of
    ``step_ms`` read against that drift (" At 12% of the step, the eager cost is of the size of
    the host's drift between runs (...)")."""
    text = "The simple model did not predict this: it expects the larger cost under the CUDA graph."
    if drift != drift:
        return text
    share = diff_us / (10 * step_ms)
    size = "of the size of" if share <= 2 * 100 * drift else "larger than"
    return text + (f" At {share:.0f}% of the step, the eager cost is {size} the host's drift "
                   f"between runs (one loop timed twice moved by up to {100 * drift:.0f}%: the "
                   "same-loop note above).")


def model_line(step_budget: pd.DataFrame, cost: pd.DataFrame, judge: bool = True) -> str:
    """The simple model's prediction (the check costs more under the CUDA graph than with the
    eager step) against this run's two costs per step. Empty on a smoke run or without both."""
    data = step_budget.set_index("method")
    names = [f"{r}, {loop}" for r in ("eager", "CUDA graph") for loop in (CHECK, FREE)]
    if not judge or not set(names) <= set(data.index):
        return ""
    eager_us, graph_us = (1e3 * (data.loc[f"{r}, {CHECK}", "wall_ms"]
                                 - data.loc[f"{r}, {FREE}", "wall_ms"])
                          for r in ("eager", "CUDA graph"))
    told = {r: stats.verdict(stats.row_speedup(cost, f"{r}, {FREE}", f"{r}, {CHECK}")) == stats.FASTER
            for r in ("eager", "CUDA graph")}

    def cost_words(us: float, regime: str) -> str:
        where = "per step under the CUDA graph" if regime == "CUDA graph" else "with the eager step"
        if us <= 0:  # a check cannot save time: a faster checking loop is the host's noise
            return (f"none {where.removeprefix('per step ')} (there the loop with the check ran "
                    f"{-us:.0f} µs per step faster: the host's noise)")
        return f"{us:+.0f} µs {where}" + ("" if told[regime] else " (not told apart from the host's noise)")

    text = f"the check cost {cost_words(graph_us, 'CUDA graph')} and {cost_words(eager_us, 'eager')}"
    graph_told = told["CUDA graph"] and graph_us > 0
    if not graph_told:
        return f"The simple model's prediction did not hold in this run: {text}."
    if told["eager"] and eager_us > 0:  # both costs told apart: they can be ranked
        word = "held" if graph_us > eager_us else "did not hold"
        return f"The simple model's prediction {word} in this run: {text}."
    # the eager cost is not told apart: the run cannot show it is the smaller, only allow it
    pct, us = unseen_us(step_budget, cost)
    text = f"The simple model's prediction was not contradicted in this run: {text}"
    if us == us:
        text += (f"; with the eager step this run could not have seen a cost under about {us:.0f} µs "
                 f"({max(pct, 1):.0f}% of the step)" + (
                     f", even one as large as the graph's {graph_us:.0f} µs: it cannot rank the two "
                     "costs" if us >= graph_us
                     else ""))
    return text + "."


def figure_line(table: pd.DataFrame) -> str:
    """The figure's left panel in numbers: each loop's seconds per batch at every cap."""
    ok = table[table["status"] == harness.OK]
    caps = sorted(ok["seq_len"].unique())
    at = ok.set_index(["method", "seq_len"])["median_s"]
    times = lambda m: ", ".join(f"{at[m, c]:.2f} s at cap {int(c)}"  # noqa: E731
                                for c in caps if (m, c) in at.index)
    return (f"Figure, left: with the check the batch finishes in {times(CHECK)}; running to the "
            f"cap takes {times(FREE)}. Right, per step (each run's time over its tokens, the "
            "prefill included):")


def loop_timings(table: pd.DataFrame, cost: pd.DataFrame, n_tokens: int) -> dict:
    """Each eager loop's ms per token wherever it was timed: the early-stop table (the no-check
    loop at ``n_tokens``; the checking loop at every cap, over the tokens it generated) and the
    budget's rounds, as ``{loop: [(where, ms, tokens, row)]}``; a loop timed once is left out."""
    ok = table[table["status"] == harness.OK]
    again = cost[cost["status"] == harness.OK].set_index("method")
    out = {}
    for loop in (FREE, CHECK):
        rows = ok[ok["method"] == loop].sort_values("seq_len")
        if loop == FREE:
            rows = rows[rows["seq_len"] == n_tokens]
        if "tokens" not in rows or f"eager, {loop}" not in again.index or rows.empty:
            continue
        seen = [(f"at cap {int(r['seq_len'])}", 1e3 * r["median_s"] / r["tokens"], int(r["tokens"]), r)
                for _, r in rows.iterrows()]
        here = again.loc[f"eager, {loop}"]
        out[loop] = seen + [("here", 1e3 * here["median_s"] / n_tokens, n_tokens, here)]
    return out


def _spread(seen) -> float:
    """Slowest over fastest of one loop's timings (``loop_timings``' entries), minus 1."""
    return max(ms for _, ms, _, _ in seen) / min(ms for _, ms, _, _ in seen) - 1


def loop_drift(table: pd.DataFrame, cost: pd.DataFrame, n_tokens: int) -> float:
    """How far one eager loop's time per token moved between its timings, the largest over the
    loops (``loop_timings``): slowest over fastest, minus 1. NaN when no loop was timed twice."""
    moves = [_spread(seen) for seen in loop_timings(table, cost, n_tokens).values()]
    return max(moves) if moves else float("nan")


def same_loop_note(table: pd.DataFrame, cost: pd.DataFrame, n_tokens: int) -> str:
    """The eager loops timed twice (the early-stop table, then the budget): the no-check loop at
    ``n_tokens`` per step, against its own spread in the first table; the checking loop per
    token at each cap there (fewer tokens: its rows stop early) and here. Each comparison reads
    its loops within its own rounds. Empty when neither loop was timed twice."""
    timings = loop_timings(table, cost, n_tokens)
    said = []
    if FREE in timings:
        (_, a, _, first), (_, b, _, _) = timings[FREE]
        low, high = 1e3 * first["min_s"] / n_tokens, 1e3 * first["max_s"] / n_tokens
        where = "inside" if low <= b <= high else "outside"
        said.append(f"The eager no-check loop at {n_tokens} tokens ran {a:.2f} ms per step in the "
                    f"early-stop table and {b:.2f} ms here, {100 * (max(a, b) / min(a, b) - 1):.0f}% "
                    f"slower {'there' if a > b else 'here'} ({where} the {low:.2f} to {high:.2f} ms "
                    "its runs spanned there)")
    if CHECK in timings:
        seen = timings[CHECK]
        same = len({tokens for _, _, tokens, _ in seen[:-1]}) == 1
        there = " and ".join(f"{ms:.2f} ms {where}" + ("" if same else f" ({tokens} tokens)")
                             for where, ms, tokens, _ in seen[:-1])
        spread = _spread(seen)
        said.append(f"the checking loop ran {there} per step in the early-stop table"
                    + (f" (its {seen[0][2]} tokens)" if same else "")
                    + f", {seen[-1][1]:.2f} ms here ({n_tokens} tokens), the slowest "
                    f"{100 * spread:.0f}% slower than the fastest")
    if not said:
        return ""
    text = "; ".join(said)
    return (text[0].upper() + text[1:] + ": timed at different moments, the host's speed drifts "
            "between them, so each comparison reads its two loops within its own rounds.")


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
