"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and what an A/A comparison's interval resolves; and notebook 01's
answer (the step's growth between lengths against the GPU's work, the measured growth against
pure N² growth) and what its idle time holds."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import floor as _floor
from . import budget, harness, stats
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
    """Notebook 01's growth, read step by step from the data (the nineteenth review: the fitted
    a + b·N line fell below the 100-token bar, implied a 2.54x doubling against the printed 2.33x,
    and its a, "the fit at N = 0", meant nothing): how much the wall clock per step rose between
    neighbouring lengths, and the GPU's work per step beside it (``gpu_busy_s`` ÷ N), from the
    values as printed (two decimals), so a reader can subtract them. Where the wall clock rose
    less than the GPU's work, the GPU's idle time shrank by the difference (wall = work + idle)."""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    ns = [int(n) for n in ok["seq_len"]]
    if len(ns) < 2:
        return ""
    wall = [round(1e3 * float(s) / n, 2) for s, n in zip(ok["median_s"], ns)]
    pairs = list(zip(range(len(ns)), range(1, len(ns))))
    moved = lambda d: f"{'rose' if d >= 0 else 'fell'} {abs(d):.2f} ms"
    # "rose 2.03 ms ... and 3.53 ms ...": the verb again only where the direction changes
    moves = lambda v: [moved(v[j] - v[i]) if i == 0 or (v[j] - v[i] >= 0) != (v[i] - v[i - 1] >= 0)
                       else f"{abs(v[j] - v[i]):.2f} ms" for i, j in pairs]
    steps = stats.listed([f"{m} from {ns[i]} to {ns[j]} tokens"
                          for m, (i, j) in zip(moves(wall), pairs)])
    text = (f"Per decode step the wall clock took {stats.listed([f'{w:.2f}' for w in wall], ' ms')} at "
            f"{stats.listed(ns, ' tokens')}: it {steps}")
    gpu = ok["gpu_busy_s"].astype(float).tolist() if "gpu_busy_s" in ok else []
    if len(gpu) != len(ns) or not all(g > 0 for g in gpu):
        return text + "."
    work = [round(1e3 * g / n, 2) for g, n in zip(gpu, ns)]
    text += (f"; the GPU's work per step was {stats.listed([f'{w:.2f}' for w in work], ' ms')} "
             f"(it {stats.listed(moves(work))}).")
    less = [j for i, j in pairs if wall[j] - wall[i] < work[j] - work[i]]
    if len(less) == len(pairs):
        return text + (" At every step up in length the wall clock rose less than the GPU's work: "
                       "the GPU's idle time shrank, so extra work first filled time the GPU had "
                       "spent waiting.")
    if not less:
        return text + " At no step up in length did the wall clock rise less than the GPU's work."
    span = lambda js: stats.listed([f"from {ns[j - 1]} to {ns[j]}" for j in js], " tokens")
    more = [j for i, j in pairs if j not in less]
    # the twentieth review: the right panel draws the ends only, and hid that the idle time per
    # step was smallest at 200 tokens; said (no ms: those are the budget line's) where it is so
    idle = [w - k for w, k in zip(wall, work)]
    low = min(range(len(ns)), key=lambda i: idle[i])
    least = (f"; the GPU's idle time per step was smallest at {ns[low]} tokens, a length the right "
             "panel does not draw" if 0 < low < len(ns) - 1 else "")
    return text + (f" The wall clock rose less than the GPU's work {span(less)}, where the GPU's "
                   f"idle time shrank, but not {span(more)}{least}.")


def work_growth(table, prompt_len: int) -> str:
    """Notebook 01, beside ``doubling``: over the same two lengths, how much the GPU's work per
    run grew (``gpu_busy_s``), and how many more positions the runs processed (step t works on
    ``prompt_len`` + t positions, the prefill being step 0), against pure N² growth; then whether
    the wall clock (the rounds' ratio that ``doubling`` prints) grew less than the GPU's work
    (wall = work + idle: then the idle time grew less than the work). The twentieth review: the
    lesson put the whole gap below 4x on the idle time, but the GPU's work itself grew 3.42x, the
    prompt's positions adding a linear term. Empty without both lengths' GPU work."""
    got = _growth(table)
    if got is None or math.isnan(got[2].estimate) or "gpu_busy_s" not in table:
        return ""
    n, m, ratio = got
    ok = table[table["status"] == harness.OK]
    gpu = {int(r["seq_len"]): float(r["gpu_busy_s"]) for _, r in ok.iterrows()}
    if not (gpu.get(n, 0) > 0 and gpu.get(m, 0) > 0):
        return ""
    work = gpu[m] / gpu[n]
    positions = lambda k: k * prompt_len + k * (k - 1) / 2  # steps 0 .. k-1 on prompt_len + t each
    r = m / n
    text = (f"Over the same {n} to {m} tokens the GPU's work per run grew {work:.2f}x: step t works "
            f"on {prompt_len} + t positions (the prompt's included), {positions(m) / positions(n):.2f}x "
            f"as many in all, against the {r * r:.3g}x of N².")
    wall = ratio.estimate
    if wall < work:
        return text + (f" The wall clock grew less ({wall:.2f}x): its other part, the GPU's idle "
                       "time, grew less than the work.")
    return text + (f" The wall clock grew {wall:.2f}x, no less than the GPU's work: the GPU's idle "
                   "time grew at least as fast as the work.")


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
    medians' ratio lies apart from the rounds' (``stats.medians_apart``), it leads, and (``why``) a second sentence says why the two differ from the run that
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
    said = (f"less than {pure}" if ratio.high < r * r else
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


# Notebook 01: what the GPU's idle time holds in the naive loop, short, for ``budget.sentence``'s
# ``why`` (the nineteenth review: the budget line ran to 90 words with the causes and the
# allocator's retries inside it; ``idle_parts`` gives them on their own line).
IDLE_WHY = "waiting for the host, for the allocator, or between kernels"


def idle_parts(table) -> str:
    """Notebook 01, after the budget line: what the idle time's parts are (the host issues each
    step's forward only after the previous step's EOS check; the allocator gets its memory from
    the driver, every timed run starting with an emptied cache), and, where the table counts any
    (``alloc_retries``, summed over each length's timed runs), how often the allocator ran out
    and retried at each length (the nineteenth review: "15 times" said no length)."""
    text = ("The host issues each step's forward only after the previous step's EOS check; the "
            "allocator gets its memory from the driver, as every timed run starts with an emptied "
            "cache.")
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    if "alloc_retries" not in ok or not len(ok) or not ok["alloc_retries"].notna().any():
        return text
    tries = [int(t) for t in ok["alloc_retries"].fillna(0)]
    if not any(tries):
        return text
    runs = {len(harness.trials(row)) for _, row in ok.iterrows()}
    over = (f"over the {runs.pop()} timed runs of each length" if len(runs) == 1 else
            "over each length's timed runs")
    ns = [int(n) for n in ok["seq_len"]]
    return text + (f" It ran out of driver memory, freed its whole cache and asked again "
                   f"{stats.listed(tries)} times at {stats.listed(ns, ' tokens')} ({over}; "
                   "notebook 03 takes this apart).")


def takeaway(table) -> str:
    """Notebook 01's one line: the measured growth against pure N² growth (``doubling``'s first
    sentence)."""
    said = doubling(table, why=False)
    return f"In one line: {said[0].lower() + said[1:]}" if said else ""
