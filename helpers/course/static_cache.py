"""Notebook 04's measurement and analysis, kept out of the lesson: the three eager loops
(dynamic cache, static cache sized to the run and oversized static cache) as interleaved trials, each loop's own
memory, the two static caches once more with every decode step captured in a CUDA graph, and
the table of what the oversized cache's wasted attention costs.

``measure`` returns one table; ``shown`` is its readable view; ``plot_memory`` draws the memory
panel; ``waste`` reads the oversized cache against the one sized to the run; ``graph_cache_len``
gives the CUDA-graph cache's length (sized to the run, rounded up).
"""
from __future__ import annotations

import warnings

import pandas as pd
import torch
from transformers import DynamicCache

from .. import graphs
from ..generation import generate_kv_cache
from ..static import attention_work, generate_static_cache, make_static_cache, sdpa_calls
from . import harness, plotting, stats
from .claims import CACHE_DYNAMIC as DYNAMIC, CACHE_STATIC as STATIC  # the names 08's claim reads

# One name per loop in every table, figure and sentence; a CUDA-graph replay adds GRAPH.
OVERSIZED = "oversized"
GRAPH = ", graph"
EAGER = [DYNAMIC, STATIC, OVERSIZED]
METHODS = EAGER + [STATIC + GRAPH, OVERSIZED + GRAPH]


def bytes_per_position(model, batch_size, dtype_bytes=4) -> int:
    """Keys and values of one cache position, every layer and row."""
    cfg = model.config
    return 2 * cfg.n_layer * batch_size * cfg.n_embd * dtype_bytes


def cache_bytes(cache) -> int:
    """The bytes of a static cache's key and value tensors, read from the tensors."""
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers)


def attention_inputs(model, prompt, device) -> pd.DataFrame:
    """What ``scaled_dot_product_attention`` receives in one decode step after the prompt,
    with a dynamic cache and with a static cache of prompt + 8 positions."""
    rows = []
    with torch.no_grad():
        for name, cache in (("dynamic", DynamicCache(config=model.config)),
                            ("static", make_static_cache(model, prompt.shape[0],
                                                         prompt.shape[1] + 8, device))):
            with sdpa_calls() as calls:
                model(prompt, past_key_values=cache, use_cache=True)
                model(prompt[:, :1], past_key_values=cache, use_cache=True)
            last = calls[-1]
            rows.append({"cache": name, "filled positions": prompt.shape[1] + 1,
                         "keys attended per layer": last["keys"], "mask": last["mask"]})
    return pd.DataFrame(rows).set_index("cache")


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
    sizes = {DYNAMIC: None, STATIC: P.prompt_len + seq_len, OVERSIZED: P.oversize_cache_len}
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
    cache = None  # the last static cache lives on in calls only, freed below
    rows, _ = harness.compare_row(calls, device=P.device, batch_size=P.batch_size,
                                  seq_len=seq_len, repeats=P.repeats, warmup=P.warmup,
                                  budget_s=P.budget_s, busy=True)
    del calls
    for method, fn in own.items():  # each loop alone, its cache built inside the call
        extra[method]["own_peak_bytes"] = own_peak_bytes(fn, P.device)
    # The two static caches with every decode step captured in a CUDA graph (the decoder
    # lesson 10 builds, a measuring instrument here): one launch per step, so the GPU sets the
    # pace. Its cache holds one position more than the run (the step launched ahead), rounded
    # up to a multiple of 16.
    decoders = {method + GRAPH: graphs.GraphDecoder(
                    model, P.batch_size, max(P.prompt_len + seq_len, cache_len - 1), eos,
                    library_forward=True)
                for method, cache_len in sizes.items() if cache_len is not None}
    graphed = {name: (lambda d=d: d(prompt, seq_len)) for name, d in decoders.items()}
    graph_rows, _ = harness.compare_row(graphed, device=P.device, batch_size=P.batch_size,
                                        seq_len=seq_len, repeats=P.graph_repeats,
                                        warmup=P.warmup, busy=True)
    for name, decoder in decoders.items():
        cache = decoder.state.cache
        extra[name] = {**_work(P, seq_len, cache.get_max_length()),
                       "cache_bytes": cache_bytes(cache), "own_peak_bytes": float("nan")}
    del decoders, graphed
    return [{**row, **extra[row["method"]]} for row in rows + graph_rows]


def measure(model, prompt, eos, P) -> pd.DataFrame:
    """Every loop at every length of ``P.seq_lens``: one table (a row per loop and length)."""
    with warnings.catch_warnings():
        # the profiler behind busy=True warns that it keeps only its last cycle: expected
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        return harness.sweep(P.seq_lens, lambda n: _point(model, prompt, eos, P, n),
                             desc="dynamic vs static")


def shown(table) -> pd.DataFrame:
    """The measurement table in readable units, one row per loop and length: cache positions,
    median wall clock, GPU work and the attention work over the useful work (the cache sizes
    are in the memory panel)."""
    out = pd.DataFrame({
        "tokens": table["seq_len"], "loop": table["method"],
        "positions": table["cache_len"], "wall ms": (1e3 * table["median_s"]).round(1),
        "GPU ms": (1e3 * table["gpu_busy_s"]).round(1),
        "attended ÷ useful": table["attended_over_useful"].round(2)})
    return out.set_index(["tokens", "loop"])


def plot_memory(ax, table, seq_len, on_gpu: bool):
    """Each eager loop's KV-cache tensors and, on a GPU, the peak it allocates on its own (only
    its cache alive), at one length."""
    part = table[(table["seq_len"] == seq_len) & table["method"].isin(EAGER)].set_index("method")
    part = part.loc[[m for m in EAGER if m in part.index]]
    x = range(len(part))
    width = 0.38
    unit, scale = ("MiB", 2**-20) if part["cache_bytes"].max() >= 2**20 else ("KiB", 2**-10)
    bars = ax.bar([i - width / 2 for i in x], part["cache_bytes"] * scale, width,
                  color=plotting.PALETTE[0], label="KV-cache tensors")
    plotting.label_bars(ax, bars, fmt="{:.0f}")
    if on_gpu:
        bars = ax.bar([i + width / 2 for i in x], part["own_peak_bytes"] * scale, width,
                      color=plotting.PALETTE[1], label="peak of one run, above the weights")
        plotting.label_bars(ax, bars, fmt="{:.0f}")
    else:
        ax.set_xlabel("no GPU memory on a CPU run: cache tensors only")
    names = {DYNAMIC: "dynamic", STATIC: "static\n(sized to run)", OVERSIZED: "static\n(oversized)"}
    ax.set_xticks(list(x), [names[m] for m in part.index], fontsize=9)
    ax.set(ylabel=unit, title=f"Memory of each loop, {seq_len} tokens")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)
    ax.legend(loc="upper left", fontsize=9)
    return ax


def graph_cache_len(table, seq_len) -> int:
    """Positions of the CUDA-graph cache sized to a run of ``seq_len`` tokens (rounded up)."""
    row = table[(table["seq_len"] == seq_len) & (table["method"] == STATIC + GRAPH)]
    return int(row["cache_len"].iloc[0])


def waste(table, model, P) -> pd.DataFrame:
    """The oversized cache against the one sized to the run, per length and regime (eager, CUDA
    graph): extra positions attended over the run, the GPU's extra kernel time, what one extra
    position costs per step and the bandwidth that implies (four columns, for display)."""
    per_position = bytes_per_position(model, P.batch_size)
    rows = []
    for seq_len in P.seq_lens:
        part = table[(table["seq_len"] == seq_len) & (table["status"] == harness.OK)]
        part = part.set_index("method")
        for regime, suffix in (("eager", ""), ("CUDA graph", GRAPH)):
            if STATIC + suffix not in part.index or OVERSIZED + suffix not in part.index:
                continue
            fit, over = part.loc[STATIC + suffix], part.loc[OVERSIZED + suffix]
            positions = (over["cache_len"] - fit["cache_len"]) * (seq_len - 1)
            busy = over["gpu_busy_s"] - fit["gpu_busy_s"]
            known = busy > 0 and positions > 0
            rows.append({
                "tokens": seq_len, "regime": regime, "extra positions": positions,
                "extra GPU ms": 1e3 * busy,
                "µs per position-step": 1e6 * busy / positions if known else float("nan"),
                "GB/s": positions * per_position / busy / 1e9 if known else float("nan")})
    return pd.DataFrame(rows).set_index(["tokens", "regime"])


def by_regime(steps) -> tuple:
    """``budget.per_step`` rows split for two panels: the eager loops, and the two static caches
    replayed as a CUDA graph (named without the suffix: the panel's title says it)."""
    eager = steps[steps["method"].isin(EAGER)]
    graph = steps[steps["method"].str.endswith(GRAPH)]
    return eager, graph.assign(method=graph["method"].str.removesuffix(GRAPH))


def same_scale(*axes):
    """One x scale for budget panels drawn side by side, so their bars compare."""
    right = max(ax.get_xlim()[1] for ax in axes)
    for ax in axes:
        ax.set_xlim(0, right)


def eager_verdict(table, seq_len, judge: bool) -> str:
    """The static cache against the dynamic one in the eager loop, at one length, with the range
    read in words where it is wide: the host paces these loops, and its speed moves between
    trials."""
    said = stats.say(table, STATIC, DYNAMIC, judge, seq_len=seq_len)
    line = f"{seq_len} tokens, eager: the static cache against the dynamic one: {said}"
    ratio = stats.row_speedup(table, STATIC, DYNAMIC, seq_len=seq_len)
    word = stats.verdict(ratio)
    if not judge or word == stats.NOISE or ratio.high / ratio.low < 1.25:
        return line
    if word == stats.SLOWER:
        low, high, word = 1 / ratio.high - 1, 1 / ratio.low - 1, "slower"
    else:
        low, high, word = ratio.low - 1, ratio.high - 1, "faster"
    low = f"{100 * low:.1g}" if 100 * low < 1 else f"{100 * low:.0f}"  # never "0%" when slower
    return (line + f". A wide range: {word} in this run, by anywhere from {low}% to "
            f"{100 * high:.0f}%; the host paces the eager loops, and its speed moves between "
            "trials.")


def eager_spread_line(table) -> str:
    """How far one eager loop's runs spread between trials (min to max against the median): the
    host's speed, which moves every eager wall clock."""
    ok = table[(table["status"] == harness.OK) & table["method"].isin(EAGER)]
    spread = 100 * ((ok["max_s"] - ok["min_s"]) / ok["median_s"]).max()
    return (f"Eager rows: one loop's runs spread by up to {spread:.0f}% of their median between "
            "trials (the host's speed).")


def oversized_line(table, seq_len, judge: bool, graph: bool = False) -> str:
    """The oversized cache against the one sized to the run at one length, eager or replayed as
    a CUDA graph, read like every verdict: only "slower" is a cost, and only then is it set
    against the extra GPU work the oversized cache did (its masked attention). Otherwise the
    extra GPU work is named beside the verdict, no cause given."""
    suffix = GRAPH if graph else ""
    over, fit = OVERSIZED + suffix, STATIC + suffix
    where = (f"CUDA graph: the oversized cache against the one sized to the run (rounded up to "
             f"{graph_cache_len(table, seq_len)} positions)" if graph else
             "eager: the oversized cache against the one sized to the run")
    line = f"{seq_len} tokens, {where}: {stats.say(table, over, fit, judge, seq_len=seq_len)}"
    rows = table[(table["seq_len"] == seq_len) & (table["status"] == harness.OK)].set_index("method")
    gpu = 1e3 * (rows.loc[over, "gpu_busy_s"] - rows.loc[fit, "gpu_busy_s"])
    wall = 1e3 * (rows.loc[over, "median_s"] - rows.loc[fit, "median_s"])
    if not judge or gpu != gpu:  # a smoke run, or no GPU time (a CPU run)
        return line + "."
    extra = f"{gpu:.0f} ms more GPU work" if gpu >= 0 else f"{-gpu:.0f} ms less GPU work"
    word = stats.verdict(stats.row_speedup(table, over, fit, seq_len=seq_len))
    spread = 1e3 * (rows.loc[[over, fit], "max_s"] - rows.loc[[over, fit], "min_s"]).max()
    if word == stats.NOISE and gpu > 0 and abs(wall) <= spread:
        side = "below" if wall < 0 else "above"
        return line + (f", although it did {extra}. Its median lies {abs(wall):.0f} ms {side} the "
                       f"sized cache's, within the {spread:.0f} ms by which either loop's runs "
                       "spread between trials: in eager mode the GPU runs kernels while the host "
                       "issues the next ones, so extra GPU work can hide entirely, and the "
                       "difference is the host's spread.")
    if not (word == stats.SLOWER and gpu > 0 and wall > 0):
        return line + f", although it did {extra}." if gpu > 0 else line + f"; it did {extra}."
    cost = f": a cost of {wall:.0f} ms a run (medians), "
    if wall < gpu / 2:
        return line + cost + f"less than its {extra}: the host's time hid the rest."
    if wall > 1.5 * gpu:
        return line + cost + f"more than its {extra} explains."
    return line + cost + f"of the size of its {extra}, the attention over masked positions."


def graph_rows_line(table) -> str:
    """What the ``, graph`` rows are, and why the CUDA-graph cache sized to the run attends over
    more than twice the useful pairs (its cache is allocated in blocks of 16 positions)."""
    n = min(table["seq_len"])
    rows = table[table["seq_len"] == n].set_index("method")
    fit, graph = rows.loc[STATIC], rows.loc[STATIC + GRAPH]
    return (f"The ', graph' rows: the same static-cache step, captured once as a CUDA graph and "
            "replayed every step, so the host's time issuing kernels vanishes (lesson 10 builds "
            "this decoder). Its cache is allocated in blocks of 16 positions: at "
            f"{n} tokens the one sized to the run holds {int(graph['cache_len'])} positions "
            f"where the run needs {int(fit['cache_len'])}, so it attends over "
            f"{graph['attended_over_useful']:.2f}x the useful pairs, not "
            f"{fit['attended_over_useful']:.2f}x.")


def memory_line(table, model, P, seq_len) -> str:
    """Each eager loop's peak above its own cache, the part common to all three named (the
    prefill's logits: batch x prompt x vocab x bytes), so that the dynamic cache's extra old
    copy stands out; on a CPU run (no peak) only the growing copy."""
    copy = growth_copy_line(table, model, seq_len)
    rows = table[(table["seq_len"] == seq_len) & table["method"].isin(EAGER)].set_index("method")
    above = ((rows["own_peak_bytes"] - rows["cache_bytes"]) / 2**20).dropna()
    if not {DYNAMIC, STATIC} <= set(above.index):
        return copy
    size = torch.empty((), dtype=getattr(model, "dtype", torch.float32)).element_size()
    vocab = model.config.vocab_size
    logits = P.batch_size * P.prompt_len * vocab * size / 2**20
    each = ", ".join(f"{m} {above[m]:.0f} MiB" for m in EAGER if m in above.index)
    return (f"Memory at {seq_len} tokens, each run's peak above its own cache tensors: {each}. "
            f"Common to all three: the prefill's logits, {P.batch_size} rows x {P.prompt_len} "
            f"positions x {vocab} tokens x {size} bytes = {logits:.0f} MiB. The dynamic cache's "
            f"peak sits {above[DYNAMIC] - above[STATIC]:.0f} MiB higher than the static one's. "
            + copy)


def gpu_work_line(table, seq_lens) -> str:
    """The static and the dynamic cache's GPU work per run at each length (the profiled run's
    kernel time), so the trade of copies for masked attention reads as numbers; empty without
    GPU time (a CPU run)."""
    rows = table[table["status"] == harness.OK].set_index(["method", "seq_len"])["gpu_busy_s"]
    parts = [f"at {n} tokens dynamic {1e3 * rows[DYNAMIC, n]:.0f} ms, static "
             f"{1e3 * rows[STATIC, n]:.0f} ms" for n in seq_lens
             if (DYNAMIC, n) in rows.index and (STATIC, n) in rows.index
             and rows[DYNAMIC, n] == rows[DYNAMIC, n] and rows[STATIC, n] == rows[STATIC, n]]
    return "GPU work per run, eager: " + "; ".join(parts) + "." if parts else ""


def eager_cause_line(table, P) -> str:
    """A possible cause of a host cost of the static cache, named only where the static cache
    was slower than the dynamic one (its range below 1)."""
    slower = [n for n in P.seq_lens
              if stats.verdict(stats.row_speedup(table, STATIC, DYNAMIC, seq_len=n)) == stats.SLOWER]
    if not slower:
        return ("No host cost of the static cache is named: at no length was it slower than the "
                "dynamic one.")
    at = ", ".join(str(n) for n in slower)
    return (f"The static cache was slower at {at} tokens. A possible cause, not measured here: "
            "each step transformers builds a mask over every position and updates the fill "
            "level, host work the dynamic cache skips.")


def growth_copy_line(table, model, seq_len) -> str:
    """The most memory the dynamic cache's growth holds twice: torch.cat copies one layer's keys
    (or values) at a time, so the old and the new tensor of one layer live together."""
    row = table[(table["seq_len"] == seq_len) & (table["method"] == DYNAMIC)]
    one = float(row["cache_bytes"].iloc[0]) / (2 * model.config.n_layer)
    unit, scale = ("MiB", 2**-20) if one >= 2**20 else ("KiB", 2**-10)
    return (f"Growing, the dynamic cache copies one layer's keys or values at a time: at "
            f"{seq_len} tokens the old copy alive beside the new one is at most "
            f"{one * scale:.1f} {unit}.")


ARTICLE = {100: "loses", 200: "wins", 400: "wins"}  # the article's static against dynamic


def article_line(table, P) -> str:
    """Whether the article's "the static cache loses at 100 new tokens and wins at 200 and 400"
    held in this run's eager lines, length by length."""
    words = {stats.FASTER: "wins", stats.SLOWER: "loses", stats.NOISE: "ties"}
    parts = []
    for n in sorted(set(P.seq_lens) | set(ARTICLE)):
        if n not in P.seq_lens:
            parts.append(f"{n} was not run (the preset stops at {max(P.seq_lens)} to fit its "
                         f"run-time limit, so the article's {n}-token claim is untested here)")
            continue
        ratio = stats.row_speedup(table, STATIC, DYNAMIC, seq_len=n)
        here = words[stats.verdict(ratio)] if ratio.n >= stats.MIN_TRIALS else "is not judged"
        told = ARTICLE.get(n)
        parts.append(f"at {n} tokens it {here}" + ("" if told is None else
                     " (as in the article)" if told == here else f" (the article: {told})"))
    return "Against the article, eager static cache against dynamic: " + "; ".join(parts) + "."


def waste_lines(wasted, P, bandwidth) -> list:
    """The waste table read in words: what one extra position costs per step in each regime
    (the same GPU work, whoever sets the pace), and the bandwidth of the masked reads against
    the floor's copy bandwidth."""
    lines = []
    cost = wasted["µs per position-step"].dropna()
    if len(cost):
        lines.append(f"One extra cache position cost {cost.min():.2f}\u2013{cost.max():.2f} µs of GPU "
                     "work per step, eager or in a CUDA graph: the waste is the GPU's, whoever "
                     "sets the pace.")
    rates = wasted["GB/s"].dropna()
    if len(rates) and bandwidth == bandwidth:  # NaN on a CPU: no floor
        lines.append(f"The masked keys and values were read at {rates.min():.0f}\u2013"
                     f"{rates.max():.0f} GB/s, {100 * rates.median() / (bandwidth / 1e9):.0f}% of "
                     f"the {bandwidth / 1e9:.0f} GB/s copy bandwidth the floor uses.")
    return lines
