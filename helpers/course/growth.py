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

import numpy as np
import pandas as pd

from . import analysis, budget, harness, plotting, stats


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
    fit's intercept) and b (µs) in time = a*N + b*N**2: the average step costs a + b*N, and
    each new token adds 2b to every later step."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    a, b = analysis.linear_quadratic_fit(ok["seq_len"], ok["median_s"])
    return {"exponent": analysis.growth_exponent(ok["seq_len"], ok["median_s"]),
            "a_ms": 1e3 * a, "b_us": 1e6 * b, "lengths": list(ok["seq_len"])}


def plot_per_step(ax, table, label="naive loop"):
    """Time per step against N (median, min-max bars), the points joined: how the step grows,
    read from the data (the nineteenth review: the fitted a + b·N line missed the 100-token bar
    and its a, "the fit at N = 0", meant nothing to the reader). The x axis spans the lengths
    timed, each marked (the twenty-second review: two points at 50 and 100 left half the panel
    empty from 0). A dashed line from the shortest length shows the time per step if the total
    grew as N² (per step as N)."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    n = ok["seq_len"].astype(float)
    per = 1e3 * ok["median_s"] / n
    ax.errorbar(n, per, yerr=[per - 1e3 * ok["min_s"] / n, 1e3 * ok["max_s"] / n - per],
                marker="o", capsize=3, label=f"{label} (median, min-max)")
    if len(n) > 1:  # the twenty-seventh review: let the reader see "less than N²", not read it
        ax.plot(n, per.iloc[0] * n / n.iloc[0], "--", color="grey",
                label=f"if the total grew as N² (from {int(n.iloc[0])} tokens)")
    pad = 0.1 * (float(n.max() - n.min()) or float(n.max()))
    ax.set(xlabel="new tokens N", ylabel="ms per step (total ÷ N)", xticks=list(n),
           xlim=(float(n.min()) - pad, float(n.max()) + pad),
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
    the methods in the axis texts. A length the growth answer leaves out (``left_out``) is drawn
    hollow and off the line (the twenty-first review: a line through 02's out-of-line 75-token
    point drew a dip)."""
    g = gains(table, candidate, baseline)
    out = g["seq_len"].isin(left_out(table, candidate, baseline, judge))
    interval = judge and (g["n"] >= stats.MIN_TRIALS).all()
    for part, hollow in ((g[~out], False), (g[out], True)):
        if part.empty:
            continue
        style = dict(marker="o", color=plotting.PALETTE[0],
                     label="speedup (interval)" if interval else "speedup")
        if hollow:
            style.update(linestyle="none", markerfacecolor="white",
                         label="out of line: left out of the answer")
        if interval:
            ax.errorbar(part["seq_len"], part["speedup"], yerr=[part["speedup"] - part["low"],
                        part["high"] - part["speedup"]], capsize=3, **style)
        else:
            ax.plot(part["seq_len"], part["speedup"], **style)
    if out.any():
        ax.legend(fontsize=8, loc="lower right")
    ax.axhline(1, color="#999999", linestyle=":")
    candidate, baseline = ((labels or {}).get(m, m) for m in (candidate, baseline))
    ax.set(xlabel="new tokens N", ylabel=f"{baseline} time ÷ {candidate} time",
           title=f"Gain of {candidate} over {baseline}")
    # no ylim from 0 (round 37: 1.13 -> 1.26 squeezed into a sliver); the axis spans the gains
    # and the no-gain line


def gain_growth(table, candidate: str, baseline: str, judge: bool) -> str:
    """How the speedup changed from the shortest to the longest length, in the course's words.
    "Grows" (or "shrinks") with the length only where the interval of the longest against the
    shortest excludes 1 and the speedup rose (fell) from every length to the next; otherwise the
    measured change, and the lengths where it went the other way."""
    values = sorted(table["seq_len"].unique())
    r = stats.row_growth(table, candidate, baseline, values[0], values[-1])
    if len(values) < 2 or r.n == 0:
        return "one length only: nothing to say about growth"
    where = f"at {values[-1]} tokens against {values[0]}"
    if not judge:
        return f"gain {where}: {r.estimate:.2f}x (smoke run: not a measurement)"
    if r.n < stats.MIN_TRIALS or math.isinf(r.low):
        return f"gain {where}: {r.estimate:.2f}x (only {r.n} runs: too few to judge)"
    word = stats.verdict(r)
    if word == stats.NOISE:
        return (f"the gains at {values[0]} and {values[-1]} tokens: can't tell apart on this "
                f"machine ({r.low:.2f}\u2013{r.high:.2f})")
    rises = word == stats.FASTER
    estimate, low, high = (r.estimate, r.low, r.high) if rises else (1 / r.estimate, 1 / r.high,
                                                                      1 / r.low)
    digits = stats._digits(low, high)
    bounds = f"({low:.{digits}f}\u2013{high:.{digits}f})"
    at = (f"at {values[-1]} tokens it was {estimate:.{digits}f}x its size at {values[0]} tokens"
          if rises else
          f"at {values[-1]} tokens it was {estimate:.{digits}f}x smaller than at {values[0]} tokens")
    gain = gains(table, candidate, baseline).set_index("seq_len")["speedup"]
    against = [(int(a), int(b)) for a, b in zip(values, values[1:])
               if (gain[b] <= gain[a] if rises else gain[b] >= gain[a])]
    if not against:
        return f"the gain {'grows' if rises else 'shrinks'} with the length: {at} {bounds}"
    other = "; ".join(f"at {b} tokens it was {gain[b]:.2f}x, {'below' if rises else 'above'} the "
                      f"{gain[a]:.2f}x at {a} tokens" for a, b in against)
    return (f"{at.replace('it was', 'the gain was', 1)} {bounds}, but it did not "
            f"{'rise' if rises else 'fall'} at every length: {other}")


def retried(table, naive: str = "naive") -> list:
    """The lengths where the naive loop's allocator had to free its cache and retry in its timed
    runs (``alloc_retries``); empty where it never did or the table has no such column."""
    if "alloc_retries" not in table:
        return []
    ok = table[table["status"] == harness.OK]
    return sorted(int(n) for n in ok[(ok["method"] == naive) & (ok["alloc_retries"].fillna(0) > 0)]["seq_len"])


def retry_note(table, naive: str = "naive") -> str:
    """Notebook 02's guard: its lengths are chosen so that the naive loop's allocator never runs
    out of memory on an 80 GB card. Where it did anyway (a smaller GPU, a longer length), one
    sentence saying where and that it inflates the gain there; else empty."""
    hit = retried(table, naive)
    if not hit:
        return ""
    return (f"At {_tokens(hit)} the naive loop's allocator ran out of free GPU memory and had to "
            "free its cache and retry, which adds time to the naive runs only: the gain there is "
            "larger than the cache alone would give (notebook 03).")


def out_of_line(table, methods) -> dict:
    """The inner lengths where a method's step is out of line with its neighbours' (the
    twenty-first review: 02's 75-token KV step took 9.00 ms against 5.76 and 6.78 ms at 30 and
    120 tokens, with GPU work between theirs, and the growth answer rested on it): its median
    step (the median run ÷ its tokens) slower than every round at both neighbouring lengths, or
    faster than every one, while its GPU work per step lies between theirs (within
    ``budget.SAME_WORK``): the GPU's idle time, not its work, moved that point.
    ``{length: [method, ...]}``; empty without GPU work (a CPU run) or with fewer than 3 lengths."""
    values = sorted(int(n) for n in table["seq_len"].unique())
    found = {}
    for a, n, b in zip(values, values[1:], values[2:]):
        for m in methods:
            here, left, right = (_step(table, m, k) for k in (n, a, b))
            if None in (here, left, right):
                continue
            gpu = (left["gpu_ms"], right["gpu_ms"])
            works = min(gpu) * (1 - budget.SAME_WORK) <= here["gpu_ms"] <= max(gpu) * (1 + budget.SAME_WORK)
            rounds = left["rounds"] + right["rounds"]
            if works and not min(rounds) <= here["wall_ms"] <= max(rounds):
                found.setdefault(n, []).append(m)
    return found


def _step(table, method: str, n: int):
    """One method's step at one length: its median step and GPU work (ms, ``budget.per_step``)
    and every round's step; None where a number is missing."""
    row = budget.per_step(table, [method], seq_len=n)
    rounds = [1e3 * t / n for t in stats.method_trials(table, method, seq_len=n)]
    if len(row) != 1 or not rounds or row[["wall_ms", "gpu_ms"]].isna().any(axis=None):
        return None
    return {"wall_ms": row["wall_ms"].iloc[0], "gpu_ms": row["gpu_ms"].iloc[0], "rounds": rounds}


def left_out(table, candidate: str, baseline: str, judge: bool) -> list:
    """The lengths the growth answer leaves out: where either method is ``out_of_line`` (none on
    a smoke run)."""
    return sorted(out_of_line(table, [baseline, candidate])) if judge else []


def out_of_line_line(table, candidate: str, baseline: str, judge: bool, labels=None) -> str:
    """Notebook 02: one sentence per length ``left_out``, read from the data (each out-of-line
    loop's step against every round at the neighbouring lengths, its GPU work against theirs);
    empty where there is none."""
    labels = labels or {}
    values = sorted(int(n) for n in table["seq_len"].unique())
    found = out_of_line(table, [baseline, candidate]) if judge else {}
    lines = []
    for n, methods in sorted(found.items()):
        a, b = values[values.index(n) - 1], values[values.index(n) + 1]
        read = {m: _out_of_line_reading(table, m, n, a, b) for m in methods}
        words = {r["word"] for r in read.values()}
        if len(methods) == 2 and len(words) == 1:  # both loops, the same way: one clause
            name = lambda m: labels.get(m, m)  # noqa: E731
            said = ("both loops' steps were out of line: "
                    + stats.listed([f"{name(m)} {r['wall']}" for m, r in read.items()], " ms")
                    + f", each {words.pop()} than every round of its loop at {a} and {b} tokens ("
                    + next(iter(read.values()))["bound_word"] + " "
                    + stats.listed([r["bound"] for r in read.values()], " ms")
                    + "), while each loop's GPU work, "
                    + stats.listed([r["gpu"] for r in read.values()], " ms")
                    + ", lay between its own at those lengths")
        else:
            said = "; ".join(
                f"the {labels.get(m, m)} loop's step was out of line: {r['wall']} ms, {r['word']} "
                f"than every round at {a} and {b} tokens ({r['bound_word']} {r['bound']} ms), while "
                f"its GPU work, {r['gpu']} ms, lay between theirs ({r['gpu_a']} and {r['gpu_b']} ms)"
                for m, r in read.items())
        lines.append(f"At {n} tokens {said}. The GPU's idle time, not its work, moved this point, "
                     f"so the answer below leaves {n} tokens out.")
    return "\n".join(lines)


def _out_of_line_reading(table, method: str, n: int, a: int, b: int) -> dict:
    """The printed numbers of one out-of-line step (``out_of_line_line``)."""
    here, left, right = (_step(table, method, k) for k in (n, a, b))
    rounds = left["rounds"] + right["rounds"]
    slower = here["wall_ms"] > max(rounds)
    return {"wall": f"{here['wall_ms']:.2f}", "word": "slower" if slower else "faster",
            "bound_word": "at most" if slower else "at least",
            "bound": f"{max(rounds) if slower else min(rounds):.2f}", "gpu": f"{here['gpu_ms']:.2f}",
            "gpu_a": f"{left['gpu_ms']:.2f}", "gpu_b": f"{right['gpu_ms']:.2f}"}


def _step_up(table, candidate: str, baseline: str, a: int, b: int) -> str:
    """One step up in length, read from the rounds (``stats.row_growth`` of the gain at ``b``
    against the gain at ``a``): "grew" or "fell" where the run tells the two gains apart and the
    printed gains move the same way, else "" (this run can't tell)."""
    r = stats.row_growth(table, candidate, baseline, a, b)
    if r.n < stats.MIN_TRIALS or math.isinf(r.low) or math.isinf(r.high):
        return ""
    gain = gains(table, candidate, baseline).set_index("seq_len")["speedup"]
    ga, gb = round(float(gain[a]), 2), round(float(gain[b]), 2)
    word = stats.verdict(r)
    if word == stats.FASTER and gb > ga:
        return "grew"
    if word == stats.SLOWER and gb < ga:
        return "fell"
    return ""


def growth_line(table, candidate: str, baseline: str, judge: bool) -> str:
    """Notebook 02's answer to "does the gain grow with the length?", one clause per step up in
    length, each with the two gains (the twenty-fifth review: "Not shown on this run" beside a
    gain that clearly rose from 30 to 75 tokens, decided by the longest length against the
    shortest alone, and a ratio of two gains with its range read as jargon): where it grew, where
    it fell and where this run can't tell the two gains apart; over the whole range too where the
    steps alone did not tell it. The lengths ``left_out`` (said by ``out_of_line_line``) are named
    in the question and enter nothing. A smoke run or too few rounds: ``gain_growth``."""
    out = left_out(table, candidate, baseline, judge)
    ask = "Does the gain grow with the length" + (f" ({_tokens(out)} left out)?" if out else "?")
    table = table[~table["seq_len"].isin(out)]
    values = sorted(int(n) for n in table["seq_len"].unique())
    few = len(values) < 2 or any(stats.row_growth(table, candidate, baseline, a, b).n
                                 < stats.MIN_TRIALS for a, b in zip(values, values[1:]))
    if not judge or few:
        said = gain_growth(table, candidate, baseline, judge)
        return f"Growth: {said[0].upper()}{said[1:]}."
    gain = gains(table, candidate, baseline).set_index("seq_len")["speedup"]
    steps = [(a, b, _step_up(table, candidate, baseline, a, b)) for a, b in zip(values, values[1:])]
    words = {word for _, _, word in steps}
    whole = _step_up(table, candidate, baseline, values[0], values[-1])
    # every step alike, and the whole range too (round 30: ``growth_ratio_line`` prints the whole
    # range's verdict, which "No clear change" at every step must not contradict)
    if len(words) == 1 and (len(steps) == 1 or whole in words):
        listed = stats.listed([f"{gain[n]:.2f}x at {n}" for n in values], " tokens")
        every = " at every step" if len(steps) > 1 else ""
        head = {"grew": f"Yes: it grew{every},", "fell": f"No: it shrank{every},",
                "": "No clear change:"}[words.pop()]
        return f"{ask} {head} {listed}."
    clauses = [f"from {a} to {b} tokens it {word}, {gain[a]:.2f}x to {gain[b]:.2f}x" if word else
               f"from {a} to {b} tokens no clear change ({gain[a]:.2f}x and {gain[b]:.2f}x)"
               for a, b, word in steps]
    if whole:
        clauses.append(f"over the whole range it {whole}, {gain[values[0]]:.2f}x at {values[0]} "
                       f"tokens to {gain[values[-1]]:.2f}x at {values[-1]}")
    said = "; ".join(clauses)
    return f"{ask} {said[0].upper()}{said[1:]}."


def _whole_growth(table, candidate: str, baseline: str, judge: bool):
    """The gain's growth from the first length to the last, ``left_out`` lengths aside: (first,
    last, the later gain ÷ the earlier round by round, ``_step_up``'s word), or None with fewer
    than two lengths or too few rounds for a range. Read by ``growth_ratio_line`` (with its
    range) and ``answer_line`` (in words)."""
    table = table[~table["seq_len"].isin(left_out(table, candidate, baseline, judge))]
    values = sorted(int(n) for n in table["seq_len"].unique())
    if len(values) < 2:
        return None
    a, b = values[0], values[-1]
    r = stats.row_growth(table, candidate, baseline, a, b)
    if r.n < stats.MIN_TRIALS or math.isinf(r.low) or math.isinf(r.high):
        return None
    return a, b, r, _step_up(table, candidate, baseline, a, b)


def growth_ratio_line(table, candidate: str, baseline: str, judge: bool) -> str:
    """Notebook 02: the ratio that ``growth_line``'s answer over the whole range is read from
    (the later gain ÷ the earlier, round by round, first length to last, ``left_out`` lengths
    aside), with its range and its verdict in words (round 30: "No clear change" beside 1.23x and
    1.40x rested on a ratio never printed). One range only, whatever the lengths (02 prints at most
    five). Empty on a smoke run or with too few rounds."""
    if not judge or (found := _whole_growth(table, candidate, baseline, judge)) is None:
        return ""
    a, b, r, word = found
    digits = stats._digits(r.low, r.high)
    side = {stats.FASTER: "all above 1", stats.SLOWER: "all below 1"}.get(
        stats.verdict(r), "a range that holds 1")
    said = {"grew": "it grew", "fell": "it fell"}.get(word, "no clear change")
    if not word and side != "a range that holds 1":  # the printed gains moved the other way
        side += ", while the gains above moved the other way"
    return (f"The gain at {b} tokens \u00f7 the gain at {a}, round by round: {r.estimate:.{digits}f}x "
            f"({r.low:.{digits}f}\u2013{r.high:.{digits}f}), {side}: {said}.")


def length_line(table, candidate: str, baseline: str, judge: bool, n: int, labels=None) -> str:
    """Notebook 02's verdict at one length: ``stats.plain`` of the rounds' speedup, beside
    "can't tell apart" the speedup's estimate first, as notebook 00 prints it ("1.07x, can't tell
    apart on this machine (0.91–1.26)"), and the table's medians' ratio where it lies more than
    ``stats.MEDIANS_APART`` from the estimate or outside the range, as every other lesson's
    verdict names it (round 28b: at 20 tokens the table's 143.3 / 124.1 = 1.15x stood beside a
    printed 1.05x with no word; the nineteenth review's "its speedup" third gain stays out); on a
    second line, the round that moved the gain away from the medians (``_odd_round``)."""
    labels = labels or {}
    r = stats.row_speedup(table, candidate, baseline, seq_len=n)
    medians = stats.medians_ratio(*(stats.method_trials(table, m, seq_len=n)
                                    for m in (candidate, baseline)))
    said = stats.plain(r, judge, medians=medians)
    odd = ""
    if "the table's medians" in said and stats.verdict(r) != stats.SLOWER:  # round 31
        odd = _odd_round(table, candidate, baseline, n, r.estimate, medians, labels)
    if said.startswith("can't tell"):  # the course's one phrase (the verdicts tool reads it);
        # the growth line says "no clear change" for its other comparison (round 27)
        said = f"{r.estimate:.2f}x, {said}"
    return (f"{n:>4} tokens: {labels.get(candidate, candidate)} against "
            f"{labels.get(baseline, baseline)}: {said}" + (f"\n{'':13}{odd}" if odd else ""))


def _odd_round(table, candidate: str, baseline: str, n: int, estimate: float, medians: float,
               labels=None) -> str:
    """Where a length's gain lies apart from the table's medians, the round that moved it (the
    thirty-first review: "1.47x faster (1.39–1.61; the table's medians: 1.37x)" read as a
    contradiction, and 75 tokens' dip came from one slow round): the round whose ratio lies
    farthest from the rounds' middle, named as the slowest run (the table's max ms) of the loop it
    slowed, and what the other rounds read without it, in words as notebook 00's outlier line
    (the thirty-third review: "can't tell apart" at 120 tokens came from one round of 8, and the
    line never said so). No range. "" where that round is not that loop's slowest or would move
    the gain the other way from the medians."""
    cand, base = (np.asarray(stats.method_trials(table, m, seq_len=n), dtype=float)
                  for m in (candidate, baseline))
    if cand.size != base.size or cand.size < stats.MIN_TRIALS:
        return ""
    ratio = np.log(base / cand)
    i = int(np.argmax(np.abs(ratio - np.median(ratio))))
    slow, name = ((base, baseline) if base[i] / np.median(base) >= cand[i] / np.median(cand)
                  else (cand, candidate))
    if slow[i] != slow.max() or (ratio[i] > np.median(ratio)) != (estimate > medians):
        return ""
    keep = np.arange(cand.size) != i
    rest, left = stats.speedup(cand[keep], base[keep], paired=True), int(keep.sum())
    if left < stats.MIN_TRIALS:
        without = f"the other {left} read {rest.estimate:.2f}x (too few rounds for a verdict)"
    elif stats.verdict(rest) == stats.NOISE:
        either = " either" if stats.verdict(stats.speedup(cand, base, paired=True)) == stats.NOISE else ""
        without = f"the other {left} can't tell the loops apart{either}"
    else:
        without = f"the other {left} read {stats.short(rest)}"
    return (f"one round of {cand.size} (the slowest {(labels or {}).get(name, name)} run) read "
            f"{math.exp(ratio[i]):.2f}x; without it, {without}")


def gains_note(table, candidate: str, baseline: str, judge: bool, labels=None) -> str:
    """Notebook 02's line above its gains: what a gain and its range are, in plain words (the
    twenty-fourth review: "their typical ratio" defined nothing, the brackets not at all). The
    table's medians are named beside the per-step times they give (``pace_lines``) and, where
    their ratio lies apart from the gain, in that length's line (``length_line``).
    Empty on a smoke run."""
    if not judge:
        return ""
    labels = labels or {}
    cand, base = labels.get(candidate, candidate), labels.get(baseline, baseline)
    said = (f"A gain is {base} time \u00f7 {cand} time (the right panel). Each round times both "
            "loops back to back; the gain is the average of the rounds' ratios")
    ranged = any(stats.row_speedup(table, candidate, baseline, seq_len=n).n >= stats.MIN_TRIALS
                 for n in table["seq_len"].unique())  # brackets print only from enough rounds
    return said + (", and the range in brackets holds the gains these rounds are consistent with "
                   "(notebook 00)." if ranged else ".")


def pace_lines(table, candidate: str, baseline: str, labels=None) -> list:
    """Notebook 02's step budget read at every length, not one: both loops' GPU work per step
    (the nineteenth review: the lesson's evidence, "2.1x or more", was never printed), their wall
    clock per step with the GPU's idle share of it, and the GPU-work cut against the wall clock's,
    with whether the baseline's GPU idled too (both loops wait on the host) and who sets the
    candidate's pace; last, the lesson's "why is the gain not larger?" in one line of these
    numbers (``_why_line``). Empty without GPU work (a CPU run)."""
    labels = labels or {}
    cand, base = labels.get(candidate, candidate), labels.get(baseline, baseline)
    values = sorted(int(n) for n in table["seq_len"].unique())
    rows = {}
    for n in values:
        step = budget.per_step(table, [baseline, candidate], seq_len=n).set_index("method")
        if len(step) != 2 or step["gpu_ms"].isna().any() or (step["wall_ms"] <= 0).any():
            return []
        rows[n] = step
    idle = {m: [100 * rows[n].loc[m, "idle_ms"] / rows[n].loc[m, "wall_ms"] for n in values]
            for m in (candidate, baseline)}
    # the cut from the table's unrounded GPU work (round 37: 2.07x from the printed 2.65 / 1.28
    # where the table gives 0.07964 / 0.03832 = 2.08x)
    cut = [float(rows[n].loc[baseline, "gpu_ms"] / rows[n].loc[candidate, "gpu_ms"]) for n in values]
    ms = lambda m, col: stats.listed([f"{rows[n].loc[m, col]:.2f}" for n in values], " ms")
    pct = lambda m: stats.listed([f"{i:.0f}%" for i in idle[m]])
    lines = [f"Per step (a run's total \u00f7 its tokens, the prefill included) at {_tokens(values)}, "
             f"the GPU's work: {base} {ms(baseline, 'gpu_ms')}; {cand} {ms(candidate, 'gpu_ms')}.",
             f"The wall clock per step (the table's medians \u00f7 the tokens): {base} "
             f"{ms(baseline, 'wall_ms')}, the GPU idle {pct(baseline)} of it; {cand} "
             f"{ms(candidate, 'wall_ms')}, idle {pct(candidate)}."
             + _split_medians(table, values, {candidate: cand, baseline: f"{base} loop"})]
    if host := _host_line(rows, values, candidate, baseline, cand, base):
        lines.append(host)
    # the run's cut is the rounds' gain, the lesson's one answer, named as what it divides (round
    # 27b: "the wall clock" beside the medians' 9.92 and 8.67 ms read as 1.14x) (the 24th review:
    # "fell at most 1.26x" from the medians beside "1.32x faster" read as a contradiction); every
    # cut from the printed values (2.83 / 1.35 = 2.10, never floored to "2.09x or more")
    gain = [stats.row_speedup(table, candidate, baseline, seq_len=n).estimate for n in values]
    if min(cut) > 1:  # the gains are printed once, above; the lesson's one "far below the cut"
        but, only = ("but", "only ") if max(gain) < min(cut) else ("and", "")
        said = (f"The cache cut the GPU's work per step {stats.listed([f'{c:.2f}x' for c in cut])}, "
                f"{but} a whole run {only}by the gains above ({base} \u00f7 {cand} run time, round "
                "by round).")
    else:
        said = "The cache did not cut the GPU's work per step at every length."
    # no "the host sets the pace": the lesson does not measure the host (the twenty-eighth review)
    return lines + [said, _why_line(rows, values, candidate, baseline, cand, base, table)]


def _why_line(rows, values, candidate, baseline, cand: str, base: str, table=None) -> str:
    """The lesson's "why is the gain not larger?" in printed numbers: whether most of the
    candidate's step lay outside the GPU's work (that work is printed once, above), then that
    time (wall less GPU work) at the shortest and longest length, in the median runs and the
    fastest, beside the baseline's; where both of the
    candidate's grew (by more than ``budget.SAME_WORK``), said plainly to be time that grew
    with the length where this lesson does not measure what it is (the twenty-eighth review: 4.26 -> 7.06
    ms, 3.92 -> 5.67 ms in the fastest runs, was put down to "the host's, or a slow round"),
    with which of the baseline's two grew."""
    shown = lambda m, col: [round(float(rows[n].loc[m, col]), 2) for n in values]  # noqa: E731
    span = lambda xs: (f"{min(xs):.2f}" if f"{min(xs):.2f}" == f"{max(xs):.2f}"  # noqa: E731
                       else f"{min(xs):.2f} to {max(xs):.2f}") + " ms"
    gpu = shown(candidate, "gpu_ms")
    idle = [round(w - g, 2) for w, g in zip(shown(candidate, "wall_ms"), gpu)]
    most = "most" if all(g < i for g, i in zip(gpu, idle)) else "part"
    at = "" if len(values) > 1 else f"at {values[0]} tokens "
    # the GPU's work per step is printed once, in the first line (round 28c: three times)
    said = f"Why the gain is not larger: {at}{most} of the {cand}'s step was time outside the GPU's work"
    if len(values) < 2 or table is None:
        return f"{said}, {span(idle)}."
    a, b = values[0], values[-1]

    def outside(m):  # (median, fastest run) per step less the GPU's work, at a and at b
        out = []
        for n in (a, b):
            row = table[(table["method"] == m) & (table["seq_len"] == n)].iloc[0]
            g = round(float(rows[n].loc[m, "gpu_ms"]), 2)
            out.append((round(float(rows[n].loc[m, "wall_ms"]), 2) - g,
                        round(1e3 * float(row["min_s"]) / n, 2) - g))
        return out

    (c_med_a, c_min_a), (c_med_b, c_min_b) = outside(candidate)
    (n_med_a, n_min_a), (n_med_b, n_min_b) = outside(baseline)
    said += (f", from {a} to {b} tokens {c_med_a:.2f} \u2192 {c_med_b:.2f} ms (in its fastest run "
             f"{c_min_a:.2f} \u2192 {c_min_b:.2f} ms)")
    # round 30: one loop per sentence (the review needed three readings to pair each number
    # with its loop and length); the baseline's said as it was, median and fastest apart (round
    # 29: "which the naive loop does not show" beside its medians' 4.08 -> 5.66 ms)
    rose = lambda x, y: _moved(x, y) == "grew"  # noqa: E731
    theirs = {(True, True): "grew too", (True, False): "grew only in its median runs",
              (False, True): "grew only in its fastest run", (False, False): "did not grow"}[
        (rose(n_med_a, n_med_b), rose(n_min_a, n_min_b))]
    base_said = (f"The {base} loop's time outside its GPU's work {theirs}: {n_med_a:.2f} \u2192 "
                 f"{n_med_b:.2f} ms (fastest run {n_min_a:.2f} \u2192 {n_min_b:.2f} ms).")
    if rose(c_med_a, c_med_b) and rose(c_min_a, c_min_b):
        # round 33: "a cost that grows ..., even in its fastest run, which this lesson does not
        # measure" left the reader asking what "which" meant: two plain clauses
        return (f"{said}. This time grew with the length, in its fastest run too; this lesson does "
                "not measure where it goes (notebook 03 counts one candidate: the allocator's trips "
                f"to the driver). {base_said}")
    # round 37: what it did, not "it did not grow in both its median and its fastest run"
    med, fast = _moved(c_med_a, c_med_b), _moved(c_min_a, c_min_b)
    did = (f"it {med} in its median and its fastest run alike" if med == fast
           else f"it {med} in its median and {fast} in its fastest run")
    return f"{said}; {did}, so this run shows no cost that grows with the length. {base_said}"


def _moved(before: float, after: float) -> str:
    """"grew", "fell" or "stayed about the same" (within ``budget.SAME_WORK``)."""
    if after > before * (1 + budget.SAME_WORK):
        return "grew"
    return "fell" if after < before * (1 - budget.SAME_WORK) else "stayed about the same"


def _split_medians(table, values, names) -> str:
    """Where a loop's median run lies between its runs, no run within ``budget.SAME_WORK`` of
    it: " " and one sentence per such length with each such loop's (``names``: method -> name)
    faster and slower runs per step (round 37: 02's 75-token KV median, 9.67 ms, lay between runs of 7.27 to 7.60 and 11.75 to
    12.29 ms; the medians' gain, 1.04x, came from that gap); "" where every median is near a run."""
    said = []
    for n in values:
        parts = []
        for m, name in names.items():
            runs = 1e3 * np.asarray(stats.method_trials(table, m, seq_len=n), dtype=float) / n
            mid = float(np.median(runs)) if runs.size > 1 else 0.0
            if runs.size < 2 or np.abs(runs - mid).min() <= budget.SAME_WORK * mid:
                continue
            low, high = runs[runs < mid], runs[runs > mid]
            span = lambda x: f"{x.min():.2f}" + (f" to {x.max():.2f}" if x.size > 1 else "")  # noqa: E731
            parts.append(f"the {name}'s {'runs took ' if not parts else ''}{span(low)} or "
                         f"{span(high)} ms{' per step' if not parts else ''}")
        if parts:
            each = "each median lies" if len(parts) > 1 else "the median lies"
            said.append(f"At {n} tokens no run came near the median step printed here: "
                        f"{', '.join(parts)}, and {each} between the two.")
    return "".join(" " + line for line in said)


def _host_line(rows, values, candidate, baseline, cand: str, base: str) -> str:
    """Whether the host held both loops up (round 37: the lesson never said so in one sentence):
    the baseline where its wall clock per step did not grow from the first length to the last
    while its GPU work grew, the candidate where its GPU sat idle at least
    ``budget.HOST_PACE_PCT`` of every step ("most"). Where the baseline's did not hold, what its
    wall clock and GPU work did; "" with one length."""
    if len(values) < 2:
        return ""
    a, b = values[0], values[-1]
    at = lambda n, m, col: float(rows[n].loc[m, col])  # noqa: E731
    wall, work = (_moved(at(a, baseline, c), at(b, baseline, c)) for c in ("wall_ms", "gpu_ms"))
    times = lambda col: f"{at(b, baseline, col) / at(a, baseline, col):.2f}x"  # noqa: E731
    idle = min(100 * at(n, candidate, "idle_ms") / at(n, candidate, "wall_ms") for n in values)
    held = {base: wall != "grew" and work == "grew", cand: round(idle) >= budget.HOST_PACE_PCT}
    said = []
    if held[base]:
        said.append(f"from {a} to {b} tokens the {base} loop's wall clock per step {wall} while its "
                    f"GPU work grew {times('gpu_ms')} (its cost that grows with the length shows "
                    "only in the GPU's work)")
    if held[cand]:
        whose = f"the {cand}'s" if held[base] else "its"
        said.append(f"{whose} GPU sat idle for most of every step")
    who = ("Both loops were" if all(held.values()) else
           f"The {base} loop was" if held[base] else f"The {cand} was")
    line = f"{who} held up by the host, not the GPU: {'; '.join(said)}." if said else ""
    if not held[base]:  # what the baseline did instead
        moved = lambda word, col: f"{word} {times(col)}" if word == "grew" else word  # noqa: E731
        line += (f" From {a} to {b} tokens the {base} loop's wall clock per step "
                 f"{moved(wall, 'wall_ms')} and its GPU work {moved(work, 'gpu_ms')}.")
    return line.strip()


def _tokens(lengths) -> str:
    """"50 and 100 tokens", "200 tokens", "50, 100 and 200 tokens"."""
    return stats.listed([int(n) for n in lengths], " tokens")


def plot_memory(ax, table, device, methods):
    """Peak allocated (solid) and peak reserved (dashed, where the table has it) memory against
    N per method (``methods``: name -> label), or a note where a CPU run has none."""
    if not str(device).startswith("cuda"):
        ax.text(0.5, 0.5, "no GPU memory on a CPU run", ha="center", va="center", fontsize=11)
        ax.set_axis_off()
        return
    for method, label in methods.items():
        part = table[(table["method"] == method) & (table["status"] == harness.OK)].sort_values("seq_len")
        line, = ax.plot(part["seq_len"], part["peak_allocated_bytes"] / 2**30, marker="o",
                        label=f"{label}, allocated")
        if "peak_reserved_bytes" in part:
            ax.plot(part["seq_len"], part["peak_reserved_bytes"] / 2**30, marker="s", linestyle="--",
                    color=line.get_color(), label=f"{label}, reserved")
    ax.set(xlabel="new tokens N", ylabel="GiB", title="Peak memory: allocated and reserved")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=9)


def answer_line(table, candidate: str, baseline: str, judge: bool, labels=None) -> str:
    """Notebook 02's answer in one clause for its summary (the twenty-eighth review: the lengths
    where the KV cache was clearly faster were left for the reader to work out): the gains'
    span, then the lengths where the candidate was faster, slower, or can't be told apart from
    the baseline; empty on a smoke run or where a length has too few rounds to judge. Then, in
    words, whether the gain grew from the first length to the last (round 32: the one line left
    the lesson's second question out), as ``growth_ratio_line`` reads it, without its range."""
    if not judge:
        return ""
    labels = labels or {}
    cand, base = labels.get(candidate, candidate), labels.get(baseline, baseline)
    values = sorted(int(n) for n in table["seq_len"].unique())
    found = {stats.FASTER: [], stats.SLOWER: [], stats.NOISE: []}
    gain = []
    for n in values:
        r = stats.row_speedup(table, candidate, baseline, seq_len=n)
        if r.n < stats.MIN_TRIALS or math.isinf(r.low) or math.isinf(r.high):
            return ""
        found[stats.verdict(r)].append(n)
        gain.append(r.estimate)
    span = (f"{min(gain):.2f}x" if f"{min(gain):.2f}" == f"{max(gain):.2f}"
            else f"{min(gain):.2f}x to {max(gain):.2f}x")
    every = lambda ns: "at every length" if len(ns) == len(values) else f"at {_tokens(ns)}"  # noqa: E731
    parts = [f"{cand} was {word} than {base} {every(found[word])}"
             for word in (stats.FASTER, stats.SLOWER) if found[word]]
    if found[stats.NOISE]:
        parts.append(f"{every(found[stats.NOISE])} can't tell apart on this machine")
    said = f"the gain was {span}: " + "; ".join(parts)
    if (found := _whole_growth(table, candidate, baseline, judge)) is not None:
        a, b, _, word = found
        grew = {"grew": "grew", "fell": "shrank"}.get(word, "neither clearly grew nor shrank")
        said += f"; from {a} to {b} tokens the gain {grew}"
    return said


def closing_line(table, candidate: str, baseline: str, judge: bool, floor_ms: float,
                 labels=None) -> str:
    """Notebook 02's "In one line": ``answer_line``, then the candidate's step at the longest
    length (the table's median run ÷ its tokens, its fastest and slowest runs likewise) and how
    many times the ``floor_ms`` it takes. A smoke run, or one without the GPU's work, points to
    the published run instead (round 34: the f-strings out of the lesson's sight)."""
    at = int(table["seq_len"].max())
    steps = budget.per_step(table, [baseline, candidate], seq_len=at, floor=floor_ms)
    if not (judge and steps["gpu_ms"].notna().all()):
        return "In one line: the published GPU run above holds this run's answer (smoke run)."
    kv_step = steps.set_index("method").loc[candidate]
    kv_runs = table[(table["method"] == candidate) & (table["seq_len"] == at)].iloc[0]
    said = answer_line(table, candidate, baseline, judge, labels)
    return (f"In one line: {said}. At {at} tokens a KV step takes {kv_step['wall_ms']:.2f} ms (its runs "
            f"{1e3 * kv_runs['min_s'] / at:.2f} to {1e3 * kv_runs['max_s'] / at:.2f} ms), "
            f"{kv_step['wall_ms'] / kv_step['floor_ms']:.0f}x the floor ({kv_step['floor_ms']:.3g} ms).")
