"""Notebook 04's measurement and analysis, kept out of the lesson: the two eager loops
(dynamic cache and static cache sized to the run) as interleaved trials, and each loop's own
memory.

``measure`` returns one table; ``shown`` is its readable view; ``plot_runs_range`` adds the
runs' spread to the time-budget panel.
"""
from __future__ import annotations

import math
import warnings

import pandas as pd
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import DynamicCache

from ..generation import generate_kv_cache
from ..static import attention_work, generate_static_cache, make_static_cache, sdpa_calls
from . import budget, harness, presets, stats
from .claims import CACHE_DYNAMIC as DYNAMIC, CACHE_STATIC as STATIC  # the names 08's claim reads

# One name per loop in every table, figure and sentence.
EAGER = METHODS = [DYNAMIC, STATIC]


def bytes_per_position(model, batch_size, dtype_bytes=4) -> int:
    """Keys and values of one cache position, every layer and row."""
    cfg = model.config
    return 2 * cfg.n_layer * batch_size * cfg.n_embd * dtype_bytes


def cache_bytes(cache) -> int:
    """The bytes of a static cache's key and value tensors, read from the tensors."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


class OpCount(TorchDispatchMode):
    """Counts the PyTorch operations dispatched inside the block (``with OpCount() as ops``, then
    ``ops.count``): every ATen operation, views included. In eager mode each one is host work
    (Python, dispatch, a kernel launch for most), whatever the GPU then does with it."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def attention_inputs(model, prompt, device) -> pd.DataFrame:
    """What ``scaled_dot_product_attention`` receives in one decode step after the prompt,
    with a dynamic cache and with a static cache of prompt + 8 positions (the keys of one layer),
    whether that step moved layer 0's keys to a new address (the dynamic cache's new, larger
    tensor), and how many PyTorch operations the host dispatched for the step (``OpCount``:
    counted, not timed). Short column names: the table prints within 80 characters."""
    rows = []
    with torch.no_grad():
        for name, cache in (("dynamic", DynamicCache(config=model.config)),
                            ("static", make_static_cache(model, prompt.shape[0],
                                                         prompt.shape[1] + 8, device))):
            with sdpa_calls() as calls:
                model(prompt, past_key_values=cache, use_cache=True)
                address = cache.layers[0].keys.data_ptr()
                with OpCount() as ops:
                    model(prompt[:, :1], past_key_values=cache, use_cache=True)
            last = calls[-1]
            rows.append({"cache": name, "filled positions": prompt.shape[1] + 1,
                         "keys attended": last["keys"], "mask": last["mask"],
                         "keys moved": cache.layers[0].keys.data_ptr() != address,
                         "ops per step": ops.count})
    return pd.DataFrame(rows).set_index("cache")


def reads_line(prompt_len, seq_lens) -> str:
    """What a static cache sized to the run reads per decode step against the positions filled
    on average: (prompt + N) ÷ (prompt + N/2) for N new tokens, approaching 2."""
    each = ", ".join(f"{(prompt_len + n) / (prompt_len + n / 2):.2f}x at {n} tokens"
                     for n in sorted(seq_lens))
    return (f"Per decode step a static cache sized to the run reads all prompt + N positions, while "
            f"on average prompt + N/2 are filled ({prompt_len}-token prompt); positions read ÷ "
            f"filled per step: {each}, approaching 2 as runs grow longer.")


def own_peak_bytes(fn, device) -> float:
    """Peak memory one call of ``fn`` allocates above what was allocated before it (NaN on a
    CPU). ``fn`` builds its own cache, so only that loop's cache is alive."""
    if torch.device(device).type != "cuda":
        return float("nan")
    harness.release_memory(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    fn()
    harness.sync(device)
    return float(torch.cuda.max_memory_allocated(device) - before)


def _work(P, seq_len, cache_len, pairs="static_pairs") -> dict:
    work = attention_work(P.prompt_len, seq_len, cache_len)
    return {"cache_len": cache_len, "attended_pairs": work[pairs],
            "useful_pairs": work["useful_pairs"],
            "attended_over_useful": work[pairs] / work["useful_pairs"]}


def _point(model, prompt, eos, P, seq_len) -> list:
    sizes = {DYNAMIC: None, STATIC: P.prompt_len + seq_len}
    per_position = bytes_per_position(model, P.batch_size)
    calls, extra, own = {}, {}, {}
    for method, cache_len in sizes.items():
        if cache_len is None:
            calls[method] = lambda: generate_kv_cache(model, prompt, seq_len, eos)  # noqa: E731
            # the cache at the end of the run: prompt + every decoded position
            extra[method] = {**_work(P, seq_len, P.prompt_len + seq_len, "dynamic_pairs"),
                             "cache_bytes": per_position * (P.prompt_len + seq_len - 1)}
            own[method] = calls[method]
        else:
            cache = make_static_cache(model, P.batch_size, cache_len, P.device)
            calls[method] = lambda c=cache: generate_static_cache(model, prompt, seq_len, eos,  # noqa: E731
                                                                  cache=c)
            extra[method] = {**_work(P, seq_len, cache_len), "cache_bytes": cache_bytes(cache)}
            own[method] = lambda n=cache_len: generate_static_cache(  # noqa: E731
                model, prompt, seq_len, eos,
                cache=make_static_cache(model, P.batch_size, n, P.device))
    cache = None  # the static cache lives on in calls only, freed below
    rows, _ = harness.compare_row(calls, device=P.device, batch_size=P.batch_size,
                                  seq_len=seq_len, repeats=P.repeats, warmup=P.warmup,
                                  budget_s=P.budget_s, busy=True)
    del calls
    for method, fn in own.items():  # each loop alone, its cache built inside the call
        extra[method]["own_peak_bytes"] = own_peak_bytes(fn, P.device)
    return [{**row, **extra[row["method"]]} for row in rows]


def measure(model, prompt, eos, P) -> pd.DataFrame:
    """Every loop at every length of ``P.seq_lens``: one table (a row per loop and length)."""
    with warnings.catch_warnings():
        # the profiler behind busy=True warns that it keeps only its last cycle: expected
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        return harness.sweep(P.seq_lens, lambda n: _point(model, prompt, eos, P, n),
                             desc="dynamic vs static")


def shown(table) -> pd.DataFrame:
    """The measurement table in readable units, one row per loop and length: median wall clock
    and GPU work (round 28: no "positions" column, the static cache's size shown on the dynamic
    cache's rows too; the text above the call says the static cache is sized to the run)."""
    out = pd.DataFrame({
        "tokens": table["seq_len"], "loop": table["method"],
        "wall ms": (1e3 * table["median_s"]).round(1),
        "GPU ms": (1e3 * table["gpu_busy_s"]).round(1)})
    return out.set_index(["tokens", "loop"])


ARTICLE = {100: stats.SLOWER, 200: stats.FASTER, 400: stats.FASTER}  # the article's static
# cache against the dynamic one, in the verdict's words (``answer_line``'s)


def eager_verdict(table, seq_len, judge: bool) -> str:
    """The static cache against the dynamic one in the eager loop, at one length (the article's
    finding is ``answer_line``'s)."""
    ratio = stats.row_speedup(table, STATIC, DYNAMIC, seq_len=seq_len)
    if judge and ratio.n >= stats.MIN_TRIALS and stats.verdict(ratio) == stats.NOISE \
            and all(0 < x < math.inf for x in (ratio.low, ratio.high)):
        said = f"can't tell apart on this machine ({_time_range(table, ratio, seq_len)})"
    elif judge and ratio.n < stats.MIN_TRIALS and 0 < ratio.estimate < math.inf:
        said = (f"the static cache took {1 / ratio.estimate:.2f}x the dynamic cache's time (only "
                f"{ratio.n} runs: too few to judge{_medians_time(table, 1 / ratio.estimate, seq_len)})")
    else:
        said = stats.say(table, STATIC, DYNAMIC, judge, seq_len=seq_len)
    return f"{seq_len} tokens, eager: the static cache against the dynamic one: {said}."


def _time_range(table, ratio, n) -> str:
    """Where the rounds cannot tell the caches apart, the range as the other lines run: the
    static cache's time over the dynamic cache's ("the static cache took 0.94–1.30x the dynamic cache's
    time"), and the table's medians in the same direction where they are more than
    ``stats.MEDIANS_APART`` from the rounds' ratio ("1.08x slower", "1.05x faster"). Round 24
    misread "(0.77–1.06; the table's medians: 0.93x, i.e. 1.08x slower)", a speedup's range,
    beside lines that give the static cache's time over the dynamic one's."""
    low, high = 1 / ratio.high, 1 / ratio.low
    digits = stats._digits(low, high)
    line = f"the static cache took {low:.{digits}f}\u2013{high:.{digits}f}x the dynamic cache's time"
    return line + _medians_time(table, 1 / ratio.estimate, n, low, high, digits)


def _medians_time(table, took, n, low=None, high=None, digits=2) -> str:
    """"; the table's medians: 1.08x slower" (or "faster": the static cache's median against the
    dynamic cache's, in words) where they are more than ``stats.MEDIANS_APART`` from ``took``
    (the rounds' static time over dynamic time) or print outside ``low``-``high``; else empty."""
    medians = stats.medians_ratio(stats.method_trials(table, STATIC, seq_len=n),
                                  stats.method_trials(table, DYNAMIC, seq_len=n))  # > 1: static faster
    if not 0 < medians < math.inf:
        return ""
    outside = low is not None and not round(low, digits) <= round(1 / medians, digits) <= round(high, digits)
    if not (stats.medians_apart(medians, 1 / took) or outside):
        return ""
    if f"{medians:.2f}" == "1.00":  # round 37: 0.997 printed "1.00x faster", a direction it lacks
        return "; the table's medians: about the same"
    return "; the table's medians: " + (f"{1 / medians:.2f}x {stats.SLOWER}" if medians < 1
                                        else f"{medians:.2f}x {stats.FASTER}")


SAME_GPU = 0.05  # GPU work within 5% counts as the same (as budget.sentence's "about the same")


def _per_step(table, seq_lens) -> dict:
    """(wall clock, GPU work) per decode step in ms of each cache at each length, keyed
    (length, method): ``budget.per_step``'s values, the figure's and the budget sentence's."""
    steps = {}
    for n in seq_lens:
        b = budget.per_step(table, [STATIC, DYNAMIC], seq_len=n).set_index("method")
        steps.update({(n, m): (b.at[m, "wall_ms"], b.at[m, "gpu_ms"]) for m in b.index})
    return steps


def _timed(steps, seq_lens) -> bool:
    """Whether ``_per_step`` holds both caches at every length with their GPU work (a CPU run
    has none): what every reading of the host's time needs."""
    return len(steps) >= 2 * len(seq_lens) and not any(
        math.isnan(g) or g <= 0 for _, g in steps.values())


def _told_apart(table, n):
    """The rounds' ratio of the static cache against the dynamic one at ``n`` tokens where they
    give a clear verdict (enough rounds, not "can't tell apart"); else None."""
    ratio = stats.row_speedup(table, STATIC, DYNAMIC, seq_len=n)
    return ratio if stats.verdict(ratio) != stats.NOISE else None  # NOISE with too few rounds


def memory_line(table, model, seq_len) -> str:
    """The two loops' memory at one length, in whole MiB, each read as one conclusion (about the
    same within ``SAME_MEMORY``, else the static cache's smaller or larger by so much):

    - allocated: each loop run alone (``own_peak_bytes``), its peak above what was allocated
      before, so its cache and temporaries only;
    - reserved but held by no tensor: a timed run's peak reserved minus its peak allocated, the
      fragments the article's static cache is meant to avoid (round 37: the line sent the reader
      to notebook 03 while this table held them). A timed run's peaks each count every live
      tensor, the weights and, in the dynamic loop's, the static cache kept for the other loop's
      trials (round 37: 2444 against 1569 MiB read as the loops' own); their difference does not.

    On a CPU run (no peak) a short note."""
    rows = table[(table["seq_len"] == seq_len) & table["method"].isin(EAGER)].set_index("method")
    rows = rows.dropna(subset=["own_peak_bytes"])
    if not {DYNAMIC, STATIC} <= set(rows.index):
        return f"Memory at {seq_len} tokens: no allocated peak on a CPU run."
    s, d = (int(f"{rows.at[m, 'own_peak_bytes'] / 2**20:.0f}") for m in (STATIC, DYNAMIC))
    if d <= 0:
        return f"Memory at {seq_len} tokens: no allocated peak on a CPU run."
    line = (f"Memory at {seq_len} tokens, each loop's peak allocated, run alone (its cache and "
            f"temporaries): {d} MiB with the dynamic cache, {s} MiB with the static one: "
            f"{_memory_said(s, d)}.")
    unused = rows["peak_reserved_bytes"] - rows["peak_allocated_bytes"]
    if unused.isna().any() or unused[DYNAMIC] <= 0:
        return line
    us, ud = (int(f"{unused[m] / 2**20:.0f}") for m in (STATIC, DYNAMIC))
    line += (f" Reserved by the allocator but held by no tensor (a timed run's peak reserved "
             f"minus its peak allocated): {ud} MiB with the dynamic cache, {us} MiB with the "
             f"static one: {_memory_said(us, ud)}")
    shows = us < ud and abs(us / ud - 1) > SAME_MEMORY
    return line + (". Less fragmentation is the article's reason for the static cache; this run "
                   + ("shows it." if shows else f"does not show it at {seq_len} tokens."))


def _memory_said(s, d) -> str:
    """The static cache's MiB against the dynamic cache's, in words."""
    return ("about the same" if abs(s / d - 1) <= SAME_MEMORY
            else f"{abs(s - d)} MiB {'smaller' if s < d else 'larger'} with the static cache")


SAME_MEMORY = 0.05  # peaks within 5% read "about the same"


def _idle(wall_ms, gpu_ms) -> float:
    """Wall clock minus GPU work per step, from the two values rounded to 0.01 ms as printed:
    the same number the budget sentence gives (``budget.printed_idle``), so no line reads
    4.74 ms where the budget's reads 4.73."""
    return budget.printed_idle({"wall_ms": wall_ms, "gpu_ms": gpu_ms})


def host_lengths(table, seq_lens, inputs=None) -> dict:
    """{length: the static cache's host time per step less the dynamic cache's, in ms} at each
    length where the rounds tell the caches apart (a clear verdict) and the GPU's work per step was
    about the same (within ``SAME_GPU``): there the gap is the host's. Host time is the GPU's idle
    time (wall clock minus GPU work per step, each rounded as the budget sentence prints them).
    ``inputs`` is accepted and unused (round 25 dropped the rules that read it). Empty on a CPU run."""
    steps = _per_step(table, seq_lens)
    if not _timed(steps, seq_lens):
        return {}
    out = {}
    for n in sorted(seq_lens):
        (ws, gs), (wd, gd) = steps[(n, STATIC)], steps[(n, DYNAMIC)]
        # told apart by the rounds, not by the table's medians alone: "can't tell apart" and "the gap
        # is the host's" would contradict each other
        if _told_apart(table, n) is not None and abs(gs / gd - 1) <= SAME_GPU:
            out[n] = round(_idle(ws, gs) - _idle(wd, gd), 2)
    return out


def host_line(table, seq_lens, inputs=None) -> str:
    """``host_lengths`` in one sentence: the lengths where the gap is the host's, and why there.
    Empty where no length qualifies, and on a CPU run."""
    extra = host_lengths(table, seq_lens)
    if not extra:
        return ""
    return (f"The gap is the host's at {stats.listed(list(extra))} tokens: there the rounds tell "
            f"the caches apart and the GPU's work per step is about the same (within {SAME_GPU:.0%}).")


def host_ratios(table, seq_lens) -> dict:
    """{length: (static idle, dynamic idle, their ratio)} per decode step, each idle time as the
    budget sentence prints it (wall clock minus GPU work, each to 0.01 ms); empty on a CPU run."""
    steps = _per_step(table, seq_lens)
    if not _timed(steps, seq_lens):
        return {}
    out = {}
    for n in sorted(seq_lens):
        s, d = _idle(*steps[(n, STATIC)]), _idle(*steps[(n, DYNAMIC)])
        if s > 0 and d > 0:
            out[n] = (s, d, s / d)
    return out


def _table_gap(table, n) -> float:
    """The static step's idle time less the dynamic step's at ``n`` tokens, in ms, from ``shown``'s
    values (wall ms and GPU ms per run, to 0.1 ms) divided by the steps."""
    rows = shown(table).loc[n]
    idle = (rows["wall ms"] - rows["GPU ms"]) / n
    return float(idle[STATIC] - idle[DYNAMIC])


def _gaps(table, seq_lens, point=None) -> dict:
    """{length: the GPU's idle time per step, static minus dynamic, in ms} at each length the
    rounds tell the caches apart, as ``ops_line`` prints them; empty on a CPU run."""
    ratios = {n: r for n, r in host_ratios(table, seq_lens).items()
              if _told_apart(table, n) is not None}
    if not ratios:
        return {}
    at = point if point in ratios else list(ratios)[-1]
    # round 33: at the figure's length the gap of the idle times the budget sentence prints; at
    # the others, as a reader redoes it from the table above (1.44 ms, where rounding each step's
    # idle first gave 1.43)
    return {n: round(r[0] - r[1] if n == at else _table_gap(table, n), 2) + 0.0
            for n, r in ratios.items()}


def ops_line(table, seq_lens, inputs=None, point=None) -> str:
    """The gap in the GPU's idle time per step (static minus dynamic, as the budget sentence's
    idle times) at each length the rounds tell the caches apart: at ``point`` (the figure's
    length; else the longest) as the budget sentence prints it, at the others from the table.
    Round 36: a length the rounds cannot tell apart is left out, as its gap is only the medians'
    reading (2f157b6 printed -3.09 ms at 400 tokens beside "can't tell apart"). ``inputs`` is
    accepted and unused. Empty on a CPU run and where the rounds tell no length apart."""
    gaps = _gaps(table, seq_lens, point)
    if not gaps:
        return ""
    return (f"The GPU's idle time per step, static minus dynamic: "
            f"{stats.listed([f'{g:+.2f}' for g in gaps.values()])} ms at "
            f"{stats.listed([str(n) for n in gaps])} tokens.")


GAP_CHANGES = 1.5  # idle gaps this many times apart across lengths: not a fixed cost per step


def growth_line(table, seq_lens, inputs=None, point=None) -> str:
    """Round 37: the extra operations per step were the lesson's reason for the host's gap, but
    their count does not grow with the cache's length, while the gap grew (+1.35 ms at 200
    tokens, +3.94 at 400). Where ``ops_line``'s gaps share a sign and grow (or shrink) with length,
    the largest ``GAP_CHANGES`` times the smallest or more, a sentence saying that the count cannot
    explain it (with the two counts of ``inputs``, ``attention_inputs``'s table, where given) and
    that this lesson does not measure why; else empty (a gap that rises and falls may be noise)."""
    gaps = list(_gaps(table, seq_lens, point).values())
    sizes = [abs(g) for g in gaps]
    if len(sizes) < 2 or len({g > 0 for g in gaps}) > 1 or not min(sizes) > 0 \
            or max(sizes) / min(sizes) < GAP_CHANGES \
            or sizes not in (sorted(sizes), sorted(sizes)[::-1]):
        return ""
    way = "grows" if sizes == sorted(sizes) else "shrinks"
    counted = ""
    if inputs is not None and "ops per step" in inputs:
        ops = inputs["ops per step"]
        counted = f" ({int(ops[STATIC])} against {int(ops[DYNAMIC])} per step)"
    return (f"The extra operations counted above{counted} do not {way[:-1]} with the cache's "
            f"length, so they cannot explain a gap that {way} with it; this lesson does not "
            f"measure why the gap {way}.")


def drawn_length(table, seq_lens, judge: bool, inputs=None) -> int:
    """The length the figure draws: of the lengths the rounds tell apart, the one whose range lies
    farthest from 1 (its bound nearer 1, not the estimate: a wide range with a large estimate is
    not the clearest difference); else the longest. ``inputs`` is accepted and unused."""
    clear = {}
    for n in seq_lens if judge else []:
        if (ratio := _told_apart(table, n)) is not None:
            clear[n] = min(abs(math.log(ratio.low)), abs(math.log(ratio.high)))
    return max(clear, key=clear.get) if clear else max(seq_lens)


def drawn_line(table, seq_lens, point, judge: bool, inputs=None) -> str:
    """Which length the figure draws, and why (``drawn_length``'s choice) with its verdict."""
    if len(seq_lens) == 1:
        return (f"The figure draws {point} tokens, this run's only length."
                + (_bars_note(table, point, _told_apart(table, point), quoted=False) if judge else ""))
    if judge and (ratio := _told_apart(table, point)) is not None:
        word = "slower" if ratio.estimate < 1 else "faster"
        low, high = sorted(x if word == "faster" else 1 / x for x in (ratio.low, ratio.high))
        digits = stats._digits(low, high)
        told = [n for n in seq_lens if _told_apart(table, n) is not None]
        why = ("the only length where the rounds tell the caches apart" if len(told) == 1
               else "the length where the rounds tell the caches apart most clearly")
        # round 35: the range is the rounds'; the bars beneath it (1.02x) are median runs
        return (f"The figure draws {point} tokens, {why}: the static cache "
                f"{low:.{digits}f}\u2013{high:.{digits}f}x {word}, a range from the rounds; the "
                "bars are each loop's median run." + _bars_note(table, point, ratio)
                + _slowest_note(table, seq_lens, point))
    why = ("the rounds told the caches apart at no length" if judge
           else "a smoke run judges nothing")
    return f"The figure draws {point} tokens, the longest length ({why})."


def _bars_note(table, point, ratio, quoted=True) -> str:
    """Round 33: the bars (each loop's median run) gave 1.49x beside "1.14\u20131.48x slower": where
    the bars' ratio, in the range's direction and digits, prints outside the range just quoted,
    a sentence saying so (round 37: why the medians differ is said once, in the markdown above
    the plot); else empty. ``quoted`` False: the line quotes no range (one
    length), so the sentence names the verdict's and the direction. ``ratio``: ``_told_apart``'s
    at ``point``, which the caller has."""
    walls = {m: wall for (_, m), (wall, _) in _per_step(table, [point]).items()}
    if ratio is None or not {STATIC, DYNAMIC} <= set(walls) or not min(walls.values()) > 0:
        return ""
    slower = ratio.estimate < 1
    bars = walls[STATIC] / walls[DYNAMIC] if slower else walls[DYNAMIC] / walls[STATIC]
    low, high = sorted(1 / x if slower else x for x in (ratio.low, ratio.high))
    digits = stats._digits(low, high)
    if round(low, digits) <= round(bars, digits) <= round(high, digits):
        return ""
    if not quoted:
        return (f" The bars, each loop's median run, give {bars:.{digits}f}x "
                f"{stats.SLOWER if slower else stats.FASTER}, outside the range of the verdict "
                "under What it means.")
    # round 37: why the two differ is said once, above the plot
    return f" They give {bars:.{digits}f}x, outside that range."


def _slowest_note(table, seq_lens, point) -> str:
    """Where both loops' GPU sat idle longest per step (wall clock minus GPU work, as the budget
    sentence prints it) at the drawn length of several, that fact with the dynamic cache's idle
    times, and that nothing measured here explains it (round 27: the published verdict and figure
    sat on such a length, unremarked); else empty. Idle, not wall clock: the GPU's work per step
    grows with length for a reason the lesson measures."""
    idle = host_ratios(table, seq_lens)
    if len(seq_lens) < 2 or len(idle) < len(seq_lens):
        return ""
    each = {m: {n: idle[n][i] for n in seq_lens} for i, m in ((0, STATIC), (1, DYNAMIC))}
    if not all(max(w, key=w.get) == point and sorted(w.values())[-2] < w[point]
               for w in each.values()):
        return ""
    others = [f"{each[DYNAMIC][n]:.2f}" for n in seq_lens if n != point]
    return (f" Both loops' GPU sat idle longest per step at this length (the dynamic cache "
            f"{each[DYNAMIC][point]:.2f} ms, against {stats.listed(others)} ms at the other "
            "lengths), which nothing measured here explains: the table above gives every length.")


def plot_runs_range(ax, table, seq_len, methods=EAGER):
    """Whiskers on a ``budget.plot`` panel: each loop's fastest to slowest run per decode step,
    around the median bar (same row order as ``budget.plot``: the first method on top)."""
    rows = table[(table["seq_len"] == seq_len) & (table["status"] == harness.OK)]
    rows = rows.set_index("method").loc[[m for m in methods if m in set(rows["method"])]][::-1]
    per_step = 1e3 / seq_len
    mid, low, high = (rows[c] * per_step for c in ("median_s", "min_s", "max_s"))
    # drawn in the bar's lower part, clear of the value written at the bar's middle
    ax.errorbar(mid, [i - 0.28 for i in range(len(rows))], xerr=[mid - low, high - mid],
                fmt="none", ecolor="#333333", capsize=3, linewidth=1,
                label="whiskers: fastest to slowest run")
    ax.set_xlim(0, max(ax.get_xlim()[1], 1.05 * float(high.max())))
    # budget.plot's legend again, now with the whiskers in it
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, fontsize=8, borderaxespad=0.2,
              handlelength=1.2, columnspacing=1.0)
    return ax


def budget_line(sentence, steps) -> str:
    """``budget.sentence``'s reading of the static cache against the dynamic one as this lesson
    prints it: a change in the GPU's work under 1.2x said in percent (round 37: 2.38 -> 2.24 ms
    printed "fell 1.1x", which reads larger than 6%). On a CPU run (``sentence`` empty) a note."""
    if not sentence:
        return f"{STATIC} against {DYNAMIC}: no GPU time on a CPU run."
    gpu = steps.set_index("method")["gpu_ms"]
    before, after = round(float(gpu[DYNAMIC]), 2), round(float(gpu[STATIC]), 2)
    said = f"the GPU's work {budget._moved(gpu[DYNAMIC], gpu[STATIC])} "
    if not min(before, after) > 0 or said.split()[3] not in ("fell", "rose") \
            or max(before, after) / min(before, after) >= 1.2:
        return sentence
    return sentence.replace(said, f"the GPU's work {said.split()[3]} "
                                  f"{abs(after / before - 1):.0%} ", 1)


def _times(steps, point) -> str:
    """The two caches' wall clock (and GPU work and idle, where timed) per step at ``point``,
    for a run that judges nothing."""
    wall = steps.set_index("method")["wall_ms"]
    times = (f"at {point} tokens a step took {wall[STATIC]:.2f} ms with the static cache and "
             f"{wall[DYNAMIC]:.2f} ms with the dynamic one (median run \u00f7 {point} steps)")
    gpu = steps.set_index("method")["gpu_ms"] if "gpu_ms" in steps else None
    if gpu is not None and all(v > 0 for v in (gpu[STATIC], gpu[DYNAMIC])):  # NaN on a CPU
        times += (f"; the GPU worked {gpu[STATIC]:.2f} and {gpu[DYNAMIC]:.2f} ms of it, and sat "
                  f"idle the rest ({_idle(wall[STATIC], gpu[STATIC]):.2f} and "
                  f"{_idle(wall[DYNAMIC], gpu[DYNAMIC]):.2f} ms)")
    return times


def answer_line(table, steps, seq_lens, judge: bool, point=None, inputs=None) -> str:
    """The lesson in one line, as the notebook prints it: the eager verdict at each length in one
    form ("slower at every length timed: 1.21x at 100 tokens, ..." where every length got the
    same clear verdict; the table's medians stay in the verdict lines, round 29); then the
    article's findings and where this run reproduces them
    (``article_clause``). A run that cannot judge prints the times at ``point`` only."""
    point = max(seq_lens) if point is None else point
    if not judge:
        return ("In one line: a smoke run only exercises the code (the published GPU run above "
                f"holds this lesson's answer); here {_times(steps, point)}.")
    ratios = {n: stats.row_speedup(table, STATIC, DYNAMIC, seq_len=n) for n in seq_lens}
    words = {n: "not judged" if r.n < stats.MIN_TRIALS else stats.verdict(r)
             for n, r in ratios.items()}
    same = len(set(words.values())) == 1 and words[seq_lens[0]] in (stats.SLOWER, stats.FASTER)
    parts = []
    for n, ratio in ratios.items():
        said = stats.short(ratio) if words[n] != "not judged" else "not judged"
        if same:
            said = said.split("x ")[0] + "x"  # the word is said once, before the list
        # round 29: the table's medians are the verdict lines' and ``medians_note``'s, not repeated here
        parts.append(f"{said} at {n} tokens")
    every = " at every length timed" * (len(seq_lens) > 1)
    line = ("In one line: eager, the static cache "
            + (f"was {words[seq_lens[0]]} than the dynamic one{every}: " if same
               else "against the dynamic one: ") + ", ".join(parts))
    return line + "; " + article_clause(words) + "."


def article_clause(words) -> str:
    """The article's findings at the lengths it timed, and at which of them this run found the
    same (``words``: each length's verdict word, as ``answer_line`` reads them): "the article
    found it slower at 100, faster at 200 and 400; this run reproduces that at none of them"."""
    told = [n for n in words if n in ARTICLE]
    if not told:  # round 27b: "timed none of these lengths (100, ...)" read as the article's
        said = {}
        for n in sorted(ARTICLE):
            said.setdefault(ARTICLE[n], []).append(n)
        claim = ", ".join(f"{word} at {stats.listed(ns)}" for word, ns in said.items())
        where = [name for name in presets.PRESET_NAMES
                 if set(ARTICLE) <= set(presets.preset_values("04", name)["seq_lens"])]
        return (f"{stats.listed(sorted(words))} tokens {'is' if len(words) == 1 else 'are'} none "
                f"of the article's lengths, so this run cannot test its claim ({claim})"
                + (f"; the {stats.listed(where)} preset" + (" does" if len(where) == 1 else "s do")
                   if where else ""))
    found = "the article found it " + ", ".join(f"{ARTICLE[n]} at {n}" for n in told)
    same = [n for n in told if words[n] == ARTICLE[n]]
    where = ("none of them" if not same else "every one" if len(same) == len(told) > 1
             else f"{stats.listed(same)} tokens")
    return found + f"; this run reproduces that at {where}"


def medians_note(table, seq_lens, judge: bool) -> str:
    """Round 29: "1.18x slower (1.14–1.24; the table's medians: 1.26x)" left the reader unsure
    which to believe. Where a verdict line (``eager_verdict``) adds the table's medians, one
    sentence after the verdicts: runs vary, the widest spread of one loop's runs among those
    lengths named once (round 34: a list of rounds per length was more than the reader needs;
    round 37: which ratio to go by, and why, is the markdown's, said once above the plot).
    Empty where no line adds them, and in a smoke run."""
    if not judge:
        return ""
    told = [n for n in seq_lens if "the table's medians" in eager_verdict(table, n, judge)
            and stats.row_speedup(table, STATIC, DYNAMIC, seq_len=n).n >= stats.MIN_TRIALS]
    if not told:
        return ""
    runs = {(n, m): stats.method_trials(table, m, seq_len=n) for n in told for m in (DYNAMIC, STATIC)}
    n, wide = max(runs, key=lambda k: max(runs[k]) / min(runs[k]))
    return (f"Runs vary from round to round: at {n} tokens the {wide} cache's "
            f"runs took {1e3 * min(runs[n, wide]):.0f} to {1e3 * max(runs[n, wide]):.0f} ms.")


def _gpu_ways(steps, lengths, words) -> dict:
    """{sentence: [lengths]} for ``against_article``'s lengths that neither the host's reading
    covers: which cache did more than ``SAME_GPU`` less GPU work per step (``_per_step``'s), and,
    where it still lost, so (round 33: "differed by more than 5%" hid that the static cache did
    less and was slower, which points to the host); where the GPU's work was about the same, that
    the medians' idle times do not show the verdict's direction (the host's reading needs both)."""
    out = {}
    for n in lengths:
        gs, gd = (steps.get((n, m), (0, float("nan")))[1] for m in (STATIC, DYNAMIC))
        if not (gs > 0 and gd > 0):
            how = "the GPU's work per step was not measured"
        elif abs(gs / gd - 1) <= SAME_GPU:
            how = ("the GPU's work per step was about the same, but the table's medians do not show "
                   "the static step waiting "
                   + ("longer" if words[n] == stats.SLOWER else "less") + " on the host")
        else:
            less = STATIC if gs < gd else DYNAMIC
            how = (f"the {less} cache did more than {SAME_GPU:.0%} less GPU work per step than the "
                   f"{DYNAMIC if less == STATIC else STATIC} one")
            if (less == STATIC) == (words[n] == stats.SLOWER):
                how += f", yet was {stats.SLOWER if less == STATIC else stats.FASTER}"
        out.setdefault(how, []).append(n)
    return out


def against_article(table, seq_lens, judge: bool) -> str:
    """Round 29: "Against the article" was template prose ("... or that this run timed none of
    them") beside a run that found the opposite at two lengths. One computed line: the lengths
    where this run's verdict is the opposite of the article's, and, where the GPU's work per step
    was about the same there (``host_lengths``), that the gap was the host's, with what would have
    to change for the article's result. The summary line keeps both findings at every length.
    Empty in a smoke run and where this run timed none of the article's lengths."""
    lens = [n for n in seq_lens if n in ARTICLE]
    if not judge or not lens:
        return ""
    words = {}
    for n in lens:
        ratio = stats.row_speedup(table, STATIC, DYNAMIC, seq_len=n)
        words[n] = stats.verdict(ratio) if ratio.n >= stats.MIN_TRIALS else None
    opposite = [n for n in lens if words[n] in (stats.SLOWER, stats.FASTER) and words[n] != ARTICLE[n]]
    if not opposite:
        return ("Against the article: at no length it timed did this run find the opposite of its "
                "finding (the summary line gives both).")
    groups = {}
    for n in opposite:
        groups.setdefault(words[n], []).append(n)
    host = host_lengths(table, seq_lens)
    line = "Against the article: " + "; ".join(
        f"it found the static cache {ARTICLE[ns[0]]} at {stats.listed(ns)} tokens, this run {word}"
        for word, ns in groups.items()) + "."
    lost = [n for n in opposite if words[n] == stats.SLOWER and host.get(n, 0) > 0]
    won = [n for n in opposite if words[n] == stats.FASTER and host.get(n, 0) < 0]
    rest = [n for n in opposite if n not in lost + won]
    there = lambda ns: "There" if ns == opposite else f"At {stats.listed(ns)} tokens"  # noqa: E731
    if lost:
        line += (f" {there(lost)} the GPU's work per step was about the same and the static step "
                 "waited longer on the host: to win, its step would have to take the host less "
                 "time than the dynamic step's, as the copies it saves are GPU work and the GPU "
                 "already waits on the host.")
    if won:
        line += (f" {there(won)} the GPU's work per step was about the same and the static step "
                 "waited less on the host.")
    for how, ns in _gpu_ways(_per_step(table, rest), rest, words).items():  # round 33: which way, not just "differed"
        line += f" {there(ns)} {how} (the table gives both loops' GPU ms)."
    return line + " The article's host, GPU and library versions are not this machine's."
