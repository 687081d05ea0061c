"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and what an A/A comparison's interval resolves; and notebook 01's
readings of its fit (a and b in plain words) and of its memory."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import floor as _floor
from . import budget, growth, harness, stats
from .results import run_dir
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
    """What an A/A comparison's interval says about this run, in B's time against A's: the
    rounds are consistent with B taking from 1 - 1/high less to 1/low - 1 more time than A (not
    symmetric: e.g. 25% less to 8% more), so a smaller difference could not show in this many
    rounds; with ``by_round`` (``rounds``), led by how far the identical loop's runs spread (the
    twelfth review: 197-512 ms went unsaid). Empty without an interval."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high):
        return ""
    if stats.verdict(ratio) != stats.NOISE:  # identical loops told apart: say what that means
        # the thirteenth review: "more often when the host's speed drifts" blamed the drift that
        # interleaving was said to cancel; what it does not cancel is drift within a round
        return (f"identical loops told apart: with a {100 * ratio.level:.0f}% interval about one "
                f"identical pair in {1 / (1 - ratio.level):.0f} shows a difference by chance: "
                "this run is such a case, or the host's speed drifted within its rounds, which "
                "interleaving does not cancel; this is why the course reads an effect only with "
                "its interval, and across runs")
    spread = ""
    if by_round is not None and len(by_round):
        runs = by_round[["A ms", "B ms"]].to_numpy().ravel()
        spread = (f"the same loop's runs took {runs.min():.0f} to {runs.max():.0f} ms "
                  f"({runs.max() / runs.min():.1f}x apart), and ")
    less, more = 100 * (1 - 1 / ratio.high), 100 * (1 / ratio.low - 1)
    return (f"{spread}these {ratio.n} rounds are consistent with B taking anywhere from "
            f"{less:.0f}% less to {more:.0f}% more time than A: a difference smaller than about "
            f"{max(less, more):.0f}% could not show in {ratio.n} rounds on this machine")


def with_estimate(said: str, ratio) -> str:
    """Notebook 00: a "can't tell apart" line leads with the rounds' estimate, so that where it
    sits in the interval shows ("1.03x, can't tell apart on this machine (0.97–1.09)"); any
    other line as it is."""
    if not said.startswith("can't tell"):
        return said
    return f"{ratio.estimate:.2f}x, {said}"


def _tokens(lengths) -> str:
    """"100 tokens", "200 and 300 tokens", "100, 200 and 300 tokens"."""
    names = [str(int(n)) for n in lengths]
    return (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]) + " tokens"


def _ranges(shares) -> list:
    """(new tokens, low %, high %) for each length of ``growth.quadratic_shares`` with a range."""
    out = []
    if shares is None:
        return out
    for _, row in shares.iterrows():
        try:
            low, high = (float(v) for v in str(row["interval %"]).split("\u2013"))
        except ValueError:
            continue
        out.append((int(row["new tokens"]), low, high))
    return out


def terms(table, shares=None) -> str:
    """Notebook 01: the fit in plain words. The median total times are fitted as a·N + b·N²
    (``growth.fit``), so the average step costs a + b·N: b what each token of length adds to it,
    a that line's value at N = 0 (an intercept: host and GPU work overlap, so no cost a step
    pays apart). The N² term passes half the time where b·N passes a, at N = a/b; that length
    is stated as placed only where the N² share's ranges (``shares``) lie below 50% at one
    measured length and above at another (the thirteenth review: "≈ 121 tokens" was printed
    flatly while every share's range held 50%)."""
    f = growth.fit(table)
    text = (f"Fitting the median total times as a·N + b·N² gives a = {f['a_ms']:.2f} ms and "
            f"b = {f['b_us']:.1f} µs: the average step costs a + b·N")
    if not (f["a_ms"] > 0 and round(f["b_us"], 1) > 0):  # b as printed: no crossover from rounding noise
        return text + ", with no length where the b·N² work passes half the time."
    cross = f"N = a/b ≈ {1e3 * f['a_ms'] / f['b_us']:.0f} tokens"
    ranges = _ranges(shares)
    below = [n for n, low, high in ranges if high <= 50]  # as ``takeaway`` reads a range
    above = [n for n, low, high in ranges if low >= 50]
    both = [n for n, low, high in ranges if low < 50 < high]
    if below and above:
        return text + f", so the b·N² work passes half the time at {cross}."
    if ranges and not both:
        side = "more" if above else "less"
        return text + (f"; the b·N² work is {side} than half the time at every length measured "
                       f"(the fit puts the crossing at {cross}).")
    if both:
        return text + (f"; by the fit the b·N² work passes half the time at {cross}, but these "
                       f"rounds cannot place that length: the N² share's range holds 50% at "
                       f"{_tokens(both)}.")
    return text + f"; by the fit alone the b·N² work passes half the time at {cross}."


QUADRUPLE = (3.5, 4.5)  # "about 4x per doubling": claims.QUADRUPLE_RANGE, which notebook 08 judges


def doubling(table) -> str:
    """Notebook 01: the article's claim that doubling the length roughly quadruples the runtime,
    answered with the factor per doubling that notebook 08 judges (2**k, k the growth exponent of
    the median total times), and, where a length and its double were both measured, the measured
    factor (the twelfth review: 2.75x came from the fit, the measured 100 -> 200 was 2.66x)."""
    k = growth.fit(table)["exponent"]
    if not math.isfinite(k):
        return ""
    x = 2 ** k
    low, high = QUADRUPLE
    said = ("short of the 4x of pure N² growth: the a·N part only doubles" if x < low else
            "about the 4x of pure N² growth" if x <= high else "more than the 4x of pure N² growth")
    text = (f"A power law through the medians gives {x:.2f}x per doubling of the length "
            f"(time ∝ N^{k:.2f}), {said}")
    ok = table[table["status"] == harness.OK]
    median = dict(zip(ok["seq_len"].astype(int), ok["median_s"].astype(float)))
    pairs = [(n, 2 * n) for n in sorted(median) if 2 * n in median]
    if pairs:
        n, m = pairs[0]
        text += f"; measured from {n} to {m} tokens: {median[m] / median[n]:.2f}x"
    return text + "."


def against_setup(table, setup=None) -> str:
    """Notebook 01: where the naive loop's timed step at its shortest length (median run ÷ its
    length, no shorter than notebook 00's) is shorter than notebook 00's timed KV-cache step of
    the same run (loop A, from this run's ``00_setup`` table unless ``setup`` is given), one
    sentence saying so and that notebook 02 explains it; else empty (also where that table is
    missing)."""
    if setup is None:
        path = run_dir() / "data" / "00_setup.csv"
        if not path.exists():
            return ""
        setup = pd.read_csv(path)
    row = setup[(setup["method"] == "loop A") & (setup["status"] == harness.OK)]
    ok = table[table["status"] == harness.OK]
    if len(row) != 1 or ok.empty:
        return ""
    n0 = int(row["seq_len"].iloc[0])
    kv = 1e3 * float(row["median_s"].iloc[0]) / n0
    first = ok.sort_values("seq_len").iloc[0]
    n1 = int(first["seq_len"])
    naive = 1e3 * float(first["median_s"]) / n1
    if n1 < n0 or not naive < kv:
        return ""
    return (f"A timed naive step ({naive:.2f} ms at {n1} tokens) is shorter than notebook 00's "
            f"KV-cache step ({kv:.2f} ms at {n0}), though it recomputes every position: notebook "
            "02 shows why (the host's work per step).")


CARD_FULL = 0.95  # a peak reserve within 5% of the card's memory: the allocator filled the card


def card_reading(table, total_bytes) -> str:
    """Notebook 01: whether the allocator's reserve filled the card. Lengths whose peak reserved
    memory came within 5% of the card's ``total_bytes``, or whose timed runs made the allocator
    free its cached blocks and retry (``alloc_retries``, summed over the timed runs), are named:
    there it filled the card and had to ask the driver again, which costs time inside those runs;
    and why the reserve climbs (each step's logits one position longer: no cached block fits).
    Empty without a GPU (``total_bytes`` 0 or NaN)."""
    if not total_bytes or not total_bytes > 0:
        return ""
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    full = [(int(r["seq_len"]), r["peak_reserved_bytes"], r.get("alloc_retries", 0) or 0)
            for _, r in ok.iterrows()
            if r["peak_reserved_bytes"] >= CARD_FULL * total_bytes or (r.get("alloc_retries", 0) or 0) > 0]
    card = f"{total_bytes / 2**30:.1f} GiB"
    if not full:
        return (f"The allocator reserved at most {ok['peak_reserved_bytes'].max() / 2**30:.1f} GiB of "
                f"the card's {card}: it never had to free its cached blocks.")
    retries = sum(int(t) for _, _, t in full if t == t)
    top = max(r for _, r, _ in full)
    text = (f"At {_tokens([n for n, _, _ in full])} the allocator's reserve reached "
            f"{top / 2**30:.1f} GiB of the card's {card}{'' if retries else ', close to filling it'}"
            ": each step's logits are one position longer than the last, so no cached block fits "
            "them and the reserve keeps growing (notebook 03's subject).")
    if retries:
        later = _retries_only_later(table)
        text += (f" It had to free its cache and retry, {retries} times over the timed runs: time "
                 "added to those runs" + (", which the fit reads as growth with the length, so it "
                 "raises b and the N² shares by an amount these runs do not measure." if later
                                          else "."))
    return text


def _retries_only_later(table) -> bool:
    """Whether the allocator retried at some longer length but not at the shortest: time the fit
    reads as growth with the length."""
    if "alloc_retries" not in table:
        return False
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    tries = ok["alloc_retries"].fillna(0).astype(float)
    return len(tries) > 1 and tries.iloc[0] == 0 and tries.iloc[1:].max() > 0


def fit_against_medians(table) -> str:
    """Notebook 01: the fitted step a + b·N against the measured median step at each length (the
    twelfth review: "within every min-max bar" could hardly fail; this is the evidence)."""
    f = growth.fit(table)
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    n = ok["seq_len"].astype(float)
    fitted = " / ".join(f"{f['a_ms'] + f['b_us'] * 1e-3 * x:.2f}" for x in n)
    measured = " / ".join(f"{1e3 * t / x:.2f}" for t, x in zip(ok["median_s"], n))
    return (f"The fitted step a + b·N at {_tokens(n)}: {fitted} ms; the measured median step: "
            f"{measured} ms.")


def takeaway(table, shares) -> str:
    """Notebook 01's one line: the N² share at the longest length with the range the rounds
    allow (``growth.quadratic_shares``), said plainly when that range holds 50%, and the
    allocator's retries named where they inflate it (the twelfth review: "61%" was printed
    without its 31-77% or the retries)."""
    last = shares.iloc[-1]
    text = (f"In one line: at {last['new tokens']} tokens the work on the whole sequence (b·N²) is "
            f"{last['N² share %']}% of the naive loop's time by the fit")
    last_range = _ranges(shares.iloc[-1:])
    if last_range:
        _, low, high = last_range[0]
        where = ("so these rounds cannot tell whether it is more or less than half" if low < 50 < high
                 else "more than half" if low >= 50 else "less than half")
        text += f" ({low:.0f}–{high:.0f}%: {where})"
    if _retries_only_later(table):
        text += (", a share the allocator's retries at the longer lengths inflate by an amount "
                 "not measured here")
    return text + "."
