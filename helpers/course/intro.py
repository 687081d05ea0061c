"""The two ideas of notebook 00 made visible: the rounds of an interleaved comparison, the floor
as bytes over bandwidth, and what an A/A comparison's interval resolves; and notebook 01's
readings of its fit (the measured doubling, a and b in plain words) and of its memory."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import floor as _floor
from . import analysis, budget, growth, harness, stats
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


def resolution(ratio, judge: bool) -> str:
    """What an A/A comparison's interval says about this run, in B's time against A's: the
    rounds are consistent with B taking from 1 - 1/high less to 1/low - 1 more time than A (not
    symmetric: e.g. 25% less to 8% more). Empty without an interval."""
    if not judge or ratio.n < stats.MIN_TRIALS or not math.isfinite(ratio.low) \
            or not math.isfinite(ratio.high):
        return ""
    if stats.verdict(ratio) != stats.NOISE:  # identical loops told apart: say what that means
        return ("identical loops told apart: a false alarm, which a 95% interval gives about one "
                "run in twenty, or more often when the host's speed drifts during the rounds; "
                "every later verdict of this run carries that risk, which is why the course "
                "compares runs (docs/runs.md)")
    return (f"these {ratio.n} rounds are consistent with B taking anywhere from "
            f"{100 * (1 - 1 / ratio.high):.0f}% less to {100 * (1 / ratio.low - 1):.0f}% more "
            "time than A")


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


def doubling(table) -> str:
    """Notebook 01: the measured doubling of the runtime (``growth.measured_growth``, medians),
    with the range of the rounds' own ratios where the lengths ran in the same rounds, and how
    they compare with the 4x of the article's "doubling quadruples the time"."""
    g = growth.measured_growth(table)
    k = g["factor"]
    q = k * k
    ok = table[table["status"] == harness.OK].set_index("seq_len")
    short, long = (harness.trials(ok.loc[n]) for n in (g["short"], g["long"]))
    ratios = [b / a for a, b in zip(short, long)] if len(short) == len(long) > 1 else []
    what = "Doubling the length" if k == 2 else f"{k:g}x the length"
    text = (f"{what} ({g['short']} -> {g['long']} tokens) multiplied the median runtime by "
            f"{g['ratio']:.2f}x")
    if ratios:
        text += f" ({min(ratios):.2f}x to {max(ratios):.2f}x in single rounds)"
    if k != 2:
        return text + f"; {q:g}x is pure N², {k:g}x a constant cost per step."
    low, high = (min(ratios), max(ratios)) if ratios else (g["ratio"], g["ratio"])
    where = ("every round's ratio was below 4x" if high < q else "every round's ratio was 4x or more"
             if low >= q else "some rounds' ratios reached 4x, others did not") if ratios else \
        ("the medians' ratio reached 4x" if g["ratio"] >= q else "the medians' ratio stayed below 4x")
    return (text + "; the article's \"doubling quadruples the time\" is pure N²'s 4x, a constant "
            f"cost per step gives 2x: {where}.")


def terms(table) -> str:
    """Notebook 01: the fit in plain words. The median total times are fitted as a·N + b·N²
    (``growth.fit``): a is the part of every step that does not grow with N, b what each token of
    length adds to the average step (which costs a + b·N); the two terms are equal at N = a/b.
    Where the allocator retried in the timed runs (``alloc_retries``) it says so, and
    ``gpu_growth`` compares b with the GPU's own work."""
    f = growth.fit(table)
    text = (f"Fitting the median total times as a·N + b·N² gives a = {f['a_ms']:.2f} ms, the part "
            f"of every step that does not grow with N, and b = {f['b_us']:.1f} µs, what each token "
            "of length adds to the average step (which costs a + b·N)")
    if f["a_ms"] > 0 and f["b_us"] > 0:
        text += f"; the two terms are equal at N = a/b ≈ {1e3 * f['a_ms'] / f['b_us']:.0f} tokens"
    text += "."
    ok = table[table["status"] == harness.OK].sort_values("seq_len")
    retries = ok["alloc_retries"].fillna(0) if "alloc_retries" in ok else pd.Series(dtype=float)
    hit = [int(n) for n, t in zip(ok["seq_len"], retries) if t > 0]
    if hit:
        text += (f" The timed runs at {_tokens(hit)} include {int(retries.sum())} allocator retries "
                 "(memory line below).")
    return text + gpu_growth(ok, f["b_us"], bool(hit))


RETRY_MARGIN = 1.10  # one b this much above the other: it grows faster


def gpu_growth(ok, b_us: float, retries: bool = False) -> str:
    """Notebook 01: b of the wall clock against b of the GPU's work alone (the same fit to the
    profiled busy time, ``gpu_busy_s``), "faster", "slower" or "about as fast" by ``RETRY_MARGIN``.
    Faster: at short lengths the GPU waits for the host, and its growing work first fills that
    wait, so the GPU can set the pace below the wall clock's a/b. Slower: the wall clock's b also
    holds time outside the GPU's work (the allocator's retries add such time). Empty without the
    GPU's work (a CPU run)."""
    busy = ok["gpu_busy_s"].astype(float) if "gpu_busy_s" in ok else pd.Series(dtype=float)
    if len(busy) < 2 or not (busy > 0).all():
        return ""
    gpu_b = 1e6 * analysis.linear_quadratic_fit(ok["seq_len"], busy)[1]
    said = f"(b = {gpu_b:.1f} µs against the wall clock's {b_us:.1f})"
    if gpu_b > RETRY_MARGIN * b_us:
        return (f" The GPU's work alone grows faster {said}: at short lengths the GPU waits for "
                "the host, and its growing work first fills that wait, so the GPU can set the "
                "pace below N = a/b.")
    if b_us > RETRY_MARGIN * gpu_b:
        why = "which the retries add" if retries else "which grows with the length"
        return (f" The GPU's work alone grows more slowly {said}: the wall clock's b also holds "
                f"time outside the GPU's work, {why}.")
    return f" The GPU's work alone grows about as fast {said}."


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
    return (f"A timed naive step at {n1} tokens ({naive:.2f} ms) is shorter than notebook 00's "
            f"KV-cache step at {n0} tokens in this run ({kv:.2f} ms), though it recomputes every "
            "position: notebook 02 shows why (the host's work per step).")


CARD_FULL = 0.95  # a peak reserve within 5% of the card's memory: the allocator filled the card


def card_reading(table, total_bytes) -> str:
    """Notebook 01: whether the allocator's reserve filled the card. Lengths whose peak reserved
    memory came within 5% of the card's ``total_bytes``, or whose timed runs made the allocator
    free its cached blocks and retry (``alloc_retries``, summed over the timed runs), are named:
    there it filled the card and had to ask the driver again, which costs time inside those runs.
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
            f"{top / 2**30:.1f} GiB of the card's {card}")
    if retries:
        return text + (f" and it had to free its cache and retry, {retries} times over the timed "
                       "runs: time added to those runs (notebook 03 is about this).")
    return text + ", close to filling the card (notebook 03 is about this)."
