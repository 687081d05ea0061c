"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and what an A/A comparison's interval resolves; and notebook 01's
answer (the fit's a and b, the measured growth against pure N² growth) and what its idle time holds."""
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


NOISY = math.log(1.10)  # a round moved (together or apart) when it moved more than 10%


def resolution(ratio, judge: bool, by_round=None) -> str:
    """What an A/A comparison's rounds say about this machine's noise, read round by round from
    ``by_round`` (``rounds``): a round whose two trials both ran far from the runs' median, and
    closer to each other than to it, moved together (their ratio cancels that); a round whose
    two trials differed more than they moved together was hit in one trial (interleaving does
    not cancel that). The sixteenth review: "much of that noise hit one trial" where two rounds
    had moved together and one alone was a one-trial hit; and the interval was read a second
    time, in the other scale, with its ends swapped (now said once, in the verdict). Empty
    without an interval or without rounds."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high):
        return ""
    if stats.verdict(ratio) != stats.NOISE:  # identical loops told apart: say what that means
        # the thirteenth review: "more often when the host's speed drifts" blamed the drift that
        # interleaving was said to cancel; what it does not cancel is drift within a round
        # round 18's cut left "about one pair in 20 shows a difference by chance, or the host's
        # speed drifted": the "or" offered no alternative to a general fact; now two causes
        return (f"Identical loops told apart: by chance (with a {100 * ratio.level:.0f}% interval, "
                f"about one identical pair in {1 / (1 - ratio.level):.0f} shows a difference), or "
                "because the host's speed drifted within its rounds, which interleaving does not "
                "cancel.")
    if by_round is None or not len(by_round):
        return ""
    a, b = (by_round[k].to_numpy(dtype=float) for k in ("A ms", "B ms"))
    middle = float(np.median(np.concatenate([a, b])))
    common = np.abs(np.log(np.sqrt(a * b) / middle))  # how far the round moved as a whole
    split = np.abs(np.log(a / b))                     # how far its two trials moved apart
    names = by_round["round"].astype(int).to_numpy()
    together = [int(r) for r, c, d in zip(names, common, split) if c > NOISY and c > d]
    apart = [i for i, (c, d) in enumerate(zip(common, split)) if d > NOISY and d >= c]
    rounds = lambda found: ("round " if len(found) == 1 else "rounds ") + stats.listed(found)
    said = []
    if together:
        said.append(f"in {rounds(together)} both trials moved together, which their ratio "
                    "cancels")
    if apart:
        far = max(apart, key=lambda i: split[i])
        by = (f"by {math.exp(split[far]):.2f}x" if len(apart) == 1 else
              f"by up to {math.exp(split[far]):.2f}x, round {int(names[far])}")
        said.append(f"in {rounds([int(names[i]) for i in apart])} the two trials differed ({by}), "
                    "which interleaving does not cancel")
    if not said:
        return (f"No round moved more than {100 * (math.exp(NOISY) - 1):.0f}% from the runs' "
                f"median of {middle:.0f} ms, nor its two trials apart: this machine was quiet.")
    text = "; ".join(said)
    return text[0].upper() + text[1:] + "."


def spread(by_round, n: int, gpu_ms: float) -> str:
    """Notebook 00: the budget's wall clock is one reading of a host whose speed varies (the
    sixteenth review: the budget read as one fixed fact beside runs of the same loop 1.9x apart):
    the same code's runs per step, fastest to slowest, and the GPU's idle share at both ends with
    the GPU's profiled work (the same kernels in every run), with who sets the pace there. Empty
    without two runs or without the GPU's work."""
    runs = by_round[["A ms", "B ms"]].to_numpy(dtype=float).ravel() / n if len(by_round) else []
    if len(runs) < 2 or not gpu_ms > 0:
        return ""
    fast, slow = float(np.min(runs)), float(np.max(runs))
    idle = [100 * max(t - gpu_ms, 0.0) / t for t in (fast, slow)]
    paces = [budget.pace(i, why=False) for i in idle]
    text = (f"The same code's {len(runs)} runs took {fast:.1f} to {slow:.1f} ms per step: the "
            "budget is one reading of a host whose speed varies, the noise Idea 2 deals with. The "
            f"GPU idles {idle[0]:.0f}% of the fastest run's step")
    if paces[0] == paces[1]:
        return text + f" and {idle[1]:.0f}% of the slowest's: {paces[0]} in every run."
    return text + f" ({paces[0]}) and {idle[1]:.0f}% of the slowest's ({paces[1]})."


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
    slope, and "the rest of a is waiting, a cost that does not grow" while the idle time fell).
    The idle time's share and pace are said at the shortest length only: notebook 01 prints
    ``budget.sentence`` next, which gives the idle time in ms at both lengths and the longest
    length's share and pace."""
    f = growth.fit(table)
    text = (f"Fitting the median total times as a·N + b·N² gives a = {f['a_ms']:.2f} ms and "
            f"b = {f['b_us']:.1f} µs: over these lengths the average step costs about a + b·N, "
            "b being the wall clock's average growth per token")
    gpu_b, idle = _gpu_slope(table), _idle_ends(table)
    if not math.isfinite(gpu_b) or idle is None:
        return text + "."
    (n, i0, s0), (m, i1, s1) = idle
    # the idle time in ms at both lengths and the longest length's pace are the budget line's,
    # printed next (budget.sentence: "went from 6.09 ms to 3.22 ms per step (19% ...)"); said
    # here only at the shortest length (the preflight of round 18: both ends twice in a row)
    start = (f"(the next line gives it in ms at {n} and {m} tokens); at {n} tokens it was "
             f"{s0:.0f}% of the step, where {budget.pace(s0, why=False)}")
    gpu = f"the GPU's own work ({gpu_b:.1f} µs per token, fitted the same way)"
    if f["b_us"] < gpu_b and i1 < i0:
        return text + (f". The wall clock grew more slowly than {gpu} because the GPU's idle time "
                       f"per step fell as its work grew {start}.")
    if f["b_us"] > gpu_b and i1 > i0:
        return text + (f". The wall clock grew faster than {gpu} because the GPU's idle time per "
                       f"step rose {start}.")
    return text + (f"; the GPU's own work grew {gpu_b:.1f} µs per token, fitted the same way, and "
                   f"the GPU's idle time per step {'fell' if i1 < i0 else 'rose' if i1 > i0 else 'stayed the same'} "
                   f"{start}.")


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


def doubling(table, why: bool = True) -> str:
    """Notebook 01's answer, second half: the article's claim that doubling the length roughly
    quadruples the runtime, against the measured growth from a length to its double (else from
    the shortest to the longest length, against the square of their ratio): the rounds' ratio
    with its interval, and whether it lies below, above or around pure N² growth. Where the
    medians' ratio lies apart from the rounds' (``stats.medians_apart``), it leads, as the fit
    reads the medians, and (``why``) a second sentence says why the two differ from the run that
    pulls the rounds' ratio that way (the sixteenth review: "2.72x" led above the medians' 2.40x
    and the fit's 2.48x with no word why)."""
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
    said = (f"less than {pure}: the a·N part " + ("only doubles" if r == 2 else f"grows only {r:.3g}x") if ratio.high < r * r else
            f"more than {pure}" if ratio.low > r * r else f"can't tell apart from {pure}")
    measured = f"{ratio.estimate:.2f}x ({ratio.low:.2f}\u2013{ratio.high:.2f})"
    ok = table[table["status"] == harness.OK]
    runs = {int(row["seq_len"]): np.asarray(harness.trials(row), dtype=float)
            for _, row in ok.iterrows()}
    medians = stats.medians_ratio(runs[n], runs[m])  # median(m) / median(n)
    if not stats.medians_apart(medians, ratio.estimate):
        return f"{lead} {measured}, {said}."
    head = (f"Doubling the length from {n} to {m} tokens multiplied the median time by "
            f"{medians:.2f}x; round by round the time grew {measured}, {said}." if r == 2 else
            f"From {n} to {m} tokens ({r:.3g}x longer) the median time grew {medians:.2f}x; round "
            f"by round it grew {measured}, {said}.")
    return head + (" " + _pull(runs[n], runs[m], n, m, ratio.estimate > medians) if why else "")


def _pull(short, long, n: int, m: int, higher: bool) -> str:
    """Why the rounds' ratio sits above (``higher``) or below the medians': it counts every run,
    and the run furthest from its length's median in the direction that pulls it that way (a
    fast run at the short length or a slow one at the long length raises it) is one the median
    sets aside; the run is the table's min or max."""
    found = []
    for length, runs, is_short in ((n, short, True), (m, long, False)):
        median = float(np.median(runs))
        run = float(np.min(runs) if higher == is_short else np.max(runs))
        found.append((abs(math.log(run / median)), length, run, median))
    _, length, run, median = max(found)
    side = "below" if run < median else "above"
    return (f"The rounds' ratio sits {'above' if higher else 'below'} the medians' because it "
            f"counts every run, and the {length}-token runs reach {'down' if run < median else 'up'} "
            f"to {1e3 * run:.1f} ms, {100 * abs(run / median - 1):.0f}% {side} their median: a "
            "run the median sets aside.")


def idle_why(table, n: int) -> str:
    """Notebook 01: what the GPU's idle time holds in the naive loop at ``n`` tokens, for
    ``budget.sentence``'s ``why`` (the sixteenth review: ``budget.IDLE_WHY`` named a prompt's
    forward this loop does not have, and not the allocator's trips to the driver): the host
    issuing each step's forward after the previous step's EOS check, the allocator getting memory
    from the driver (every timed run starts with an emptied cache), with its retries where the
    table counts any (``alloc_retries``, summed over the timed runs), and gaps between kernels."""
    text = ("waiting for the host, which issues each step's forward only after the previous "
            "step's EOS check; for the allocator, which gets its memory from the driver")
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == n)]
    if "alloc_retries" in ok and len(ok) and ok["alloc_retries"].notna().any():
        tries = int(ok["alloc_retries"].fillna(0).sum())
        if tries:
            runs = len(harness.trials(ok.iloc[0]))
            text += (f" and, over the {runs} timed runs, freed its whole cache and asked again "
                     f"{tries} time{'s' if tries > 1 else ''}")
    return text + "; or in gaps between kernels"


def takeaway(table) -> str:
    """Notebook 01's one line: the measured growth against pure N² growth (``doubling``'s first
    sentence)."""
    said = doubling(table, why=False)
    return f"In one line: {said[0].lower() + said[1:]}" if said else ""
