"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and what an A/A comparison's interval resolves; and notebook 01's
answer (the fit's a and b, the measured growth against pure N² growth) and its memory reading."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import floor as _floor
from . import budget, growth, harness, stats
from ..model import parameter_bytes


def rounds(table, a: str, b: str) -> pd.DataFrame:
    """One row per round of ``harness.compare`` for methods ``a`` and ``b`` (in that order in
    the call, so round 0 ran A then B, round 1 B then A, ...): both times in ms and their
    ratio A / B (above 1: B was faster in that round)."""
    ta, tb = (np.asarray(stats.method_trials(table, m)) * 1e3 for m in (a, b))
    n = min(len(ta), len(tb))
    return pd.DataFrame({"round": range(1, n + 1),
                         "order": ["A B" if r % 2 == 0 else "B A" for r in range(n)],
                         "A ms": ta[:n].round(2), "B ms": tb[:n].round(2),
                         "A / B": (ta[:n] / tb[:n]).round(3)})


def floor_reading(model, device, batch_size, prompt_len, new_tokens, floor_ms) -> str:
    """The floor as bytes over bandwidth, on average over the run's steps, e.g. "0.196 ms on
    average over the run's 40 steps = 582 MB / 2.97 TB/s measured: 498 MB of weights and 84 MB
    of keys and values (35.5 positions on average; 55 at the last step, 130 MB)": the bytes a
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
            f"{(weights + kv) / 1e6:.0f} MB / {budget.bandwidth(device) / 1e12:.2f} TB/s measured: "
            f"{weights / 1e6:.0f} MB of weights and {kv / 1e6:.0f} MB of keys and values "
            f"({mean:g} positions on average; {last} at the last step, {kv_last / 1e6:.0f} MB)")


def resolution(ratio, judge: bool, by_round=None) -> str:
    """What an A/A comparison says about this machine's noise, as whole sentences. With
    ``by_round`` (``rounds``): how far the identical loop's runs spread and how far the two trials
    of one round differed (the round furthest from 1), so the reader sees whether the noise hit a
    round's two trials together (the ratio cancels it) or one trial (it does not; the fifteenth
    review: nothing visibly cancelled, and the lesson did not say so). Then the interval read
    honestly at both ends, in B's time against A's (not symmetric: e.g. 15% less to 23% more): a
    real difference anywhere in that range could hide in the noise. Empty without an interval."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high):
        return ""
    if stats.verdict(ratio) != stats.NOISE:  # identical loops told apart: say what that means
        # the thirteenth review: "more often when the host's speed drifts" blamed the drift that
        # interleaving was said to cancel; what it does not cancel is drift within a round
        return (f"Identical loops told apart: with a {100 * ratio.level:.0f}% interval about one "
                f"identical pair in {1 / (1 - ratio.level):.0f} shows a difference by chance: "
                "this run is such a case, or the host's speed drifted within its rounds, which "
                "interleaving does not cancel; this is why the course reads an effect only with "
                "its interval, and across runs.")
    text = ""
    if by_round is not None and len(by_round):
        runs = by_round[["A ms", "B ms"]].to_numpy(dtype=float).ravel()
        logs = np.abs(np.log(by_round["A / B"].astype(float).to_numpy()))
        far = int(np.argmax(logs))
        apart, within = runs.max() / runs.min(), math.exp(logs[far])
        text = (f"The same loop's {runs.size} runs took {runs.min():.0f} to {runs.max():.0f} ms "
                f"({apart:.1f}x apart), and the two trials of one round differed by up to "
                f"{within:.2f}x (round {int(by_round['round'].iloc[far])}): ")
        # in log terms: a round's two trials apart by more than half the runs' whole spread
        text += ("much of that noise hit one trial of a round, which interleaving does not "
                 "cancel. " if 2 * logs[far] >= math.log(apart) else
                 "most of it slowed a round's two trials together, which their ratio cancels. ")
    less, more = 100 * (1 - 1 / ratio.high), 100 * (1 / ratio.low - 1)
    return text + (f"These {ratio.n} rounds are consistent with B taking anywhere from {less:.0f}% "
                   f"less to {more:.0f}% more time than A: a real difference anywhere in that range "
                   f"could hide in this machine's noise over {ratio.n} rounds.")


def with_estimate(said: str, ratio) -> str:
    """Notebook 00: a "can't tell apart" line leads with the rounds' estimate, so that where it
    sits in the interval shows ("1.03x, can't tell apart on this machine (0.97–1.09)"); any
    other line as it is."""
    if not said.startswith("can't tell"):
        return said
    return f"{ratio.estimate:.2f}x, {said}"


def terms(table) -> str:
    """Notebook 01's fit in plain words: the median total times fitted as a·N + b·N²
    (``growth.fit``), so b is the wall clock's average growth per token over these lengths; then,
    with the profiled runs' GPU time (``gpu_busy_s``), the GPU's own growth fitted the same way and
    the GPU's idle time per step at the shortest and longest length, with who sets the pace at
    each (the fifteenth review: "b is mostly the GPU recomputing" while b sat below the GPU's own
    slope, and "the rest of a is waiting, a cost that does not grow" while the idle time fell)."""
    f = growth.fit(table)
    text = (f"Fitting the median total times as a·N + b·N² gives a = {f['a_ms']:.2f} ms and "
            f"b = {f['b_us']:.1f} µs: over these lengths the average step costs about a + b·N, "
            "b being the wall clock's average growth per token")
    gpu_b, idle = _gpu_slope(table), _idle_ends(table)
    if not math.isfinite(gpu_b) or idle is None:
        return text + "."
    (n, i0, s0), (m, i1, s1) = idle
    ends = (f"from {i0:.2f} ms at {n} tokens ({s0:.0f}% of the step: {budget.pace(s0, why=False)}) "
            f"to {i1:.2f} ms at {m} tokens ({s1:.0f}%: {budget.pace(s1, why=False)})")
    gpu = f"the GPU's own work ({gpu_b:.1f} µs per token, fitted the same way)"
    if f["b_us"] < gpu_b and i1 < i0:
        return text + (f". The wall clock grew more slowly than {gpu} because the GPU's idle time "
                       f"per step fell as its work grew: {ends}.")
    if f["b_us"] > gpu_b and i1 > i0:
        return text + (f". The wall clock grew faster than {gpu} because the GPU's idle time per "
                       f"step rose: {ends}.")
    return text + (f"; the GPU's own work grew {gpu_b:.1f} µs per token, fitted the same way, and "
                   f"the GPU's idle time per step went {ends}.")


def _gpu_slope(table) -> float:
    """b (µs) of the profiled runs' GPU time (``gpu_busy_s``) fitted as ``growth.fit`` fits the
    wall clock; NaN without two lengths' GPU times."""
    if "gpu_busy_s" not in table:
        return float("nan")
    ok = table[table["status"] == harness.OK]
    ok = ok[ok["gpu_busy_s"].astype(float) > 0]
    if ok["seq_len"].nunique() < 2:
        return float("nan")
    return growth.fit(ok.assign(median_s=ok["gpu_busy_s"].astype(float)))["b_us"]


def _idle_ends(table):
    """((N, idle ms, idle %), (N, idle ms, idle %)) per step at the shortest and longest profiled
    length, as the budget prints them (``budget.printed_idle``: the wall clock minus the GPU's
    work, each rounded to 0.01 ms); None without two profiled lengths."""
    if "gpu_busy_s" not in table:
        return None
    ok = table[table["status"] == harness.OK]
    ok = ok[ok["gpu_busy_s"].astype(float) > 0].sort_values("seq_len")
    if ok["seq_len"].nunique() < 2:
        return None
    ends = []
    for n in (int(ok["seq_len"].iloc[0]), int(ok["seq_len"].iloc[-1])):
        step = budget.per_step(ok, seq_len=n)
        if step.empty:
            return None
        row = step.iloc[0]
        idle = budget.printed_idle(row)
        wall = round(row["wall_ms"], 2)
        if not wall > 0:
            return None
        ends.append((n, idle, 100 * idle / wall))
    return tuple(ends)


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


def doubling(table) -> str:
    """Notebook 01's answer, second half: the article's claim that doubling the length roughly
    quadruples the runtime, against the measured growth from a length to its double (else from
    the shortest to the longest length, against the square of their ratio): the rounds' ratio
    with its interval, and whether it lies below, above or around pure N² growth (the fourteenth
    review: growth was told four ways; the fit and this ratio are the two kept)."""
    got = _growth(table)
    if got is None or math.isnan(got[2].estimate):
        return ""
    n, m, ratio = got
    r = m / n
    pure = f"the {r * r:.3g}x of pure N² growth"
    lead = (f"Doubling the length from {n} to {m} tokens multiplied the time by" if r == 2 else
            f"From {n} to {m} tokens ({r:.3g}x longer) the time grew")
    if ratio.n < stats.MIN_TRIALS or math.isinf(ratio.low) or math.isinf(ratio.high):
        return (f"{lead} {ratio.estimate:.2f}x (only {ratio.n} runs: too few to judge against "
                f"{pure}).")
    ok = table[table["status"] == harness.OK]
    median = dict(zip(ok["seq_len"].astype(int), ok["median_s"].astype(float)))
    medians = median[m] / median[n]
    note = f"; medians alone: {medians:.2f}x" if stats.medians_apart(medians, ratio.estimate) else ""
    said = (f"less than {pure}: the a·N part " + ("only doubles" if r == 2 else f"grows only {r:.3g}x") if ratio.high < r * r else
            f"more than {pure}" if ratio.low > r * r else f"can't tell apart from {pure}")
    return f"{lead} {ratio.estimate:.2f}x ({ratio.low:.2f}\u2013{ratio.high:.2f}{note}), {said}."


CARD_FULL = 0.95  # a peak reserve within 5% of the card's memory: the allocator filled the card


def card_reading(table, total_bytes) -> str:
    """Notebook 01: whether the allocator's reserve filled the card (a peak reserve within 5% of
    ``total_bytes``; why is notebook 03's subject, the fifteenth review), then how often it freed its cache and retried at each length (``alloc_retries``,
    summed over the timed runs), as measured (the fourteenth review: a total of 20 with no
    column to check, and an unsized "inflates b" caveat). Empty without a GPU."""
    if not total_bytes or not total_bytes > 0:
        return ""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    full = [int(r["seq_len"]) for _, r in ok.iterrows()
            if r["peak_reserved_bytes"] >= CARD_FULL * total_bytes]
    card = f"{total_bytes / 2**30:.1f} GiB"
    top = ok["peak_reserved_bytes"].max() / 2**30
    if full:
        text = (f"At {stats.listed(full, ' tokens')} the allocator's reserve filled the card ({top:.1f} of "
                f"{card}; notebook 03 explains why).")
    else:
        text = f"The allocator reserved at most {top:.1f} GiB of the card's {card}."
    if "alloc_retries" not in ok or ok["alloc_retries"].isna().all():
        return text
    tries = ok["alloc_retries"].fillna(0).astype(int).tolist()
    if not any(tries):
        return text + " It never had to free its cache and retry."
    counts = {len(harness.trials(r)) for _, r in ok.iterrows()}
    runs = f"the {counts.pop()} timed runs" if len(counts) == 1 and 0 not in counts else "the timed runs"
    listed = stats.listed(tries, " times")
    return text + (f" It freed its cache and asked the driver again {listed} over {runs} at "
                   f"{stats.listed(ok['seq_len'].astype(int), ' tokens')}; that time is part of "
                   "the timed runs the fit reads.")


def takeaway(table) -> str:
    """Notebook 01's one line: the measured growth against pure N² growth (``doubling``)."""
    said = doubling(table)
    return f"In one line: {said[0].lower() + said[1:]}" if said else ""
