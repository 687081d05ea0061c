"""How a decode loop's time grows with the number of new tokens (notebooks 01 and 02).

The naive loop's step costs a part that does not grow with the sequence plus work on every
position: per step ``a + b*N`` on average, so N steps take ``a*N + b*N**2``, fitted to the
measured totals (the k-th step costs about ``a + 2b*k``: each new token adds 2b to every later
step, and the average step sits at k = N/2; the prompt's positions, recomputed every step, are in a). The host and the GPU work at the same time, so a is not the host's
time and b not the GPU's; the fit splits the wall clock by how it grows, not by who spends it.
These functions time a loop at several lengths, fit that model, and state it in the course's
words.
"""
from __future__ import annotations

import math

import pandas as pd

from . import analysis, budget, harness, stats
from .claims import QUADRUPLE_RANGE


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
    part that does not grow) and b (µs) in time = a*N + b*N**2: the average step costs a + b*N, and
    each new token adds 2b to every later step."""
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


def fit_lines(table) -> list:
    """The growth in the course's words: the measured ratio of two lengths, then the fit's a and
    b with the length N = a/b where the two terms are equal."""
    f, g = fit(table), measured_growth(table)
    k = g["factor"]
    what = "Doubling the length" if k == 2 else f"{k:g}x the length"
    lines = [f"{what} ({g['short']} -> {g['long']} tokens) multiplied the runtime by "
             f"{g['ratio']:.2f}x ({k * k:g}x is pure N², {k:g}x a constant cost per step)."]
    fitted = (f"Fit: a = {f['a_ms']:.2f} ms and b = {f['b_us']:.1f} µs: a run's average step costs "
              f"a + b·N, so N steps cost a·N + b·N² (each new token adds 2b = {2 * f['b_us']:.1f} µs "
              "to every later step)")
    if f["b_us"] > 0 and f["a_ms"] > 0:
        eq = 1e3 * f["a_ms"] / f["b_us"]
        fitted += f"; the two terms are equal at N = a/b ≈ {eq:.0f} tokens"
        if eq < min(f["lengths"]):
            fitted += ", below every length measured here: at all of them the N² term is the larger"
        elif eq > max(f["lengths"]):
            fitted += (", above every length measured here: at all of them the part that does not "
                       "grow is the larger")
        else:
            fitted += ", below it the part that does not grow takes most of the time"
    return lines + [fitted + "."]


def quadruples(table) -> str:
    """Does "doubling the length quadruples the time" hold here? The measured doubling against
    ``claims.QUADRUPLE_RANGE``'s low end, and from which N the fit reaches it: a doubling from N
    multiplies a*N + b*N**2 by 2(a + 2bN)/(a + bN), which reaches q (< 4) from N = (q-2)/(4-q)·a/b."""
    f, g = fit(table), measured_growth(table)
    q = QUADRUPLE_RANGE[0]
    holds = g["factor"] == 2 and g["ratio"] >= q
    text = (f"The article's \"doubling the length quadruples the time\" "
            f"{'holds' if holds else 'does not hold'} at these lengths "
            f"({g['short']} -> {g['long']} tokens: {g['ratio']:.2f}x)")
    if f["a_ms"] > 0 and f["b_us"] > 0:
        n_q = (q - 2) / (4 - q) * 1e3 * f["a_ms"] / f["b_us"]
        text += (f"; by the fit, a doubling from N reaches {q:g}x from N ≈ {n_q:.0f} tokens on, and "
                 "4x only in the limit, since a's part only doubles")
    return text + "."


def outside_bars(table) -> str:
    """Where the fitted per-step line a + b*N passes outside a length's min-max bar (the fit
    follows the totals, so the longest runs most closely)."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    f = fit(ok)
    out = [int(n) for n, lo, hi in zip(ok["seq_len"], ok["min_s"], ok["max_s"])
           if not lo / n * 1e3 <= f["a_ms"] + f["b_us"] * 1e-3 * n <= hi / n * 1e3]
    if not out:
        return "The fitted line passes within every length's min–max bar."
    return (f"The fitted line passes outside the min–max bar at {', '.join(map(str, out))} tokens: "
            "it is fitted to the total times of all lengths, not drawn through each point.")


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
    """How ``method``'s step grew with the length, per generated token: the GPU's work and the
    wall clock (``budget.per_step``) at every length. The GPU's work is said to account for the
    wall clock's change only where it does between every two neighbouring lengths: each length
    runs in its own rounds, so the host's speed can move the wall clock between them as much as
    the growth does, and then the line says so. Wall clock only without GPU numbers (a CPU run)."""
    lengths = sorted(table.loc[table["method"] == method, "seq_len"].unique())
    steps = [budget.per_step(table, [method], seq_len=n).iloc[0] for n in lengths]
    wall, gpu = [s["wall_ms"] for s in steps], [s["gpu_ms"] for s in steps]
    span = " -> ".join(map(str, lengths)) + " tokens"
    walls = " -> ".join(f"{w:.2f}" for w in wall)
    if any(math.isnan(g) for g in gpu):
        return f"{label} per step, {span}: wall clock {walls} ms."
    text = (f"{label} per step, {span}: GPU work {' -> '.join(f'{g:.2f}' for g in gpu)} ms, "
            f"wall clock {walls} ms")
    rest = [(w1 - w0) - (g1 - g0) for w0, w1, g0, g1 in zip(wall, wall[1:], gpu, gpu[1:])]
    if all(abs(r) <= max(0.1 * abs(w1 - w0), 0.05) for r, w0, w1 in zip(rest, wall, wall[1:])):
        return text + "; the GPU's work accounts for the wall clock's change."
    if all(r > 0 for r in rest):
        return (text + f"; the other {sum(rest):.2f} ms is time the GPU waited: the host's share of "
                "the step grew, or the host's speed changed between the lengths' rounds.")
    return (text + f"; between neighbouring lengths the wall clock moved up to "
            f"{max(map(abs, rest)):.2f} ms apart from the GPU's work, not always the same way: each "
            "length ran in its own rounds, and the host's speed between them moves the wall clock "
            "as much as the growth does.")


def host_crossing(table, naive: str = "naive", cached: str = "kv_cache") -> str:
    """Per length, the naive loop's GPU work per step against the cached loop's whole step (mostly
    host time where its GPU idles most of it): the gain can only grow once the naive loop's GPU
    work exceeds it. "From N tokens on" only where the difference grows with every length (each
    length runs in its own rounds, so the host's speed can move the cached step between them);
    else the lengths above and below are named without it. Empty without GPU numbers."""
    parts, above, diffs = [], [], []
    for n in sorted(table["seq_len"].unique()):
        step = budget.per_step(table, [naive, cached], seq_len=n).set_index("method")
        if len(step) < 2 or math.isnan(step.loc[naive, "gpu_ms"]):
            return ""
        g, w = step.loc[naive, "gpu_ms"], step.loc[cached, "wall_ms"]
        parts.append(f"{n} tokens {g:.2f} against {w:.2f} ms")
        diffs.append(g - w)
        if g > w:
            above.append(int(n))
    text = ("Per step, the naive loop's GPU work against the KV cache's step (mostly host time): "
            f"{'; '.join(parts)}")
    if not above:
        return text + ": the naive loop's GPU work stays below the KV cache's step at every length."
    if all(d1 > d0 for d0, d1 in zip(diffs, diffs[1:])):
        return (text + f": the naive loop's GPU work exceeds the KV cache's step from {above[0]} "
                "tokens on, where the host no longer hides it: there the saved GPU work can show "
                "in the gain.")
    below = [int(n) for n in sorted(table["seq_len"].unique()) if int(n) not in above]
    if not below:
        return text + ": the naive loop's GPU work exceeds the KV cache's step at every length."
    return (text + f": above it at {', '.join(map(str, above))} tokens, below it at "
            f"{', '.join(map(str, below))} tokens (the difference does not grow with every length, so "
            "no crossing length is claimed).")


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
