"""How a decode loop's time grows with the number of new tokens (notebooks 01 and 02).

The naive loop's step at position t costs a part that does not grow with t plus work on all t
positions, so N steps take ``a*N + b*N**2``: a and b are the intercept and the curvature of that
fit to the measured totals. The host and the GPU work at the same time, so a is not the host's
time and b not the GPU's; the fit splits the wall clock by how it grows, not by who spends it.
These functions time a loop at several lengths, fit that model, and state it in the course's
words.
"""
from __future__ import annotations

import math

import pandas as pd

from . import analysis, budget, harness, results, stats


def time_lengths(loop, lengths, *, device, batch_size, repeats, warmup=1, budget_s=None,
                 busy=False, method="naive") -> list:
    """Time ``loop(n)`` for every ``n`` in ``lengths`` as interleaved trials (each round runs
    every length once, the order rotated), so the lengths meet the host at the same moments.
    Returns one results row per length (``method``, ``seq_len`` and the shared columns)."""
    calls = {n: (lambda n=n: loop(n)) for n in lengths}
    rows, _ = harness.compare(calls, device=device, repeats=repeats, warmup=warmup,
                              budget_s=budget_s, busy=busy)
    for row in rows:
        n = row.pop("method")
        row.update(method=method, batch_size=batch_size, seq_len=n,
                   device_name=harness.device_label(device))
        harness.with_tokens_per_s(row, batch_size, n)
    return rows


def compare_at_lengths(loops, lengths, *, device, batch_size, repeats, warmup=1, budget_s=None,
                       busy=False) -> list:
    """At every length ``n``, time ``loop(n)`` of every method in ``loops`` (name -> loop) as
    interleaved trials (``harness.compare_row``); one results row per method and length."""
    rows = []
    for n in lengths:
        calls = {name: (lambda loop=loop, n=n: loop(n)) for name, loop in loops.items()}
        point, _ = harness.compare_row(calls, device=device, batch_size=batch_size, seq_len=n,
                                       repeats=repeats, warmup=warmup, budget_s=budget_s, busy=busy)
        rows += point
    return rows


def fit(table) -> dict:
    """The growth of one method's rows: the exponent k in time ~ N**k, and a (ms per step, the
    part that does not grow) and b (µs per step per token of sequence) in time = a*N + b*N**2."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    a, b = analysis.linear_quadratic_fit(ok["seq_len"], ok["median_s"])
    return {"exponent": analysis.growth_exponent(ok["seq_len"], ok["median_s"]),
            "a_ms": 1e3 * a, "b_us": 1e6 * b, "lengths": list(ok["seq_len"])}


def measured_growth(table) -> dict:
    """The runtime ratio of two measured lengths (medians), not the fit's extrapolation: a
    doubling (n, 2n) where the lengths hold one (the shortest such), else shortest to longest.
    ``factor`` is the length ratio: factor**2 is pure N**2, factor a constant cost per step."""
    ok = table[table["status"] == harness.OK].set_index("seq_len")["median_s"]
    lengths = sorted(int(n) for n in ok.index)
    pairs = [(n, 2 * n) for n in lengths if 2 * n in lengths] or [(lengths[0], lengths[-1])]
    short, long = pairs[0]
    return {"short": short, "long": long, "factor": long / short,
            "ratio": float(ok[long] / ok[short])}


def a_by_round(table):
    """(lowest, highest) fixed part a in ms, fitting each round's trials on their own (trial i
    of every length ran in round i); None where the rounds are not paired or too few."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    trials = [harness.trials(row) for _, row in ok.iterrows()]
    if len(trials) < 2 or len({len(t) for t in trials}) != 1 or len(trials[0]) < 2:
        return None
    fits = [analysis.linear_quadratic_fit(ok["seq_len"], times)[0] for times in zip(*trials)]
    return 1e3 * min(fits), 1e3 * max(fits)


def fit_lines(table) -> list:
    """The growth in the course's words: the measured ratio of two lengths, the fit's a and b
    (and why each earlier position costs 2b), how loosely a is pinned, and where the two terms
    cross (N = a/b)."""
    f, g = fit(table), measured_growth(table)
    k = g["factor"]
    what = "Doubling the length" if k == 2 else f"{k:g}x the length"
    lines = [f"{what} ({g['short']} -> {g['long']} tokens) multiplied the runtime by "
             f"{g['ratio']:.2f}x ({k * k:g}x is pure N², {k:g}x a constant cost per step)."]
    lines.append(f"Fit: a = {f['a_ms']:.2f} ms, b = {f['b_us']:.1f} µs. Step t costs about a + 2b·t, "
                 f"so N steps cost a·N + b·N²: a is what a step costs that does not grow with N, "
                 f"and each earlier position adds 2b = {2 * f['b_us']:.1f} µs to a step.")
    spread = a_by_round(table)
    pinned = f"a is a fitted intercept, loosely pinned by {len(f['lengths'])} lengths"
    if spread:
        pinned += f": fitted round by round it ranges {spread[0]:.1f}–{spread[1]:.1f} ms"
    lines.append(f"{pinned}; read it as about {f['a_ms']:.0f} ms, not as one measured step.")
    if f["b_us"] > 0 and f["a_ms"] > 0:
        cross = 1e3 * f["a_ms"] / f["b_us"]
        lines.append(f"The two terms are equal at N = a/b ≈ {cross:.0f} tokens: below it the part "
                     "that does not grow takes most of the time, above it the N² work (the table's "
                     "shares).")
    return lines


def quadratic_shares(table, judge: bool) -> pd.DataFrame:
    """Per length: the share of the time that the N**2 term accounts for, with its interval
    (rounds resampled whole; no interval under ``stats.MIN_TRIALS`` rounds or on a smoke run)."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    trials = [harness.trials(row) for _, row in ok.iterrows()]
    paired = len({len(t) for t in trials}) == 1
    out = []
    for n in ok["seq_len"]:
        share = stats.quadratic_share(ok["seq_len"], trials, n, paired=paired)
        interval = (judge and share.n >= stats.MIN_TRIALS and not math.isinf(share.low))
        out.append({"new tokens": int(n), "N² share %": round(100 * share.estimate),
                    "interval %": (f"{100 * share.low:.0f}\u2013{100 * share.high:.0f}"
                                   if interval else "not judged" if not judge
                                   else f"only {share.n} runs: too few to judge")})
    return pd.DataFrame(out)


def plot_per_step(ax, table, label="naive loop"):
    """Time per step against N (median, min-max bars) with the fitted a + b*N line and a, the
    part that does not grow, dotted: the per-step time grows linearly, so the total as N**2."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    n = ok["seq_len"].astype(float)
    per = 1e3 * ok["median_s"] / n
    ax.errorbar(n, per, yerr=[per - 1e3 * ok["min_s"] / n, 1e3 * ok["max_s"] / n - per],
                marker="o", capsize=3, linestyle="none", label=f"{label} (median, min-max)")
    f = fit(ok)
    grid = [0, float(n.max()) * 1.05]
    ax.plot(grid, [f["a_ms"] + f["b_us"] * 1e-3 * x for x in grid], "--", color="gray",
            label="fit: a + b·N")
    ax.axhline(f["a_ms"], color="#999999", linestyle=":", label=f"a = {f['a_ms']:.2f} ms (does not grow with N)")
    ax.set(xlabel="new tokens N", ylabel="ms per step (total ÷ N)", xlim=(0, grid[1]),
           title="Time per step grows with the sequence")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=9, loc="upper left")


def gains(table, candidate: str, baseline: str) -> pd.DataFrame:
    """Per length: the candidate's speedup over the baseline with its interval (for a plot)."""
    out = []
    for n in sorted(table["seq_len"].unique()):
        r = stats.row_speedup(table, candidate, baseline, seq_len=n)
        out.append({"seq_len": int(n), "speedup": r.estimate, "low": r.low, "high": r.high, "n": r.n})
    return pd.DataFrame(out)


def plot_gains(ax, table, candidate: str, baseline: str, judge: bool, labels=None):
    """The speedup against N; its interval as bars where the run can judge. ``labels`` renames
    the methods in the axis texts."""
    g = gains(table, candidate, baseline)
    bars = g["n"] >= stats.MIN_TRIALS
    if judge and bars.all():
        ax.errorbar(g["seq_len"], g["speedup"], yerr=[g["speedup"] - g["low"], g["high"] - g["speedup"]],
                    marker="o", capsize=3, label="speedup (interval)")
    else:
        ax.plot(g["seq_len"], g["speedup"], marker="o", label="speedup")
    ax.axhline(1, color="#999999", linestyle=":")
    candidate, baseline = ((labels or {}).get(m, m) for m in (candidate, baseline))
    ax.set(xlabel="new tokens N", ylabel=f"{baseline} time ÷ {candidate} time",
           title=f"Gain of {candidate} over {baseline}")
    ax.set_ylim(bottom=0)


def gain_growth(table, candidate: str, baseline: str, judge: bool) -> str:
    """Does the speedup grow from the shortest to the longest length? In the course's words."""
    values = sorted(table["seq_len"].unique())
    r = stats.row_growth(table, candidate, baseline, values[0], values[-1])
    if len(values) < 2 or r.n == 0:
        return "one length only: nothing to say about growth"
    where = f"at {values[-1]} tokens against {values[0]}"
    if not judge:
        return f"gain {where}: {r.estimate:.2f}x (smoke run: not a measurement)"
    if r.n < stats.MIN_TRIALS or math.isinf(r.low):
        return f"gain {where}: {r.estimate:.2f}x (only {r.n} runs: too few to judge)"
    span = f"({r.low:.2f}\u2013{r.high:.2f})"
    word = stats.verdict(r)
    if word == stats.FASTER:
        return f"the gain grows: {r.estimate:.2f}x larger {where} {span}"
    if word == stats.SLOWER:
        return f"the gain shrinks: {1 / r.estimate:.2f}x smaller {where} {span}"
    return f"can't tell on this machine whether the gain grows {where} {span}"


def per_step_growth(table, method: str, label: str) -> str:
    """How ``method``'s step grew from the shortest to the longest length, per generated token:
    the GPU's work and the wall clock (``budget.per_step``), and the part of the wall clock's
    growth that the GPU's work does not account for (time the GPU waited). Each length is timed
    in its own rounds, so that part may also hold the host's speed changing between lengths.
    Wall clock only where the run has no GPU numbers (a CPU run)."""
    lengths = sorted(table.loc[table["method"] == method, "seq_len"].unique())
    steps = [budget.per_step(table, [method], seq_len=n).iloc[0] for n in (lengths[0], lengths[-1])]
    (w0, g0), (w1, g1) = ((s["wall_ms"], s["gpu_ms"]) for s in steps)
    span = f"{lengths[0]} -> {lengths[-1]} tokens"
    if math.isnan(g0) or math.isnan(g1):
        return f"{label} per step, {span}: wall clock {w0:.2f} -> {w1:.2f} ms."
    text = (f"{label} per step, {span}: GPU work {g0:.2f} -> {g1:.2f} ms ({g1 - g0:+.2f}), "
            f"wall clock {w0:.2f} -> {w1:.2f} ms ({w1 - w0:+.2f})")
    rest = (w1 - w0) - (g1 - g0)
    if rest > 0.1 * abs(w1 - w0) and rest > 0.05:
        return (text + f"; the other {rest:.2f} ms is time the GPU waited: the host's share of the "
                "step grew (each length ran in its own rounds, so part of it may be the host's "
                "speed changing between them).")
    return text + "; the GPU's work accounts for the wall clock's change."


def same_loop_in_setup(table, method: str, label: str) -> str:
    """Notebook 00 times this KV-cache loop too ("loop A", one short length): its wall clock and
    GPU work per token against ``method``'s at the nearest length here, from 00's table in this
    run's folder. Equal GPU work with a different wall clock is host time: the same code at
    another moment of the host. Empty where 00's table is missing, from another device or batch,
    at no like length (a run's time per token includes its prefill's share), or without GPU
    numbers."""
    path = results.run_dir() / "data" / "00_setup.csv"
    if not path.exists():
        return ""
    setup = pd.read_csv(path)
    setup = setup[(setup["method"] == "loop A") & (setup["status"] == harness.OK)]
    here = table[(table["method"] == method) & (table["status"] == harness.OK)]
    if setup.empty or here.empty or "gpu_busy_s" not in setup or any(
            set(setup[c]) != set(here[c]) for c in ("device_name", "batch_size")):
        return ""
    n0 = int(setup["seq_len"].iloc[0])
    n = int(min(here["seq_len"], key=lambda x: abs(x - n0)))
    if not 0.75 <= n / n0 <= 1.33:  # per token includes the prefill's share: like lengths only
        return ""
    then = budget.per_step(setup, ["loop A"], seq_len=n0).iloc[0]
    now = budget.per_step(here, [method], seq_len=n).iloc[0]
    if any(math.isnan(v) for v in (then["gpu_ms"], now["gpu_ms"])):
        return ""
    text = (f"Notebook 00 timed the same loop, measured the same way, at {n0} tokens: "
            f"{then['wall_ms']:.2f} ms per step with {then['gpu_ms']:.2f} ms of GPU work, against "
            f"{now['wall_ms']:.2f} ms with {now['gpu_ms']:.2f} ms for the {label} here at {n} tokens")
    wall, gpu = then["wall_ms"] / now["wall_ms"], then["gpu_ms"] / now["gpu_ms"]
    if 0.9 <= wall <= 1.1:
        return text + ": about the same."
    if 0.9 <= gpu <= 1.1:
        return (text + f". The GPU's work agrees, so the {max(wall, 1 / wall):.1f}x gap is host "
                "time: the same Python, run at another moment of a host whose speed varies "
                "(notebook 00, idea 2).")
    return text + "."


def plot_memory(ax, table, device, methods):
    """Peak allocated memory against N per method (``methods``: name -> label), or a note where
    a CPU run has none."""
    if not str(device).startswith("cuda"):
        ax.text(0.5, 0.5, "no GPU memory on a CPU run", ha="center", va="center", fontsize=11)
        ax.set_axis_off()
        return
    for method, label in methods.items():
        part = table[(table["method"] == method) & (table["status"] == harness.OK)].sort_values("seq_len")
        ax.plot(part["seq_len"], part["peak_allocated_bytes"] / 2**30, marker="o", label=label)
    ax.set(xlabel="new tokens N", ylabel="GiB", title="Peak allocated memory")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=9)
