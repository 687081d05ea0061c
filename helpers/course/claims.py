"""The article's claims, judged on a run's numbers (notebook 08): reproduced, not reproduced,
inconclusive, or no data. Each claim reads this run's ladder first and falls back to the table
of the notebook that measured it (``load_tables``); every verdict carries its evidence and
source. Timing claims are judged only through ``stats`` (95% intervals over interleaved
trials): a difference the noise cannot support makes a claim inconclusive, never a win or a
loss; a claim whose premise does not hold on this GPU is judged where it holds, or marked so.
"""
from __future__ import annotations

import pandas as pd

from . import results, stats
from .analysis import growth_exponent
from .harness import OK

REPRODUCED, NOT_REPRODUCED, NO_DATA = "reproduced", "not reproduced", "no data"
INCONCLUSIVE = "inconclusive: within noise"
PREMISE_NOT_MET = "inconclusive: premise not met"
QUADRUPLE_RANGE = (3.5, 4.5)  # "runtime quadruples": the factor per doubling of the length
ABOUT_5X_MIN = 4.0  # "reaches about 5x": the whole interval of the speedup at least this


def _combine(outcomes) -> str:
    """A claim made of several parts: any part clearly against it -> not reproduced; else any
    part inside the noise -> inconclusive; else reproduced."""
    outcomes = list(outcomes)
    if NOT_REPRODUCED in outcomes:
        return NOT_REPRODUCED
    if INCONCLUSIVE in outcomes:
        return INCONCLUSIVE
    return REPRODUCED


def _expect(ratio, expected: str) -> str:
    """Compare a speedup's verdict with the one the claim expects."""
    word = stats.verdict(ratio)
    if word == stats.NOISE:
        return INCONCLUSIVE
    return REPRODUCED if word == expected else NOT_REPRODUCED


def _trials(frame, method, **where):
    frame = _ok(frame)
    return [] if frame is None else stats.method_trials(frame, method, **where)


def _speedup(frame, candidate, baseline, **where) -> stats.Ratio:
    return stats.row_speedup(_ok(frame), candidate, baseline, **where) if _ok(frame) is not None \
        else stats.Ratio(float("nan"), float("nan"), float("nan"), 0)


def _ok(frame):
    """The rows that ran (all rows of a table without a status); None without a table."""
    if frame is None or "method" not in frame:
        return None
    return frame[frame["status"] == OK] if "status" in frame else frame


def _medians(frame, method, column="median_s"):
    """``column`` by length for one method's ok rows (empty if the table or method is absent)."""
    frame = _ok(frame)
    if frame is None or column not in frame:
        return pd.Series(dtype=float)
    part = frame[frame["method"] == method]
    return part.groupby("seq_len")[column].median().dropna()


def _ms(series):
    return ", ".join(f"{int(n)}: {v * 1e3:.0f} ms" for n, v in series.items())


def _claim_quadratic(ladder, tables):
    times, source = _medians(ladder, "naive"), "this run"
    if len(times) < 2:
        times, source = _medians(tables.get("01_naive_generation"), "naive"), "01_naive_generation"
    if len(times) < 2:
        return NO_DATA, "needs the naive loop at two lengths or more", source
    k = growth_exponent(times.index, times.values)
    low, high = QUADRUPLE_RANGE
    verdict = REPRODUCED if low <= 2**k <= high else NOT_REPRODUCED
    return verdict, (f"naive loop {_ms(times)}: time ~ N^{k:.2f}, x{2**k:.2f} per doubling "
                     f"(quadrupling: {low:g} to {high:g})"), source


def _claim_kv_gain(ladder, tables):
    for frame, kv_name, source in ((ladder, "kv cache", "this run"),
                                   (tables.get("02_kv_cache"), "kv_cache", "02_kv_cache")):
        naive, kv = _medians(frame, "naive"), _medians(frame, kv_name)
        common = naive.index.intersection(kv.index)
        if len(common) >= 2:
            break
    else:
        return NO_DATA, "needs the naive and KV-cache loops at two lengths or more", source
    short, long = common.min(), common.max()
    pairs = [(_trials(frame, kv_name, seq_len=n), _trials(frame, "naive", seq_len=n))
             for n in (short, long)]
    growth = stats.speedup_growth(*pairs)
    verdict = {stats.FASTER: REPRODUCED, stats.SLOWER: NOT_REPRODUCED,
               stats.NOISE: INCONCLUSIVE}[stats.verdict(growth)]
    gains = ", ".join(f"{int(n)} tokens {_speedup(frame, kv_name, 'naive', seq_len=n)}"
                      for n in common)
    return verdict, (f"KV cache speedup over naive: {gains}; growth {int(long)} against "
                     f"{int(short)} tokens: {growth}"), source


def _fragmentation_pairs(frame, base, other):
    a = _medians(frame, base, "fragmentation_pct")
    b = _medians(frame, other, "fragmentation_pct")
    common = a.index.intersection(b.index)
    return a[common], b[common]


def _claim_expandable(ladder, tables):
    candidates = [(ladder, "kv cache", "kv cache, expandable_segments:True", "this run"),
                  (tables.get("03_expandable_segments"), "default", "expandable_segments:True",
                   "03_expandable_segments")]
    for frame, base, other, source in candidates:
        default, expandable = _fragmentation_pairs(frame, base, other)
        if len(default):
            verdict = REPRODUCED if (expandable < default).all() else NOT_REPRODUCED
            return verdict, "fragmentation, default against expandable segments: " + ", ".join(
                f"{int(n)} tokens {d:.1f}% vs {e:.1f}%"
                for n, d, e in zip(default.index, default, expandable)), source
    return NO_DATA, "needs peak fragmentation (a CUDA run) with and without expandable segments", \
        "03_expandable_segments"


def _claim_static(ladder, tables):
    """Static cache: lower fragmentation at every length; slower at 100 tokens; faster at 200
    and 400 (this run's lengths first, notebook 04's table for the others), each by the
    interval of its interleaved trials."""
    table04 = tables.get("04_static_cache")
    sources = [(ladder, "kv cache", "static cache", "this run"),
               (table04, "kv_cache (dynamic)", "static", "04_static_cache")]
    found, frags, used = {}, {}, []
    for frame, dyn, stat, source in sources:
        d, st = _medians(frame, dyn), _medians(frame, stat)
        fd, fs = _fragmentation_pairs(frame, dyn, stat)
        for n in d.index.intersection(st.index):
            if int(n) in (100, 200, 400) and int(n) not in found:
                found[int(n)] = _speedup(frame, stat, dyn, seq_len=n)
                used.append(source)
                if n in fd.index:
                    frags[int(n)] = (fd[n], fs[n])
    if 100 not in found or not {200, 400} & set(found) or not frags:
        return NO_DATA, ("needs the dynamic and static caches at 100 tokens and at 200 or 400, "
                         "with fragmentation (a CUDA run)"), "this run, 04_static_cache"
    expected = {100: stats.SLOWER, 200: stats.FASTER, 400: stats.FASTER}
    outcomes, parts = [], []
    for n in sorted(found):
        outcomes.append(_expect(found[n], expected[n]))
        parts.append(f"{n} tokens static/dynamic speedup {found[n]}: {stats.verdict(found[n])}")
    outcomes.append(REPRODUCED if all(fs < fd for fd, fs in frags.values()) else NOT_REPRODUCED)
    parts.append("fragmentation " + ", ".join(f"{n}: {fs:.1f}% vs {fd:.1f}%"
                                              for n, (fd, fs) in sorted(frags.items())))
    missing = sorted({100, 200, 400} - set(found))
    if missing:
        parts.append(f"no data at {missing}")
    return _combine(outcomes), "static against dynamic: " + "; ".join(parts), \
        ", ".join(dict.fromkeys(used))


def _claim_compile_static(ladder, tables):
    ok = _ok(ladder)
    compiled = [] if ok is None else [m for m in ok["method"].unique()
                                       if m.startswith("static compiled")]
    if not compiled or not len(_medians(ladder, "kv cache, compiled (dynamic shapes)")):
        return NO_DATA, "needs compiled loops with the static and with the dynamic cache", "this run"
    outcomes, parts = [], []
    for n in sorted(ok["seq_len"].unique()):
        best = ok[ok["method"].isin(compiled) & (ok["seq_len"] == n)].sort_values("median_s")
        dyn = (_trials(ladder, "kv cache, compiled (dynamic shapes)", seq_len=n),
               _trials(ladder, "kv cache", seq_len=n))
        if not len(best) or not all(dyn):
            continue
        static = (_trials(ladder, best["method"].iloc[0], seq_len=n),
                  _trials(ladder, "static cache", seq_len=n))
        if not all(static):
            continue
        # compile's speedup with the static cache over its speedup with the dynamic cache
        more = stats.speedup_growth(dyn, static)
        outcomes.append(_expect(more, stats.FASTER))
        parts.append(f"{int(n)} tokens: static {stats.speedup(*static)} against dynamic "
                     f"{stats.speedup(*dyn)}, ratio {more}")
    if not parts:
        return NO_DATA, "no length with both compiled loops and their eager baselines", "this run"
    return _combine(outcomes), "compile's speedup, static cache against dynamic cache: " + \
        "; ".join(parts), "this run"


def _claim_interleave_small_batch(ladder, tables):
    """The article's premise: the stop check costs time that interleaving can hide, i.e. the
    GPU, not the CPU, sets the pace. Judged in each regime where the check's cost is clear of
    the noise at every batch size; elsewhere the premise is not met on this GPU."""
    table = _ok(tables.get("07_stream_interleaving"))
    if table is None or "batch_size" not in table or "trials_wall_ms" not in table:
        return NO_DATA, "needs notebook 07's batch sweep with its trials", "07_stream_interleaving"
    regimes = table["regime"].unique() if "regime" in table else [None]
    outcomes, parts = [], []
    for regime in regimes:
        part = table if regime is None else table[table["regime"] == regime]
        batches = sorted(part["batch_size"].unique())
        if len(batches) < 2:
            continue
        cost = {b: stats.row_speedup(part, "no_check", "sync", batch_size=b) for b in batches}
        no_cost = [int(b) for b, r in cost.items() if stats.verdict(r) != stats.FASTER]
        if no_cost:
            parts.append(f"{regime}: premise not met, the check's cost is within noise at batch "
                         f"{no_cost} (the loop is CPU-bound: no check is not clearly faster)")
            continue
        pairs = {b: (_trials(part, "interleaved", batch_size=b), _trials(part, "sync", batch_size=b))
                 for b in batches}
        smallest = batches[0]
        against = [stats.speedup_growth(pairs[b], pairs[smallest]) for b in batches[1:]]
        outcomes.append(_combine(_expect(r, stats.FASTER) for r in against))
        parts.append(f"{regime}: interleaved over sync " + ", ".join(
            f"batch {int(b)} {stats.row_speedup(part, 'interleaved', 'sync', batch_size=b)}"
            for b in batches))
    if not parts:
        return NO_DATA, "needs the sync and interleaved loops at two batch sizes or more", \
            "07_stream_interleaving"
    verdict = _combine(outcomes) if outcomes else PREMISE_NOT_MET
    return verdict, "; ".join(parts), "07_stream_interleaving"


def _claim_five_x(ladder, tables):
    naive, fast = _medians(ladder, "naive"), _medians(ladder, "interleaved (compiled)")
    common = naive.index.intersection(fast.index)
    if not len(common):
        return NO_DATA, "needs the naive loop and the compiled interleaved loop", "this run"
    gains = {n: _speedup(ladder, "interleaved (compiled)", "naive", seq_len=n) for n in common}
    at = 100 if 100 in gains else min(gains)
    ratio = gains[at]
    if ratio.n < stats.MIN_TRIALS:
        verdict = INCONCLUSIVE
    elif ratio.low >= ABOUT_5X_MIN:
        verdict = REPRODUCED
    elif ratio.high < ABOUT_5X_MIN:
        verdict = NOT_REPRODUCED
    else:
        verdict = INCONCLUSIVE
    return verdict, ("compiled + interleaved over naive: " + ", ".join(
        f"{int(n)} tokens {g}" for n, g in gains.items()) +
        f" (judged at {int(at)} tokens: about 5x = the whole interval at least {ABOUT_5X_MIN:g}x)"), \
        "this run"


CLAIMS = {
    "Runtime quadruples when the length doubles (naive loop)": _claim_quadratic,
    "The KV cache's gain grows with length": _claim_kv_gain,
    "Expandable segments cut fragmentation": _claim_expandable,
    "The static cache lowers fragmentation, loses at 100 tokens, wins at 200 and 400": _claim_static,
    "Compile helps most with the static cache": _claim_compile_static,
    "Interleaving gains most at the smallest batch": _claim_interleave_small_batch,
    "Compile plus interleaving reaches about 5x the baseline": _claim_five_x,
}


def check_claims(ladder, tables=None):
    """Each claim of the article judged on data: ``ladder`` is this run's table (methods of
    ``helpers.bench.course_methods`` by length), ``tables`` maps other notebooks' table names (e.g.
    ``"03_expandable_segments"``) to their frames, or None where absent. Returns a frame with
    claim, verdict (reproduced / not reproduced / no data), evidence and source."""
    tables = tables or {}
    rows = []
    for claim, judge in CLAIMS.items():
        verdict, evidence, source = judge(ladder, tables)
        rows.append({"claim": claim, "verdict": verdict, "evidence": evidence, "source": source})
    return pd.DataFrame(rows)


def load_tables(names):
    """Other notebooks' tables by name (this run's folder first, then figures/data); None for
    a table that exists in neither."""
    found = {}
    for name in names:
        try:
            found[name] = results.load_table(name)
        except FileNotFoundError:
            found[name] = None
    return found
