"""Notebook 09: turning a generated batch into Python lists, row by row on the GPU or once on
the host.

RL trainers (GRPO, RLOO) post-process every generated batch: for each row, the prompt and the
completion tokens that their masks keep, as lists. Done on CUDA tensors, every boolean index
(``nonzero`` must learn how many elements survive) and every ``tolist()`` waits for the GPU: a
few host-device syncs per row. Moving the four tensors to the CPU once costs a constant number
of syncs (``helpers.course.profiling.find_syncs`` counts them). ``postprocess_per_row`` and ``postprocess_on_host`` are written out in notebook 09;
a test keeps both copies identical. The rest is the notebook's plumbing: synthetic batches
and host-clock timing, alone or under contention.
"""
from __future__ import annotations

import math
import time

from matplotlib.ticker import LogLocator
import pandas as pd
import torch

from .course import budget, harness, plotting, stats


def postprocess_per_row(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Each row's real prompt and completion tokens as lists, indexed row by row where the
    tensors live: on a GPU every boolean index and every ``tolist()`` is a sync."""
    prompts, completions = [], []
    for row in range(prompt_ids.shape[0]):
        prompts.append(prompt_ids[row][prompt_mask[row]].tolist())
        completions.append(completion_ids[row][completion_mask[row]].tolist())
    return prompts, completions


def postprocess_on_host(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """The same lists after copying the four tensors to the CPU once; the per-row indexing then
    runs on host memory."""
    tensors = [t.cpu() for t in (prompt_ids, prompt_mask, completion_ids, completion_mask)]
    return postprocess_per_row(*tensors)


def make_batch(batch_size, prompt_len, completion_len, vocab_size, device, seed=0):
    """A generated batch as a trainer holds it: left-padded prompts and right-padded completions
    of random real lengths, with boolean masks of the real tokens."""
    gen = torch.Generator().manual_seed(seed)
    prompt_ids = torch.randint(0, vocab_size, (batch_size, prompt_len), generator=gen)
    completion_ids = torch.randint(0, vocab_size, (batch_size, completion_len), generator=gen)
    prompt_real = torch.randint(1, prompt_len + 1, (batch_size, 1), generator=gen)
    completion_real = torch.randint(1, completion_len + 1, (batch_size, 1), generator=gen)
    prompt_mask = torch.arange(prompt_len) >= prompt_len - prompt_real
    completion_mask = torch.arange(completion_len) < completion_real
    return tuple(t.to(device) for t in (prompt_ids, prompt_mask, completion_ids, completion_mask))


class SideLoad:
    """A long GPU workload (matmuls) queued on a second stream: it keeps every SM busy while the
    host code under test runs, as generation or training kernels of another stream would.
    ``seconds`` is how much work one ``queue()`` adds; it doubles whenever a timed call outlived
    the work queued for it (``timed_call``). Notebook 09 first runs the per-row loop at the
    largest batch under it a few times, so the doubling happens before the timing and every point
    starts with the same load; a point that still outlives it re-runs its call with twice as
    much, and the table's ``load_s`` names the load each point ended with."""

    def __init__(self, device, seconds=0.05, size=4096):
        self.device, self.seconds = torch.device(device), seconds
        self.stream = torch.cuda.Stream(self.device)
        gen = torch.Generator(device=self.device).manual_seed(0)
        self.a = torch.randn(size, size, device=self.device, generator=gen)
        self.b = torch.randn(size, size, device=self.device, generator=gen)
        self.out = torch.empty_like(self.a)
        self.done = torch.cuda.Event()
        self.seconds_per_matmul = self._calibrate()

    def _calibrate(self, n=20):
        self.queue_matmuls(2)
        torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        self.queue_matmuls(n)
        torch.cuda.synchronize(self.device)
        return (time.perf_counter() - start) / n

    def queue_matmuls(self, n):
        with torch.cuda.stream(self.stream):
            for _ in range(n):
                torch.mm(self.a, self.b, out=self.out)
            self.done.record(self.stream)

    def queue(self):
        """Queue about ``self.seconds`` of work on the side stream and return at once."""
        self.queue_matmuls(max(1, math.ceil(self.seconds / self.seconds_per_matmul)))

    def busy(self) -> bool:
        """True while the queued work is still running."""
        return not self.done.query()


def timed_call(fn, device, load=None, max_tries=6):
    """Host-clock seconds of one ``fn()`` (host code whose result is on the host when it
    returns) and its output; with ``load``, while the load keeps the GPU busy on another stream.
    The device-wide synchronize comes after the clock stops (it would wait for the load too). A
    call that outlived the queued work is re-run with twice as much, so every such call was
    contended."""
    for _ in range(max_tries):
        if load is not None:
            load.queue()
        start = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - start
        contended = load is None or load.busy()
        harness.sync(device)
        if contended:
            return elapsed, out
        load.seconds *= 2
    raise RuntimeError(f"the side load never outlasted one call ({load.seconds:.2f} s queued)")


def compare_host_clock(calls, *, device, batch_size, seq_len, repeats, warmup=1, load=None,
                       busy=False, **columns):
    """Time ``calls`` (name -> fn) as interleaved rounds (A B, B A, ...), each call by
    ``timed_call``: alone, or with ``load`` under contention. One clock for both conditions, so
    a method's contended time compares with its time alone. ``busy=True`` adds the GPU's work
    per call (``gpu_busy_s``) from one profiled run. Returns one row per method (the shared
    columns, ``trials_wall_ms``, and ``load_s``: the work queued per call, 0 alone)."""
    names, times = list(calls), {name: [] for name in calls}
    harness.release_memory(device)
    for i in range(warmup + repeats):
        for name in names[i % len(names):] + names[:i % len(names)]:
            elapsed, _ = timed_call(calls[name], device, load)
            if i >= warmup:
                times[name].append(elapsed)
    rows = []
    for name in names:
        row = {"method": name, "batch_size": batch_size, "seq_len": seq_len, **columns,
               "status": harness.OK, **harness.summarize(times[name]),
               **harness.memory_stats(device), "trials_wall_ms": harness.trials_text(times[name]),
               "error": "", "device_name": harness.device_label(device),
               "load_s": 0.0 if load is None else load.seconds,
               "gpu_busy_s": harness.gpu_busy_s(calls[name], device) if busy else float("nan")}
        rows.append(harness.with_tokens_per_s(row, batch_size, seq_len))
    harness.release_memory(device)
    return rows


def speedups(frame, slow="per row", fast="on host", keys=("condition", "batch_size", "seq_len")):
    """One row per point with both methods' median seconds and ``slow / fast``; with the
    table's ``load_s``, the side load queued per call at that point (0 alone)."""
    keys = list(keys)
    wide = frame.pivot_table(index=keys, columns="method", values="median_s").reset_index()
    wide.columns.name = None
    wide["speedup"] = wide[slow] / wide[fast]
    if "load_s" in frame:
        wide = wide.merge(frame.groupby(keys)["load_s"].max().reset_index(), on=keys, how="left")
    return wide


def transfer_speedup(table, condition, **where):
    """``stats.row_speedup`` of the host copy over per-row syncs in one condition (both
    conditions' trials are interleaved rounds, so paired)."""
    return stats.row_speedup(table, "on host", "per row", condition=condition, **where)


def contention_line(table) -> str:
    """How this side load changes each method's time per batch, in ms (contended median - alone
    median, one clock for both) at the points timed under load, "more" or "less" as it
    went, with no cause read for a call that got faster (the round-29 review: the 6e28961 run's
    host copy 3.32 ms faster, explained by "the host's own pace"). With too few runs under load
    (``_load_reading``), the two times, the difference and their ratio, as what the runs showed,
    with no verdict (the 13:41 workshop run of 6bba703, 3 runs, printed "can't be told apart"
    beside 136.34 against 27.97 ms); a point whose runs can't be told apart from alone gives its
    two times and is left out of the range. Absolute times, not a speedup of one method over the
    other: none is quoted under load, it holds for this load only."""
    keys = ["method", "batch_size", "seq_len"]
    alone, busy = (table[table["condition"] == c].set_index(keys) for c in ("alone", "contended"))
    points = busy.loc["per row"].index if "per row" in busy.index else []
    few_runs = []

    def ms(value):
        return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2f}"

    def at(b, n):
        return "" if len(points) == 1 else f" at batch {b}, completions of {n}"

    def times(method, b, n, named=True):  # the printed ms, and the difference and ratio of those
        t, a = (round(frame.loc[(method, b, n), "median_s"] * 1e3, 2) for frame in (busy, alone))
        ratio = f", {t / a:.2f}x" if a > 0 else ""
        against = " ms against " if named else " against "  # unnamed: after "against its time alone"
        return (f"{t:.2f}{against}{a:.2f} ms{' alone' if named else ''}{at(b, n)} ({abs(t - a):.2f} ms "
                f"{'longer' if t >= a else 'shorter'}{ratio})")

    def moved(method, what):
        extra = ((busy["median_s"] - alone["median_s"]).loc[method].dropna()) * 1e3
        reading = {(b, n): _load_reading(table, method, b, n) for b, n in extra.index}
        few = [key for key, (kind, _) in reading.items() if kind == "few"]
        if few:
            few_runs.extend(runs for kind, runs in reading.values() if kind == "few")
            return f"{what} took " + stats.listed([times(method, b, n) for b, n in few])
        told = extra[[reading[key][0] == "told" for key in extra.index]]
        if told.empty and len(extra) == 1:  # round 35: the verdict names its method and range
            (b, n), = extra.index       # (on the scale of the "1.30x" beside it: times longer)
            r = _load_ratio(table, method, b, n)
            longer = stats.Ratio(1 / r.estimate, 1 / r.high, 1 / r.low, r.n, r.level)
            return f"{what} against its time alone: {stats.plain(longer)}, " + times(method, b, n, False)
        if told.empty:
            return (f"{what} took " + stats.listed([times(method, b, n) for b, n in extra.index])
                    + ": can't tell apart on this machine")
        quiet, parts = len(extra) - len(told), []
        for part, word in ((told[told >= 0], "more"), (-told[told < 0], "less")):
            if len(part):  # each way the time moved, as measured (the round-29 review)
                low, high = ms(part.min()), ms(part.max())
                count = "" if len(part) == len(extra) else f" at {len(part)} of {len(extra)} points"
                parts.append(f"{low if low == high else f'{low} to {high}'} ms {word}"
                             f"{'' if parts else ' per batch than alone'}{count}")
        notes = ([f"at the {'other' if quiet == 1 else 'others'} it can't be told apart from "
                  "alone"] if quiet else []) + (["nothing timed here says why it got faster"]
                                                if (told < 0).any() else [])
        # round 30: the clause told apart from alone gets its verdict in words too, as the
        # "can't tell apart" clause does (one way only: a mixed one reads its parts)
        way = (f"is {stats.SLOWER}: " if (told >= 0).all() else f"is {stats.FASTER}: "
               if (told < 0).all() else "takes ")
        return (f"{what} {way}{' and '.join(parts)}"
                + (f" ({'; '.join(notes)})" if notes else ""))

    line = (f"Under this side load {moved('per row', 'the per-row loop')}; "
            f"{moved('on host', 'the host copy')}.")
    if few_runs:
        line += f" Only {min(few_runs)} runs each: too few to judge."
    return line


def _load_reading(table, method, batch_size, seq_len) -> tuple:
    """Whether one method's contended runs at one point can be told apart from its runs alone
    (``stats.speedup`` of two sweeps, not paired): ("told" | "noise" | "few", runs), "few" with
    fewer than ``stats.MIN_TRIALS`` runs on a side; ("told", 0) without stored trials (only
    medians)."""
    if "trials_wall_ms" not in table:
        return "told", 0
    trials = [stats.method_trials(table, method, condition=c, batch_size=batch_size,
                                  seq_len=seq_len) for c in ("contended", "alone")]
    if not all(trials):
        return "told", 0
    runs = min(len(t) for t in trials)
    if runs < stats.MIN_TRIALS:
        return "few", runs
    ratio = _load_ratio(table, method, batch_size, seq_len)
    return ("noise" if stats.verdict(ratio) == stats.NOISE else "told"), runs


def _load_ratio(table, method, batch_size, seq_len):
    """``stats.speedup`` of one method's contended runs at one point over its runs alone (two
    sweeps, not paired)."""
    return stats.speedup(*(stats.method_trials(table, method, condition=c, batch_size=batch_size,
                                               seq_len=seq_len) for c in ("contended", "alone")),
                         paired=False)


def headline_line(table, judge, batch_size, seq_len) -> str:
    """What it means, first line: the host copy's speedup over per-row syncs alone at one point,
    as ``stats.say`` gives it, the table's medians named where they differ ("3.37x faster
    (3.19–3.55; the table's medians: 3.53x)"; the round-29 review: 3.37x in the headline, 3.53x
    in the table, and a long sentence between them)."""
    said = stats.say(table, "on host", "per row", judge, condition="alone",
                     batch_size=batch_size, seq_len=seq_len)
    return (f"Alone, batch {batch_size}, completions of {seq_len}, the host copy against per-row "
            f"syncs: {said}.")


def sync_count_line(syncs) -> str:
    """The sync counts in one sentence: per row, from the smallest batch to the largest, and the
    host copy's; "the same at every completion length" only where more than one was counted (the
    workshop counts one: its run of 6bba703 printed it of a single length)."""
    per_row, on_host = (syncs[syncs["method"] == m] for m in ("per row", "on host"))
    lengths = syncs["seq_len"].nunique()
    same = syncs.groupby(["method", "batch_size"])["syncs"].nunique().max() == 1
    tail = ("this preset counts one completion length" if lengths < 2 else
            "the same at every completion length" if same else
            "not the same at every completion length")
    return (f"Syncs per batch: per row {int(per_row['syncs'].min())} to "
            f"{int(per_row['syncs'].max())} ({per_row['syncs_per_row'].max():.0f} a row, growing "
            f"with the batch); the host copy {int(on_host['syncs'].max())}, whatever the batch; "
            f"{tail}.")


def one_line(table, batch_size, seq_len, syncs, wide=None) -> str:
    """The summary's sentence: the host copy's speedup over per-row syncs at one point timed
    alone, the number the headline quotes (``stats.plain``, no second estimate), and, with
    ``wide``, the time each sync the host copy removes saves there (``sync_cost``: the round-27
    review asked for one plain number, not bounds) and its range over the points timed alone (the
    round-28 review: "about 31 µs" alone read as a property of a sync, where six points gave 25 to
    58)."""
    ratio = transfer_speedup(table, "alone", batch_size=batch_size, seq_len=seq_len)
    per_row = syncs["syncs_per_row"].max()
    line = (f"In one line: at batch {batch_size} and completions of {seq_len}, copying the tensors "
            f"to the host first (4 syncs in all instead of {per_row:.0f} a row) gives identical "
            f"lists, timed alone: {stats.plain(ratio, True)}")
    cost = sync_cost(wide, syncs) * 1e6 if wide is not None else pd.Series(dtype=float)
    if (batch_size, seq_len) in cost.index and cost[(batch_size, seq_len)] > 0:
        line += (f"; it saved about {cost[(batch_size, seq_len)]:.0f} µs per sync removed "
                 f"at this size")
        if len(cost) > 1 and f"{cost.min():.0f}" != f"{cost.max():.0f}":  # the round-28 review
            line += f", {cost.min():.0f} to {cost.max():.0f} µs over the {len(cost)} points timed alone"
    return line + "."


def sync_cost(wide, syncs, condition="alone"):
    """The time each sync the host copy saves is worth, per point: (per-row median - host-copy
    median) / (per-row syncs - host-copy syncs), in seconds: the time saved per sync removed,
    net of the host copy's own copies and host work (the round-29 review), the per-row loop's small
    kernels and launches included.
    A Series indexed by (batch_size, seq_len); empty without sync counts."""
    if syncs is None or not len(syncs):
        return pd.Series(dtype=float)
    counts = syncs.pivot_table(index=["batch_size", "seq_len"], columns="method", values="syncs")
    part = wide[wide["condition"] == condition].set_index(["batch_size", "seq_len"])
    saved = (counts["per row"] - counts["on host"]).reindex(part.index)
    return ((part["per row"] - part["on host"]) / saved.where(saved > 0)).dropna()


def sync_cost_line(wide, syncs, batch_size, seq_len) -> str:
    """``sync_cost`` in one sentence: at the headline point, the time each sync the host copy
    removes saves, with the sum behind it, then its range over every point timed alone (the
    round-27 review: "at most ... at least ... only if ... the lower bound", three hedged numbers
    for one question; this is the one the run measures). Empty without sync counts or where the
    point is missing."""
    cost = sync_cost(wide, syncs)
    if (batch_size, seq_len) not in cost.index:
        return ""
    w = wide[(wide["condition"] == "alone") & (wide["batch_size"] == batch_size)
             & (wide["seq_len"] == seq_len)].iloc[0]
    n = syncs[(syncs["batch_size"] == batch_size) & (syncs["seq_len"] == seq_len)] \
        .set_index("method")["syncs"]
    head = (f"({w['per row'] * 1e3:.2f} - {w['on host'] * 1e3:.2f} ms) / "
            f"({int(n['per row'])} - {int(n['on host'])} syncs)")
    us = cost * 1e6
    if us[(batch_size, seq_len)] <= 0:
        return (f"Alone, at this point the per-row loop's syncs cost it no time over the host "
                f"copy: {head} = {us[(batch_size, seq_len)]:.1f} µs per sync.")
    # round 30: "saves about 44 µs here per sync it removes" read as the cost of one sync, and
    # it doubled between batch sizes: named as the saving per sync removed at this size
    span = (f": {us.min():.0f} to {us.max():.0f} µs over the {len(us)} points timed alone"
            if len(us) > 1 and f"{us.min():.0f}" != f"{us.max():.0f}" else "")
    return (f"Saved per sync removed at batch {batch_size}, completions of {seq_len}: about "
            f"{us[(batch_size, seq_len)]:.0f} µs = {head}, the loop's small kernels and "
            f"indexing included; a saving at this size, not a fixed cost of a sync{span}.")


def loaded_sync_line(wide, syncs, batch_size, seq_len, table=None) -> str:
    """``sync_cost`` under the side load at its one point, beside its cost alone: each per-row
    sync's small kernels queue behind the load's matmuls. With ``table`` (its stored runs), that
    reason is read only where the per-row loop's runs under load can be told apart from its runs
    alone (``_load_reading``); with too few runs, the two costs as what the runs showed. Empty
    without both numbers."""
    alone, loaded = sync_cost(wide, syncs) * 1e6, sync_cost(wide, syncs, "contended") * 1e6
    key = (batch_size, seq_len)
    if key not in alone.index or key not in loaded.index or loaded[key] <= 0 or alone[key] <= 0:
        return ""
    head = (f"Under this side load the same sum gives about {loaded[key]:.0f} µs per sync "
            f"removed, against {alone[key]:.0f} µs alone")
    kind, runs = ("told", 0) if table is None else _load_reading(table, "per row", *key)
    if kind == "few":
        return (head + f", in {runs} runs: too few to judge, so no reason is read from them.")
    if kind == "noise":
        return (head + ", but the loop's time under load can't be told apart from its time "
                "alone: no reason is read from them.")
    if loaded[key] > 1.5 * alone[key]:  # the round-27 review: a cause no profile here shows
        return (head + ": most likely the loop's small kernels wait behind the load's matmuls "
                "at every sync (not measured here).")
    return head + ": its small kernels barely wait for the load."


def length_line(wide, batch_size, *, table, prompt_len=None, condition="alone") -> str:
    """How the speedup moves with the completion length, as numbers, judged by none (the
    round-24 review: "says nothing of the length" beside a speedup that fell at every batch
    size): the speedup (per row / on host, the ratio of the medians the right panel draws) at
    the shortest and the longest length of every batch size, and at how many it is lower with
    the longer ones; at ``batch_size``, each method's time at both lengths, the host copy's split
    into what is measured, its copies (with ``prompt_len``, the bytes they move), and the rest,
    its host work (``_host_growth``). Empty with one length."""
    part = wide[wide["condition"] == condition]
    lengths = sorted(part["seq_len"].unique())
    if len(lengths) < 2:
        return ""
    short_n, long_n = int(lengths[0]), int(lengths[-1])
    ratio = part.pivot(index="batch_size", columns="seq_len", values="speedup").round(2)
    moves = [f"from {ratio.loc[b, short_n]:.2f}x to {ratio.loc[b, long_n]:.2f}x at "
             f"{'batch ' if i == 0 else ''}{int(b)}" for i, b in enumerate(ratio.index)]
    lower = int((ratio[long_n] < ratio[short_n]).sum())
    higher = int((ratio[long_n] > ratio[short_n]).sum())
    count = len(ratio)
    if lower == count or higher == count:
        trend = (f"{'lower' if lower else 'higher'} with the longer completions at "
                 f"{'both' if count == 2 else f'all {count}'} batch sizes")
    else:
        trend = (f"lower with the longer completions at {lower} of the {count} batch sizes, "
                 f"higher at {higher}")
    rows = part[part["batch_size"] == batch_size].set_index("seq_len")

    def grew(method):
        a, b = round(1e3 * rows.loc[short_n, method], 2), round(1e3 * rows.loc[long_n, method], 2)
        return f"from {a:.2f} to {b:.2f} ms ({b / a:.2f}x)"

    # round 33: one finding a line, not six in one
    return "\n".join(line for line in (
        f"From completions of {short_n} to {long_n}, the speedup (per row / on host, as the "
        f"right panel draws it) is {trend}: {stats.listed(moves)}.",
        f"At batch {int(batch_size)} the per-row loop's time goes {grew('per row')} and the host "
        f"copy's {grew('on host')}.",
        _host_growth(table, batch_size, short_n, long_n, prompt_len),
        "The headline quotes the longest completions at the largest batch, the largest job "
        "timed.") if line)


def length_reading(wide, batch_size, condition="alone") -> str:
    """Takeaway 3 in this run's numbers: at ``batch_size``, which of the two times moved the
    speedup from the shortest completions to the longest, from each method's factor (as
    ``length_line`` prints it). The round-28 review found the per-row loop 0.62x at batch 256 (run
    898ea06) beside a takeaway that put the drop down to the host copy's work over every token; no
    cause is read for the per-row loop getting faster. Empty with one length or no change."""
    part = wide[(wide["condition"] == condition) & (wide["batch_size"] == batch_size)]
    part = part.set_index("seq_len").sort_index()
    if len(part) < 2:
        return ""
    pr, oh = (round(round(1e3 * part[m].iloc[-1], 2) / round(1e3 * part[m].iloc[0], 2), 2)
              for m in ("per row", "on host"))
    if pr == oh:
        return ""
    drop = pr < oh
    names = {"per row": "the per-row loop", "on host": "the host copy"}
    factor = {"per row": pr, "on host": oh}
    # the method that pushes the speedup this way: per row (its time down for a drop), on host (up)
    push = {"per row": pr < 1 if drop else pr > 1, "on host": oh > 1 if drop else oh < 1}
    size = {m: abs(math.log(f)) for m, f in factor.items()}
    first, second = ("per row", "on host") if size["per row"] > size["on host"] else \
        ("on host", "per row")

    def moved(m):
        return f"{names[m]} getting {'faster' if factor[m] < 1 else 'slower'} ({factor[m]:.2f}x)"

    said = (f"At batch {int(batch_size)}, from completions of {int(part.index[0])} to "
            f"{int(part.index[-1])}, the speedup goes from {part['speedup'].iloc[0]:.2f}x to "
            f"{part['speedup'].iloc[-1]:.2f}x: ")
    change = "drop" if drop else "gain"
    if push[first] and push[second] and size[second] > 0:  # both push it: say which more
        said += f"most of the {change} comes from {moved(first)}, less from {moved(second)}."
    elif size[second] == 0:  # the other printed 1.00x
        said += (f"the {change} comes from {moved(first)}; {names[second]}'s time is about the "
                 f"same (1.00x).")
    else:  # both times moved the same way: the one that moved more
        grow = "grew" if factor[first] > 1 else "shrank"
        said += (f"{names[first]}'s time {grow} more ({factor[first]:.2f}x) than "
                 f"{names[second]}'s ({factor[second]:.2f}x).")
    if first == "per row" and pr < 1:  # the round-28 review: said, with no cause read
        said += (" Nothing timed here says why the per-row loop, whose syncs per row do not "
                 "depend on the length, got faster with the longer completions.")
    return said


def _host_growth(table, batch_size, short_n, long_n, prompt_len=None) -> str:
    """The host copy's growth with the length as far as this lesson measures it: its copies (its
    GPU work) at both lengths, with ``prompt_len`` the bytes they move (``copy_bytes``: the
    round-26 review, "0.02 to 1.60 ms" gave nothing to judge the rate by), named as the GPU's
    side of pageable copies (round 37: their bytes over these times, "35 and 3.1 GB/s", read as
    the link's bandwidth), and the rest, its host work, from the printed ms so the parts add up
    as printed (round 33: no cause read for it; copies under 0.1 ms with three decimals); a line
    of its own, empty without the GPU's work at both points."""
    parts = [call_budget(table, batch_size, n) for n in (short_n, long_n)]
    if any(len(p) < 2 or p["gpu_ms"].isna().any() for p in parts):
        return ""
    (a, c), (b, d) = ([p.set_index("method").loc["on host", k] for k in ("gpu_ms", "wall_ms")]
                      for p in parts)
    # round 33: a copy under 0.1 ms gets three decimals, so its GB/s can be checked by hand
    a, b = (float(_copy_ms(x)) for x in (a, b))  # as printed
    c, d = round(c, 2), round(d, 2)
    moved = ("" if prompt_len is None else " of " + " and ".join(
        f"{copy_bytes(batch_size, prompt_len, n) / 1e6:.2f}" for n in (short_n, long_n)) + " MB")
    pageable = "" if prompt_len is None else ", the GPU's side of pageable copies (exercise 2 uses pinned)"
    # round 33: the CPU's masking, a cause no timing here shows, no longer said as fact
    return (f"Of the host copy's time, its copies{moved} take {_copy_ms(a)} and {_copy_ms(b)} "
            f"ms{pageable}; the rest, its host work over the rows, goes from {c - a:.2f} to "
            f"{d - b:.2f} ms.")


def _copy_ms(ms) -> str:
    """A copy's GPU time as ``_host_growth`` prints it: three decimals under 0.1 ms ("0.017"),
    two above."""
    return f"{ms:.3f}" if ms < 0.1 else f"{ms:.2f}"


def copy_bytes(batch_size, prompt_len, completion_len) -> int:
    """Bytes the host copy moves: ``make_batch``'s four tensors, int64 ids and bool masks."""
    per_token = (torch.empty(0, dtype=torch.int64).element_size()
                 + torch.empty(0, dtype=torch.bool).element_size())
    return batch_size * (prompt_len + completion_len) * per_token


def sync_table(syncs):
    """The sync counts as a table, one row per method and batch size, a column per completion
    length (the round-25 review: twelve rows repeated each count, which the length does not
    change), one column where every length gives the same counts (round 36: two equal columns),
    and the syncs per row of the batch at the longest length, a number to two decimals
    (the round-27 review: text in that column put its header out of line)."""
    view = syncs.pivot_table(index=["method", "batch_size"], columns="seq_len", values="syncs",
                             sort=False).astype(int)
    view.columns = [f"syncs, length {n}" for n in view.columns]
    if view.shape[1] > 1 and view.nunique(axis=1).eq(1).all():
        view = view.iloc[:, -1:].set_axis(["syncs, every length"], axis=1)
    view = view.reset_index()
    view["syncs per row"] = (view.iloc[:, -1] / view["batch_size"]).round(2)
    order = {m: i for i, m in enumerate(dict.fromkeys(syncs["method"]))}
    return view.sort_values(["batch_size", "method"], key=lambda c: c.map(order) if c.name ==
                            "method" else c, kind="stable").reset_index(drop=True)


def table_view(wide, methods=("per row", "on host")):
    """The table right after the sweeps: each method's median in ms per batch, the speedup alone
    only (none is quoted under load) and the side load in ms; "—" where there is none."""
    shown = {**{c: f"{c} ms" for c in methods}, **({"load_s": "load ms"} if "load_s" in wide else {})}
    view = (wide.assign(**{c: wide[c] * 1e3 for c in shown},
                        speedup=wide["speedup"].where(wide["condition"] == "alone"))
            .rename(columns=shown).round(2))
    for column, text in (("speedup", "{:.2f}"), ("load ms", "{:g}")):  # none: a dash, not NaN or 0
        if column in view:
            view[column] = view[column].map(lambda v: "—" if pd.isna(v) or v == 0 else text.format(v))
    return view


def call_budget(table, batch_size, seq_len, methods=("per row", "on host")):
    """The time budget of one post-processing call at a point timed alone (``busy=True``), in
    ms per call: the host's wall clock, the GPU's work inside it (for the host copy: the copies)
    and the GPU's idle time; the columns of ``budget.per_step``, which ``budget.plot`` draws.
    There is no floor: nothing here has to be read at the GPU's bandwidth."""
    rows = table[(table["condition"] == "alone") & (table["batch_size"] == batch_size)
                 & (table["seq_len"] == seq_len)]
    return budget.per_step(rows.assign(seq_len=1), list(methods))


def _about(ms) -> str:
    """A rounded estimate: whole ms from 10 ms up, else one decimal."""
    return f"{ms:.0f}" if abs(ms) >= 10 else f"{ms:.1f}"


def call_sentence(frame, syncs_per_row=float("nan")) -> str:
    """``call_budget`` read in two sentences, measured parts only: both calls and the GPU's work
    in each, the host copy's call split into its copies and the rest, the host's own indexing and
    list building; then the per-row loop's time besides the GPU's work, whose parts (launches,
    waits, list building) are not timed apart (the cost of one sync bounds them: the round-24
    review found two lower bounds, 26 and 30 ms, of slightly different things). Empty without the
    GPU's numbers (a CPU run)."""
    data = frame.set_index("method")
    if len(data) < 2 or data["gpu_ms"].isna().any():
        return ""
    slow, fast = data.iloc[0], data.iloc[1]
    syncs = "" if math.isnan(syncs_per_row) else f" ({syncs_per_row:.0f} a row)"
    # from the printed values, so the parts add up as printed (the 06:54 run printed 12.52 ms
    # beside 14.02 - 1.49 = 12.53)
    wall, gpu = round(slow["wall_ms"], 2), round(slow["gpu_ms"], 2)
    build = round(fast["wall_ms"], 2) - round(fast["gpu_ms"], 2)
    return (f"The per-row loop takes {wall:.2f} ms per batch, the GPU working {gpu:.2f} ms of it; "
            f"the host copy takes {fast['wall_ms']:.2f} ms: {fast['gpu_ms']:.2f} ms its copies and "
            f"the rest, about {_about(build)} ms, the host's: indexing the rows, building the "
            f"lists and its side of the copies, not timed apart. The per-row loop's other {wall - gpu:.2f} ms go to launching "
            f"small kernels, waiting at its syncs{syncs} and building its lists, not timed apart "
            f"here.")


def sync_view(found, batch_size):
    """``profiling.find_syncs``'s table cut to the line of code and its count, and one note on
    how many syncs each line makes per row of a batch of ``batch_size`` (empty for a line that
    does not run per row)."""
    view = found[["code", "count"]].reset_index(drop=True)
    per_row = found["count"] / batch_size
    if len(found) and (per_row == 2).all():
        note = "2 per row from each line: the boolean index's `nonzero` and `tolist()`"
    elif len(found) and (per_row == per_row.round()).all() and (per_row >= 1).all():
        note = "per row from each line: " + ", ".join(f"{v:.0f}" for v in per_row)
    else:
        note = ""
    return view, note


def plot(table, batch_sizes, completion_lens):
    """Notebook 09's figure, alone only (a time under load holds for that load only): left, each
    method's time per batch at every completion length; right, the host copy's speedup (per row
    / on host, the ratio of the medians, as the table) at every length, in the left panel's line
    styles, and at the largest point the number the headline quotes (a black diamond), with its
    range where it has one, drawn just right of that batch so no square hides it. Returns the
    figure."""
    wide = speedups(table)
    method_color = {"per row": "C1", "on host": "C0"}  # left panel: colour = method
    length_style = dict(zip(sorted(completion_lens, reverse=True), ["-", "--", ":", "-."]))
    fig, (ax_time, ax_gain) = plotting.subplots(ncols=2)
    alone = table[table["condition"] == "alone"]
    for name, color in method_color.items():
        for length in completion_lens:
            part = alone[(alone["method"] == name) & (alone["seq_len"] == length)] \
                .sort_values("batch_size")
            ax_time.plot(part["batch_size"], part["median_s"] * 1e3, marker="o", color=color,
                         linestyle=length_style.get(length, ":"), label=f"{name}, length {length}")
    for length in completion_lens:
        part = wide[(wide["condition"] == "alone") & (wide["seq_len"] == length)]
        ax_gain.plot(part["batch_size"], part["speedup"], marker="s",
                     color=method_color["on host"], linestyle=length_style.get(length, ":"),
                     label=f"length {length}")
    # the number the headline quotes (the round-25 review: 3.06x in the text, only 3.28x drawn)
    big, longest = max(batch_sizes), max(completion_lens)
    quoted = transfer_speedup(table, "alone", batch_size=big, seq_len=longest)
    if math.isfinite(quoted.estimate):  # its range only where the headline prints one
        ranged = quoted.n >= stats.MIN_TRIALS and math.isfinite(quoted.low + quoted.high)
        # just right of the largest batch and over the lines (the round-26 review: it hid under
        # the 2048 square)
        ax_gain.errorbar([big * 1.12], [quoted.estimate], fmt="D", color="black", capsize=4,
                         zorder=5,
                         yerr=([[quoted.estimate - quoted.low], [quoted.high - quoted.estimate]]
                               if ranged else None),
                         label=f"headline {quoted.estimate:.2f}x"
                         + (", with range" if ranged else ""))
    ax_time.set(xscale="log", yscale="log", xlabel="batch size (rows)", ylabel="ms per batch (log scale)",
                title="Post-processing time, alone")
    plotting.plain_log_ticks(ax_time, "y")  # 2, 5, 10, 20 ...: a label below 10 as well
    ax_time.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax_gain.axhline(1.0, color="gray", linewidth=1, label="1: no speedup")
    ax_gain.set(xscale="log", xlabel="batch size (rows)", ylabel="per row / on host",
                title="Speedup of the host copy, alone")
    # long legend handles: the line styles of the lengths tell apart around the marker
    # each legend below its panel, outside the axes, so it hides no point
    for ax in (ax_time, ax_gain):
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8,
                  handlelength=4, frameon=False)
    for ax in (ax_time, ax_gain):
        ax.set_xticks(batch_sizes, [str(b) for b in batch_sizes])
        ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
    # room inside the figure for the legends, so the footer (``run.save_figure`` writes it just
    # below the figure's bottom edge) lies under them, not over the left one
    fig.subplots_adjust(bottom=0.25)
    return fig


GPU_WORK = "GPU work (kernels, or the host copy's copies)"


def fit_axis(ax, call):
    """After ``budget.plot`` of ``call_budget``: the x axis labelled per call and ended just past
    the longest bar, with room for its label (``budget.plot`` leaves 40% for a decode step's); the
    GPU bar's legend entry renamed (the round-23 review: "kernel time" for the host copy's copies)."""
    ax.set_xlabel("ms per call (one batch)")
    legend = ax.get_legend()
    for text in legend.get_texts() if legend else []:
        if text.get_text().startswith("GPU work"):
            text.set_text(GPU_WORK)
    top = max(call["wall_ms"].max(), call["gpu_ms"].max() if call["gpu_ms"].notna().any() else 0)
    if top > 0:
        ax.set_xlim(0, top * 1.2)
