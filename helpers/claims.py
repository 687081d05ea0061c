"""The article's claims, judged on a run's numbers (notebook 08): reproduced, not reproduced,
or no data. Each claim reads this run's ladder first and falls back to the table of the
notebook that measured it (``load_tables``); every verdict carries its evidence and source.
"""
from __future__ import annotations

import pandas as pd

from . import results
from .analysis import growth_exponent
from .harness import OK

REPRODUCED, NOT_REPRODUCED, NO_DATA = "reproduced", "not reproduced", "no data"
QUADRUPLE_RANGE = (3.5, 4.5)  # "runtime quadruples": the factor per doubling of the length
ABOUT_5X_MIN = 4.0  # "reaches about 5x": at least this speedup over the naive loop
TIE_FRACTION = 0.02  # medians closer than this (relative) are a tie, neither a win nor a loss


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
    naive, kv, source = _medians(ladder, "naive"), _medians(ladder, "kv cache"), "this run"
    if len(naive.index.intersection(kv.index)) < 2:
        table = tables.get("02_kv_cache")
        naive, kv, source = _medians(table, "naive"), _medians(table, "kv_cache"), "02_kv_cache"
    common = naive.index.intersection(kv.index)
    if len(common) < 2:
        return NO_DATA, "needs the naive and KV-cache loops at two lengths or more", source
    gains = naive[common] / kv[common]
    verdict = REPRODUCED if all(b > a for a, b in zip(gains.values, gains.values[1:])) else NOT_REPRODUCED
    return verdict, "KV cache speedup over naive: " + ", ".join(
        f"{int(n)} tokens {g:.1f}x" for n, g in gains.items()), source


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
    and 400 (this run's lengths first, notebook 04's table for the others)."""
    table04 = tables.get("04_static_cache")
    sources = [(ladder, "kv cache", "static cache", "this run"),
               (table04, "kv_cache (dynamic)", "static", "04_static_cache")]
    times, frags, used = {}, {}, []
    for frame, dyn, stat, source in sources:
        d, s = _medians(frame, dyn), _medians(frame, stat)
        fd, fs = _fragmentation_pairs(frame, dyn, stat)
        for n in d.index.intersection(s.index):
            if int(n) in (100, 200, 400) and int(n) not in times:
                times[int(n)] = (d[n], s[n])
                used.append(source)
                if n in fd.index:
                    frags[int(n)] = (fd[n], fs[n])
    if 100 not in times or not {200, 400} & set(times) or not frags:
        return NO_DATA, ("needs the dynamic and static caches at 100 tokens and at 200 or 400, "
                         "with fragmentation (a CUDA run)"), "this run, 04_static_cache"
    expected = {100: "loses", 200: "wins", 400: "wins"}
    parts, ok = [], True
    for n in sorted(times):
        d, s = times[n]
        result = ("ties" if abs(s - d) <= TIE_FRACTION * d else
                  "wins" if s < d else "loses")
        ok &= result == expected[n]
        parts.append(f"{n} tokens {result} ({s * 1e3:.0f} vs {d * 1e3:.0f} ms)")
    lower = all(fs < fd for fd, fs in frags.values())
    ok &= lower
    parts.append("fragmentation " + ", ".join(f"{n}: {fs:.1f}% vs {fd:.1f}%"
                                              for n, (fd, fs) in sorted(frags.items())))
    missing = sorted({100, 200, 400} - set(times))
    if missing:
        parts.append(f"no data at {missing}")
    return (REPRODUCED if ok else NOT_REPRODUCED), "static against dynamic: " + "; ".join(parts), \
        ", ".join(dict.fromkeys(used))


def _claim_compile_static(ladder, tables):
    ok = _ok(ladder)
    compiled = [] if ok is None else [m for m in ok["method"].unique()
                                       if m.startswith("static compiled")]
    static_eager, kv = _medians(ladder, "static cache"), _medians(ladder, "kv cache")
    kv_compiled = _medians(ladder, "kv cache, compiled (dynamic shapes)")
    if not compiled or not len(kv_compiled):
        return NO_DATA, "needs compiled loops with the static and with the dynamic cache", "this run"
    best = ok[ok["method"].isin(compiled)].groupby("seq_len")["median_s"].min()
    common = best.index.intersection(static_eager.index).intersection(kv_compiled.index)
    common = common.intersection(kv.index)
    if not len(common):
        return NO_DATA, "no length with both compiled loops and their eager baselines", "this run"
    with_static = static_eager[common] / best[common]
    with_dynamic = kv[common] / kv_compiled[common]
    verdict = REPRODUCED if (with_static > with_dynamic).all() else NOT_REPRODUCED
    return verdict, "compile's speedup, static cache against dynamic cache: " + ", ".join(
        f"{int(n)} tokens {s:.2f}x vs {d:.2f}x" for n, s, d in
        zip(common, with_static, with_dynamic)), "this run"


def _claim_interleave_small_batch(ladder, tables):
    table = _ok(tables.get("07_stream_interleaving"))
    if table is None or "batch_size" not in table:
        return NO_DATA, "needs notebook 07's batch sweep", "07_stream_interleaving"
    regimes = table["regime"].unique() if "regime" in table else [None]
    parts, ok, any_data = [], True, False
    for regime in regimes:
        part = table if regime is None else table[table["regime"] == regime]
        times = part.pivot_table(index="batch_size", columns="method", values="median_s")
        if not {"sync", "interleaved"} <= set(times.columns) or len(times) < 2:
            continue
        any_data = True
        saved = 100 * (1 - times["interleaved"] / times["sync"])
        ok &= saved.idxmax() == saved.index.min()
        parts.append(f"{regime or 'all'}: saved " + ", ".join(
            f"batch {int(b)} {v:.0f}%" for b, v in saved.items()))
    if not any_data:
        return NO_DATA, "needs the sync and interleaved loops at two batch sizes or more", \
            "07_stream_interleaving"
    return (REPRODUCED if ok else NOT_REPRODUCED), "; ".join(parts), "07_stream_interleaving"


def _claim_five_x(ladder, tables):
    naive, fast = _medians(ladder, "naive"), _medians(ladder, "interleaved (compiled)")
    common = naive.index.intersection(fast.index)
    if not len(common):
        return NO_DATA, "needs the naive loop and the compiled interleaved loop", "this run"
    gains = naive[common] / fast[common]
    at = 100 if 100 in gains.index else gains.index.min()
    verdict = REPRODUCED if gains[at] >= ABOUT_5X_MIN else NOT_REPRODUCED
    return verdict, (f"compiled + interleaved over naive: " + ", ".join(
        f"{int(n)} tokens {g:.1f}x" for n, g in gains.items()) +
        f" (judged at {int(at)} tokens, about 5x = at least {ABOUT_5X_MIN:g}x)"), "this run"


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
