"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and how far apart rounds of the same code lie; and notebook 01's
answer (the measured growth against pure N² growth, each run split into the GPU's work and its
idle time) and what its idle time holds."""
from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd

from . import floor as _floor
from . import budget, harness, stats
from ..model import parameter_bytes


def rounds(table, a: str, b: str) -> pd.DataFrame:
    """One row per round of ``harness.compare`` for methods ``a`` and ``b`` (in that order in
    the call, so round 0 ran A then B, round 1 B then A, ...): both times in ms and their
    ratio A / B (above 1: B was faster in that round). Unrounded (the notebook rounds what it
    shows), so the geometric mean of ``A / B`` that notebook 00 computes in view is the estimate
    its verdict line prints."""
    ta, tb = (np.asarray(stats.method_trials(table, m)) * 1e3 for m in (a, b))
    n = min(len(ta), len(tb))
    return pd.DataFrame({"round": range(1, n + 1),
                         "order": ["A B" if r % 2 == 0 else "B A" for r in range(n)],
                         "A ms": ta[:n], "B ms": tb[:n], "A / B": ta[:n] / tb[:n]})


def floor_reading(model, device, batch_size, prompt_len, new_tokens, floor_ms) -> str:
    """The floor as bytes over bandwidth, on average over the run's steps, in two lines, e.g.
    "0.196 ms on average over the run's 40 steps = 582 MB / 2.97 TB/s measured." and "The 582 MB:
    498 MB of weights and 84 MB of keys and values (35.5 positions on average; 55 at the last
    step, 130 MB)" (round 28c: one line of about ten numbers, split as the review asked): the bytes a
    step reads (``budget.floor_ms``'s weights and average keys and values), the cache at the
    last step for comparison, and the copy bandwidth that floor was divided by
    (``budget.bandwidth``, the same measurement)."""
    if not floor_ms > 0:
        return "no floor on a CPU run"
    kv = _floor.kv_bytes_per_step(model.config, batch_size, prompt_len, new_tokens)
    last = prompt_len + new_tokens - 1  # positions the last step attends to
    kv_last = _floor.kv_bytes_per_step(model.config, batch_size, last, 1)
    mean = prompt_len + (new_tokens - 1) / 2
    weights = parameter_bytes(model)
    return (f"{floor_ms:.3f} ms on average over the run's {new_tokens} steps (prefill included) = "
            f"{(weights + kv) / 1e6:.0f} MB / {budget.bandwidth(device) / 1e12:.2f} TB/s measured.\n"
            f"The {(weights + kv) / 1e6:.0f} MB: {weights / 1e6:.0f} MB of weights and {kv / 1e6:.0f} MB "
            f"of keys and values ({mean:g} positions on average; {last} at the last step, "
            f"{kv_last / 1e6:.0f} MB)")


# Notebook 00: a run is read as slow or fast where it lies this far from the median of all runs
OFF = 0.10


def panel(by_round) -> str:
    """Notebook 00's right panel read round by round, ahead of ``reach`` (round 37: the lesson's
    list of what to look for named a slow spell and a cost of running first, while the reviewed
    run's two largest events were one loop alone slow inside a round, and no line said what
    happened in the rounds it named): against the median of all runs, each round with a run more
    than ``OFF`` from it, as both loops slow (or fast) together or one loop alone. No ratios and
    no back-to-back runs: ``reach`` names the farthest rounds with both. No cause is claimed.
    Empty under 3 rounds."""
    if by_round is None or len(by_round) < 3:
        return ""
    a, b = (by_round[k].to_numpy(dtype=float) for k in ("A ms", "B ms"))
    names = by_round["round"].astype(int).to_numpy()
    mid = float(np.median(np.concatenate([a, b])))
    off = lambda t: "slow" if t > (1 + OFF) * mid else "fast" if t < (1 - OFF) * mid else ""
    of = f"{OFF:.0%} from the median of all {2 * len(a)} ({mid:.1f} ms)"
    items = []
    for i in range(len(a)):
        oa, ob = off(a[i]), off(b[i])
        if oa and oa == ob:
            items.append(f"round {names[i]}, both {oa}")
        elif oa and ob:
            items.append(f"round {names[i]}, A {oa} and B {ob}")
        elif oa or ob:
            items.append(f"round {names[i]}, {'A' if oa else 'B'} alone {oa or ob}")
    if not items:
        return f"In the right panel, no run lay over {of}: no slow spell."
    return f"In the right panel, runs over {of}: " + "; ".join(items) + "."


def reach(ratio, judge: bool, by_round=None) -> str:
    """What notebook 00's A/A comparison means for reading an A/B, from this run, in two lines.
    First the two rounds whose A / B lay farthest from 1, in round order (the twenty-fourth
    review: in the published run loop B was about 20% slower in rounds 1 and 2 and faster in all
    six later ones, and no line said so), with the range of the other rounds and what that means
    for later verdicts (round 34: one round as far from 1 as the farthest is no evidence alone);
    no cause is claimed, since the lesson measures none. Then, on its own line (round 32 joined it
    to the first; round 34 split it off again, the first line having grown), how often the loop
    that ran first took longer (``_first_place``). Where the interval told the identical loops apart, it says so
    last, naming the run farthest from its loop's median (``_outlier``). Where the two farthest rounds are neighbours and
    their slower loop ran last in the first and first in the second, it says the two slow runs were
    back to back (the twenty-eighth review, workshop: A alone slow in rounds 2 and 3, read against
    "moves A and B together"). Empty without an interval or rounds."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high) or by_round is None or len(by_round) < 3:
        return ""
    a, b = (by_round[k].to_numpy(dtype=float) for k in ("A ms", "B ms"))
    r, names = a / b, by_round["round"].astype(int).to_numpy()
    k = len(a)
    far = sorted(np.argsort(-np.abs(np.log(r)), kind="stable")[:2])  # farthest from 1
    rest = np.delete(r, far)
    named = " and ".join(f"{names[i]} ({r[i]:.2f}x)" for i in far)
    order = by_round["order"].astype(str).str[0].to_numpy() if "order" in by_round else None
    if all(r[far] < 1) or all(r[far] > 1):
        slow = "B" if r[far[0]] < 1 else "A"
        named += f", {slow} the slower in both"
        if order is not None and all(order[far] == slow):
            named += " and the one that ran first"
        ends = by_round["order"].astype(str).str[-1].to_numpy() if order is not None else None
        if order is not None and far[1] == far[0] + 1 and ends[far[0]] == slow \
                and order[far[1]] == slow:  # round 28b: one slow spell across a round boundary
            named += ", its two runs back to back"  # round 32: Idea 2's prose says which
    # round 32: the order count repeats none of the farthest rounds' ratios
    low, high = f"{rest.min():.2f}", f"{rest.max():.2f}"  # 6e28961-workshop: 0.99x and 0.99x
    spread = f"all at {low}x" if low == high else f"between {low}x and {high}x"
    # round 34: what that means for later verdicts, with the farthest round's ratio (the review
    # could not parse "so an A/B is read from all 8 rounds"); no range: the ranges stay as they were
    top = r[far][np.argmax(np.abs(np.log(r[far])))]
    first = (f"Round ratios A / B farthest from 1: rounds {named}; the other {k - 2} rounds lay "
             f"{spread}. So in a later lesson, one round as far from 1 as {top:.2f}x is no "
             f"evidence alone: a verdict reads all {k} rounds.")
    if 1 in names[far]:  # the twenty-sixth review: a slow round 1 beside the warm-up's claim
        first += (f"\nRound 1, the first after the warm-up, took {a[0]:.1f} ms (A) and {b[0]:.1f} ms "
                  f"(B), against medians of {np.median(a):.1f} and {np.median(b):.1f} ms.")
    if order is not None:  # round 34: on its own line again (the first line grew by the meaning)
        first += "\n" + _first_place(a, b, order)
    # the twenty-ninth review cut the line on how far the interval reaches either side of its
    # estimate (which speedup such rounds could see): premature at step 00; docs/method.md
    # says how to read it off the verdict line's range
    if stats.verdict(ratio) != stats.NOISE:  # round 30: name the run, not "close to 1"
        first += "\n" + _outlier(a, b, names)
    return first


def _outlier(a, b, names) -> str:
    """Notebook 00, where a run told its identical loops apart: what that means for later
    verdicts (the thirty-first review), in words as the verdict line; then the run farthest from
    its own loop's median and what the rounds say without its round (the thirtieth review:
    "1.190x slower (1.004–1.641)" came from one run of B at 110 ms against about 49, and the
    text called it "a verdict this close to 1"): the verdict in words where enough rounds remain,
    else the other rounds' A / B. No range: the lesson's ranges stay as they were. No cause is
    claimed. Round 32: one shorter line."""
    med = (float(np.median(a)), float(np.median(b)))
    off = np.abs(np.log(np.concatenate([a / med[0], b / med[1]])))
    i = int(np.argmax(off))
    loop, j = ("A", i) if i < len(a) else ("B", i - len(a))
    t = (a if loop == "A" else b)[j]
    keep = np.arange(len(a)) != j
    rest = stats.speedup(b[keep], a[keep], paired=True)  # A / B over the other rounds
    left = int(keep.sum())
    without = (f"the other {left} rounds read {stats.short(rest)}" if left >= stats.MIN_TRIALS else
               f"the other {left} rounds' A / B is {rest.estimate:.3f}x (too few rounds for a verdict)")
    alone = stats.plain(stats.speedup(b, a, paired=True)).split(" (")[0]  # as the verdict line
    return (f"This run told the identical loops apart ({alone}): in later lessons, a verdict about "
            f"that size may be noise. Without {loop}'s run in round {names[j]}, the farthest from "
            f"its loop's median ({t:.1f} ms against {med[0 if loop == 'A' else 1]:.1f}), {without}.")


def _first_place(a, b, order) -> str:
    """Notebook 00: in how many rounds the loop that ran first (or, where it took longer in fewer
    rounds, second) took longer than the other (the twenty-eighth review), and what that says.
    Where the count is about half (within one round of it), as chance gives, the run shows no cost
    of either position, said plainly (round 37: "4 of the 8 rounds; alternating the order keeps
    such a cost out" read as if there were one); else alternating the order keeps such a cost
    out of the estimate. No cause is claimed."""
    q = np.where(order == "A", a, b) / np.where(order == "A", b, a)
    k, longer, shorter = len(q), int(np.sum(q > 1)), int(np.sum(q < 1))
    # round 36: name the position that took longer in more rounds; at a tie, the first
    who, m = ("first", longer) if longer >= shorter else ("second", shorter)
    count = f"all {k}" if m == k else f"{m} of the {k}"
    if 2 * m - k <= 2:  # round 37: about half, as chance gives
        return (f"The loop that ran {who} took longer in {count} rounds, about half: this run "
                f"shows no cost of running {who}.")
    largely = "" if k % 2 == 0 else " largely"  # with an odd count, A went first once more
    return (f"The loop that ran {who} took longer in {count} rounds; alternating the order keeps "
            f"such a cost{largely} out of the estimate.")


def spread(by_round, n: int, gpu_ms: float) -> str:
    """Notebook 00: the budget's wall clock is one reading of a host and an allocator whose times vary (the
    sixteenth review: the budget read as one fixed fact beside runs of the same loop 1.9x apart):
    the same code's runs per step, fastest to slowest, and the GPU's idle share at both ends with
    the GPU's profiled work (the same kernels in every run), with who sets the pace there. Empty
    without two runs or without the GPU's work."""
    runs = by_round[["A ms", "B ms"]].to_numpy(dtype=float).ravel() / n if len(by_round) else []
    if len(runs) < 2 or not gpu_ms > 0:
        return ""
    fast, slow = float(np.min(runs)), float(np.max(runs))
    idle = [100 * max(t - gpu_ms, 0.0) / t for t in (fast, slow)]
    paces = [who_paces(i, why=False) for i in idle]
    # the twenty-ninth review: every timed run also fetches its memory from the driver, so the
    # spread is not the host's speed alone
    text = (f"The same code's {len(runs)} runs took {fast:.1f} to {slow:.1f} ms per step (host "
            "and allocator vary, not separated here: Idea 2's noise); the GPU idles "
            f"{idle[0]:.0f}% of the fastest run's step")
    if paces[0] == paces[1]:
        return text + f" and {idle[1]:.0f}% of the slowest's: {paces[0]} in every run."
    return text + f" ({paces[0]}) and {idle[1]:.0f}% of the slowest's ({paces[1]})."


def who_paces(idle_pct: float, why: bool = True) -> str:
    """Notebook 00's pace reading, ``budget.pace`` with its host qualified: in 00 every timed run
    fetches its memory from the driver anew, and the wait for it is not separated from the host's
    (the twenty-ninth review: "the host sets the pace" dropped that caveat)."""
    said = budget.pace(idle_pct, why=why)
    return (said.replace("the host sets", "the host and the allocator set", 1)
            .replace("host and GPU share", "host, allocator and GPU share", 1))


def with_estimate(said: str, ratio) -> str:
    """Notebook 00: a "can't tell apart" line leads with the rounds' estimate, so that where it
    sits in the interval shows ("1.03x, can't tell apart on this machine (0.97–1.09)"), and gives
    the table's medians as a bare A / B, like the estimate (the twenty-fourth review: "the table's
    medians: 1.01x faster" read as a second verdict beside "can't tell apart"); any other line as
    it is."""
    if not said.startswith("can't tell"):
        return said
    said = re.sub(r"(the table's medians: [\d.]+x)(?:, i\.e\. [\d.]+x)? ?(?:faster|slower)?\)",
                  r"\1)", said)
    return f"{ratio.estimate:.2f}x, {said}"


def _growth(table):
    """(short, long, Ratio of the long length's time to the short one's) for the first length
    whose double was measured, else the shortest and longest; None under two lengths."""
    ok = table[table["status"] == harness.OK]
    runs = {int(r["seq_len"]): harness.trials(r) for _, r in ok.iterrows()}
    lengths = sorted(runs)
    if len(lengths) < 2:
        return None
    pairs = [(n, 2 * n) for n in lengths if 2 * n in runs]
    n, m = pairs[0] if pairs else (lengths[0], lengths[-1])
    paired = len(runs[n]) == len(runs[m])
    return n, m, stats.speedup(runs[n], runs[m], paired=paired)


def _lead(n: int, m: int) -> str:
    r = m / n
    return (f"Doubling the length from {n} to {m} tokens multiplied the time by" if r == 2 else
            f"From {n} to {m} tokens ({r:.3g}x longer) the time grew")


def _against(ratio, r: float) -> str:
    pure = f"the {r * r:.3g}x of pure N² growth"
    return (f"less than {pure}" if ratio.high < r * r else
            f"more than {pure}" if ratio.low > r * r else f"can't tell apart from {pure}")


def doubling(table) -> str:
    """Notebook 01's answer: the article's claim that doubling the length roughly quadruples the
    runtime, against the measured growth from a length to its double (else from the shortest to
    the longest length, against the square of their ratio): the rounds' ratio with its interval,
    and whether it lies below, above or around pure N² growth. One number: the twenty-first
    review asked which of the medians' 2.99x and the rounds' 2.77x was the answer (00 says why
    the two can differ). The medians' growth, which ``growth_why`` splits, is named once, in its
    head (round 32: the thirty-first review read the two as competing answers)."""
    got = _growth(table)
    if got is None or math.isnan(got[2].estimate):
        return ""
    n, m, ratio = got
    r = m / n
    if ratio.n < stats.MIN_TRIALS or math.isinf(ratio.low) or math.isinf(ratio.high):
        return (f"{_lead(n, m)} {ratio.estimate:.2f}x (only {ratio.n} runs: too few to judge "
                f"against the {r * r:.3g}x of pure N² growth).")
    # round 32: one doubling factor here; the medians' growth is named once, in ``growth_why``'s
    # head, as what splits the run into work and idle time
    return (f"{_lead(n, m)} {ratio.estimate:.2f}x ({ratio.low:.2f}\u2013{ratio.high:.2f}), "
            f"{_against(ratio, r)}.")


def _split(table):
    """Per length, shortest first: the lengths, and the median run's GPU work (the profiled
    run's ``gpu_busy_s``) in ms per run; None unless every length has its GPU work."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    if len(ok) < 2 or "gpu_busy_s" not in ok:
        return None
    ns = [int(n) for n in ok["seq_len"]]
    work = [1e3 * float(g) for g in ok["gpu_busy_s"]]
    if not all(w > 0 for w in work):  # NaN too: a CPU run has no GPU work
        return None
    return ns, work


def _parts(table):
    """What ``growth_why`` and ``takeaway`` read, from a length n to its double m (``_growth``):
    the median run, the GPU's work and its idle time per run at both, in whole ms as printed
    (the idle time the rounded median minus the rounded work, so the printed parts add up), and
    their growth as divisions of those printed values; the rounds' ratio (``doubling``'s); the
    idle time per step at every length, from the unrounded median and work (round 37: 13.53 −
    8.52 printed 5.01 ms for an idle time of 5.004), and the idle share of each length's step;
    None without GPU work or without idle time at n."""
    got, split = _growth(table), _split(table)
    if got is None or split is None:
        return None
    n, m, _ = got
    ns, work = split
    i, j = ns.index(n), ns.index(m)
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    medians = [round(1e3 * float(t)) for t in ok["median_s"]]
    works = [round(w) for w in work]
    t, w = (medians[i], medians[j]), (works[i], works[j])
    idle = (t[0] - w[0], t[1] - w[1])
    if not idle[0] > 0:
        return None
    runs = [1e3 * float(t) for t in ok["median_s"]]
    per = [(t - g) / k for t, g, k in zip(runs, work, ns)]  # round 37: unrounded
    values = f"{stats.listed([f'{q:.2f}' for q in per], ' ms')} at {stats.listed(ns, ' tokens')}"
    return dict(n=n, m=m, ns=ns, medians=t, work=w, idle=idle, rounds=got[2].estimate,
                idle_step=(per[i], per[j]), per=per,
                grew=t[1] / t[0], work_grew=w[1] / w[0], idle_grew=idle[1] / idle[0],
                values=values, shares=[100 * (t - g) / t for t, g in zip(runs, work)])


def growth_why(table, prompt_len: int) -> str:
    """Notebook 01's reason, read from its own numbers, in short labelled lines (the twenty-fourth
    review: six ratios in one paragraph, and "about as N: per step it stayed about the same,
    about 2.8 ms" beside 1.55x and 3.24, 2.51 and 2.64 ms). The median run from a length to its
    double is the GPU's work (the profiled run) plus its idle time (the rest of the median); the
    lines state how each grew and the idle time per step at every length, with no judgement
    chosen by thresholds. The split needs one run per length, so it reads the table's medians,
    whose growth its head names, once (round 32). The idle times per run printed are the rounded
    median minus the rounded work, so the printed parts add up; those per step come from the
    unrounded values (round 37). Before the Sum line, which of the two reasons for growing
    less than N² weighs more in this run (``_larger_reason``, round 37). Empty without GPU work (a CPU
    run)."""
    p = _parts(table)
    if p is None:
        return ""
    n, m, r = p["n"], p["m"], p["m"] / p["n"]
    positions = lambda k: k * prompt_len + k * (k - 1) / 2  # steps 0 .. k-1 on prompt_len + t
    (t0, t1), (w0, w1), (i0, i1) = p["medians"], p["work"], p["idle"]
    grown, grew, work = p["grew"], p["idle_grew"], p["work_grew"]
    # round 35: the head says plainly that the split explains the median run's growth, which the
    # next line sets beside the answer's (the rounds')
    lines = [f"Why: the lines below split the median run into the GPU's work and its idle time; "
             f"from {n} to {m} tokens the median run went from {t0} to {t1} ms ({grown:.2f}x)."]
    lines += [x for x in [_rounds_against_medians(table, p)] if x]  # round 33: on its own line
    # the twenty-ninth review: four lines reconciled the rounds' answer with these medians before
    # any reason; round 32: this head names the medians' ratio, once, as what splits the run
    lines += [
             f"- Work: {w0} -> {w1} ms ({work:.2f}x). Step t works on {prompt_len} + t positions "
             f"(the prompt's included): {positions(m) / positions(n):.2f}x as many in all, not "
             f"{r * r:.3g}x.",
             f"- Idle: {i0} -> {i1} ms ({grew:.2f}x) while N grew {r:.3g}x; per step "
             f"{p['values']}, {stats.listed([f'{q:.0f}%' for q in p['shares']])} of the step"
             f"{_trend(p['per'])}."]
    lines.append(f"- Pace, by lesson 00's rule on these shares: {_paces(p['ns'], p['shares'])}.")
    if f"{grew:.2f}" != f"{work:.2f}":
        # the twenty-eighth review: "because the idle time grew less" restated wall = work + idle
        # as a cause; the twenty-ninth: "weighted by their shares" is shown as the arithmetic,
        # on the printed values ("=" where it gives the printed growth, else "≈" that growth)
        # round 35: the sum is always that of its printed terms ("0.52 × 3.36 + 0.48 × 0.93 ≈
        # 2.18" gave 2.19); the shares get a third decimal where two miss the median run's growth
        a, b, total, d = _sum_terms(w0 / t0, f"{work:.2f}", f"{grew:.2f}", f"{grown:.2f}")
        # round 37: first, which of the two reasons weighs more in this run
        lines.append("- Below N²: " + _larger_reason(r * r, positions(m) / positions(n), work, grown))
        lines.append(f"- Sum: the median run grew {'less' if grew < work else 'more'} "
                     f"than the work's {work:.2f}x: the work's and the idle time's growths "
                     f"weighted by their shares of the {n}-token run, {a:.{d}f} \u00d7 {work:.2f} + "
                     f"{b:.{d}f} \u00d7 {grew:.2f} = {total}.")
    return "\n".join(lines)


def _larger_reason(pure: float, positions: float, work: float, grown: float) -> str:
    """``growth_why``: which of the two reasons the lesson gives for growing less than N² weighs
    more in this run (the round-37 review: the lesson put the prompt term first, while the idle
    time took the run from the work's 3.37x to 2.33x and the prompt term the work only from 4x
    to 3.53x): each as the step it took, compared as ratios of the printed values. Where the idle
    time grew more than the work, it is no such reason."""
    p, w, g = (float(f"{x:.2f}") for x in (positions, work, grown))
    prompt = f"took the work from {pure:.3g}x to {p:.2f}x"
    if not g < w:
        return f"the idle time grew more than the work; the prompt term {prompt}."
    idle = f"took the median run from the work's {w:.2f}x to {g:.2f}x"
    if pure / p > w / g:
        return f"the prompt term weighs more here: it {prompt}; the idle time {idle}."
    return f"the idle time weighs more here: it {idle}; the prompt term {prompt}."


def _sum_terms(share: float, work: str, idle: str, grown: str):
    """``growth_why``'s Sum line: (work's share, idle's share, their weighted sum as printed,
    decimals of the shares), the sum computed exactly from the printed terms (half up, as by
    hand); the shares with two decimals, or three where two do not give ``grown``; where neither
    does (the growths are rounded too), two, and the sum of the printed terms "≈" ``grown``."""
    for d in (2, 3, 2):
        a = Decimal(repr(share)).quantize(Decimal(1).scaleb(-d), ROUND_HALF_UP)
        b = 1 - a
        total = str((a * Decimal(work) + b * Decimal(idle)).quantize(Decimal("0.01"), ROUND_HALF_UP))
        if total == grown:
            return float(a), float(b), total, d
    return float(a), float(b), f"{total} \u2248 {grown}", d


def _rounds_against_medians(table, p) -> str:
    """``growth_why``'s second head line, after the medians' growth (the thirty-third review: the answer's
    2.16x, from the rounds, stood above a split of the medians' 1.98x, and nothing said why the
    two differ): that the answer, which reads every round, is the one to carry forward (round 37),
    where the two print apart; where they differ
    by 5% or more, the run that the medians leave out and the rounds count, the one farthest
    from its length's median among those that move the rounds' ratio the way of the gap (in the
    H200 run of 4448ee4, the 100-token run of round 5: 848 ms against a median of 1198). No
    range: the lesson's ranges stay as they were."""
    said, grown = f"{p['rounds']:.2f}", f"{p['grew']:.2f}"
    if said == grown:
        return ""
    # round 37: which of the two to carry forward (the review could not tell)
    text = f"The answer's {said}x above reads every round instead: keep that one"
    gap = float(said) / float(grown) - 1
    if abs(gap) < 0.05:
        return text + "."
    ok = table[table["status"] == harness.OK]
    runs = {int(r["seq_len"]): np.asarray(harness.trials(r), dtype=float) * 1e3
            for _, r in ok.iterrows()}
    n, m = p["n"], p["m"]
    if len(runs[n]) != len(runs[m]):  # no rounds to name
        return text + f"; the two differ by {abs(gap):.0%}."
    best = None
    for k, sign in ((n, -1), (m, 1)):  # a fast short run or a slow long one raises a round's ratio
        off = np.log(runs[k] / np.median(runs[k]))
        for i, o in enumerate(off):
            if o * sign * gap > 0 and (best is None or abs(o) > best[0]):
                best = (abs(o), k, i)
    if best is None:
        return text + f"; the two differ by {abs(gap):.0%}."
    _, k, i = best
    ratio = runs[m][i] / runs[n][i]
    t, mid = runs[k][i], float(np.median(runs[k]))
    return (text + f"; the two differ by {abs(gap):.0%}: the rounds count every run, the medians "
            f"leave out the far ones; the farthest, the {k}-token length's "
            f"{'fastest' if t < mid else 'slowest'} run (round {i + 1}: {t:.0f} ms against a median "
            f"of {mid:.0f}), {'raised' if gap > 0 else 'lowered'} that round's ratio to {ratio:.2f}x.")


def _trend(per) -> str:
    """What the idle time per step did as the length grew, on its printed values (the
    thirty-first review: the lesson said what to look for and never said what was found; the
    values shrank in the reviewed run, grew on some workshop runs)."""
    said = [round(q, 2) for q in per]
    if len(said) < 2:
        return ""
    if all(x > y for x, y in zip(said, said[1:])):
        return ": it shrank as the length grew"
    if all(x < y for x, y in zip(said, said[1:])):
        return ": it grew with the length"
    if len(set(said)) == 1:
        return ": it stayed the same"
    return ": it did not move one way as the length grew"


def _paces(ns, shares) -> str:
    """Lesson 00's pace rule applied to each length's idle share (the twenty-eighth review: the
    rule was stated but never applied), lengths with the same reading grouped, in length order."""
    groups = []
    for n, share in zip(ns, shares):
        said = budget.pace(share, why=False)
        if groups and groups[-1][0] == said:
            groups[-1][1].append(n)
        else:
            groups.append((said, [n]))
    return "; ".join(f"{said} at {stats.listed(at, ' tokens')}" for said, at in groups)


def budget_line(step, new: str, old: str, table=None) -> str:
    """Notebook 01's reading of its budget figure, ``budget.sentence`` without its pace verdict
    (the twenty-sixth review: "the GPU sets the pace" at 19% idle against a 20% cut-off, with
    31% at the shorter length): the idle share at every length is in ``growth_why``'s Idle line.
    Given the ``table`` whose Idle line ``growth_why`` prints, the idle time per step is left to
    that line, and this one says where to read it (the thirty-third review: the same 6.89 and
    3.30 ms were printed on both lines)."""
    said = budget.sentence(step, new, old, why=IDLE_WHY, verdict=False)
    cut = " The GPU's idle time went from "
    if table is None or _parts(table) is None or cut not in said:
        return said
    return said.split(cut)[0] + " The rest of each step is the GPU's idle time: the Idle line below."


def pair(table):
    """The two lengths notebook 01 compares throughout (``doubling``'s: a length and its double,
    else the shortest and longest), so that every line of its reading compares the same two (the
    twenty-fifth review: the budget line read 100 -> 300 beside lines reading 100 -> 200); None
    under two lengths."""
    got = _growth(table)
    return None if got is None else got[:2]


# Notebook 01: what the GPU's idle time holds in the naive loop, short, for ``budget.sentence``'s
# ``why`` (the nineteenth review: the budget line ran to 90 words with the causes and the
# allocator's retries inside it; ``idle_reading`` gives them on their own lines).
IDLE_WHY = "waiting for the host, for the allocator, or between kernels"


def idle_reading(table) -> str:
    """Notebook 01, last: what the idle time holds, in short lines (the twenty-third review: "host
    work that the GPU's work does not hide" did not fit a run whose idle time per step was largest
    at 300 tokens, where the GPU's work per step outlasted the whole 100-token step, while the
    allocator's retries rose 0, 5, 15; and the retries sat mid-paragraph). Its parts, which this
    run does not separate; the allocator's peak reserved and retries per length where the table
    has them; and, where the idle time per step was largest at the longest length although the
    GPU's work per step there outlasted the shortest length's whole step, that longer work did not
    hide more of it, with the retries beside it. Empty without GPU work (a CPU run)."""
    split = _split(table)
    if split is None:
        return ""
    ns, work = split
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    walls = [round(1e3 * float(t) / k, 2) for t, k in zip(ok["median_s"], ns)]
    works = [round(w / k, 2) for w, k in zip(work, ns)]
    per = [(1e3 * float(t) - g) / k for t, g, k in zip(ok["median_s"], work, ns)]  # unrounded
    at = stats.listed(ns, " tokens")
    lines = ["The idle time holds the host's Python and launches, the wait of each step's EOS check, "
             "the allocator getting memory from the driver and gaps between kernels; this run does "
             "not measure how it splits."]
    tries = ([int(t) for t in ok["alloc_retries"].fillna(0)]
             if "alloc_retries" in ok and ok["alloc_retries"].notna().any() else [])
    if any(tries):
        runs = {len(harness.trials(row)) for _, row in ok.iterrows()}
        over = (f"over the {runs.pop()} timed runs of each length" if len(runs) == 1 else
                "over each length's timed runs")
        line = (f"Allocator retries (out of driver memory, it freed its whole cache and asked "
                f"again), {over}: {stats.listed(tries)} at {at}.")
        # round 37: no claim on the retries' cost (the idle time per step shrank in the reviewed
        # run, but might have shrunk further without them: the run does not measure it)
        lines.append(line)
    if "peak_reserved_bytes" in ok and ok["peak_reserved_bytes"].gt(0).any():
        gib = [float(b) / 2**30 for b in ok["peak_reserved_bytes"].fillna(0)]
        top = [k for k, g in zip(ns, gib) if f"{g:.1f}" == f"{max(gib):.1f}"]
        lines.append(f"Peak reserved (memory the allocator held from the driver): up to "
                     f"{max(gib):.1f} GiB, at {stats.listed(top, ' tokens')}.")
    if len(ns) > 1 and per[-1] > max(per[:-1]) and works[-1] > walls[0]:
        line = (f"At {ns[-1]} tokens the GPU's work per step ({works[-1]:.2f} ms) outlasted the "
                f"whole {ns[0]}-token step ({walls[0]:.2f} ms), yet the idle time per step was "
                f"largest there ({per[-1]:.2f} ms): longer GPU work did not hide more of it.")
        if tries and tries[-1] > max(tries[:-1]):
            line += (f" The allocator's retries were the most there too ({tries[-1]}); which part "
                     "grew is not measured here.")
        lines.append(line)
    return "\n".join(lines)


def takeaway(table) -> str:
    """Notebook 01's one line: the measured growth against pure N² growth, without its interval
    (printed once, above), and where it lies below and the idle time grew less than the GPU's
    work, both growths (the twenty-first review: the line repeated the answer word for word)."""
    got = _growth(table)
    if got is None or math.isnan(got[2].estimate):
        return ""
    n, m, ratio = got
    r = m / n
    lead = _lead(n, m)
    text = f"In one line: {lead[0].lower() + lead[1:]} {ratio.estimate:.2f}x"
    if ratio.n < stats.MIN_TRIALS or math.isinf(ratio.low) or math.isinf(ratio.high):
        return text + f" (only {ratio.n} runs: too few to judge)."
    said = _against(ratio, r)
    text += f", {said}"
    p = _parts(table)
    if not said.startswith("less") or p is None or not p["idle_grew"] < p["work_grew"]:
        return text + "."
    # the parts with the total they add up to (the twenty-sixth review: 2.71x, from every round,
    # beside parts of the median run that add up to 2.93x)
    # the twenty-eighth review: "2.48x ...: the median run grew 2.31x" read as two answers
    # round 32: the medians' growth is named once, in ``growth_why``'s head
    return (text + f"; split on the table's medians, the GPU work grew "
            f"{p['work_grew']:.2f}x and the idle time {p['idle_grew']:.2f}x.")
