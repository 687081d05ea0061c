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

import torch

from .course import budget, harness, stats


def postprocess_per_row(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Each row's real prompt and completion tokens as lists, indexed row by row where the
    tensors live: on a GPU every boolean index and every ``tolist()`` is a sync."""
    prompts, completions = [], []
    for row in range(prompt_ids.shape[0]):
        prompts.append(prompt_ids[row][prompt_mask[row]].tolist())
        completions.append(completion_ids[row][completion_mask[row]].tolist())
    return prompts, completions


def postprocess_on_host(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """The same lists after one move of the four tensors to the CPU: four syncs in all,
    whatever the batch size; the per-row indexing then runs on host memory."""
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
    the work queued for it."""

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
    """``stats.row_speedup`` of one transfer over per-row syncs in one condition (both
    conditions' trials are interleaved rounds, so paired)."""
    return stats.row_speedup(table, "on host", "per row", condition=condition, **where)


def contention_line(table, syncs=None) -> str:
    """How contention changes each method's time: contended / alone at every point of ``table``
    (both timed by the same clock), read right whatever the range; a point where a method got
    faster is named as the host's variation when its runs alone and contended overlap. With the
    sync counts (``syncs``, the table of "Counting the syncs"), how many times each waits per
    call at the largest batch."""
    keys = ["method", "batch_size", "seq_len"]
    alone, busy = (table[table["condition"] == c].set_index(keys) for c in ("alone", "contended"))

    def moved(method, what, first):
        ratios = (busy["median_s"] / alone["median_s"]).loc[method].dropna()
        low, high = ratios.min(), ratios.max()
        if low >= 1:
            return f"{'Contention' if first else 'it'} slows {what} {low:.1f}x to {high:.1f}x"
        faster = ratios[ratios < 1].index
        overlap = {"min_s", "max_s"} <= set(table) and all(
            busy.loc[(method, *i), "max_s"] >= alone.loc[(method, *i), "min_s"] for i in faster)
        return (f"{'Under contention, ' if first else ''}{what} takes {low:.1f}x to {high:.1f}x its "
                f"time alone (below 1: faster, at {len(faster)} of {len(ratios)} points"
                + (", where its runs alone and contended overlap: the host's variation" if overlap
                   else "") + ")")

    text = f"{moved('per row', 'the per-row loop', True)}; {moved('on host', 'one transfer', False)}"
    if syncs is not None and len(syncs):
        most = syncs["batch_size"].max()
        big = syncs[syncs["batch_size"] == most].set_index("method")["syncs"]
        if {"per row", "on host"} <= set(big.index):
            text += (f". At batch {int(most)} one transfer waits {int(big['on host'])} times per "
                     f"call, the per-row loop {int(big['per row'])} ({big['per row'] / most:.0f} a "
                     "row)")
    return text + "."


def one_line(table, batch_size, seq_len, syncs_per_row) -> str:
    """The summary's sentence: one transfer's speedup over per-row syncs alone and contended at
    one point (the estimate from the runs, as ``stats.say`` gives it), with the table's ratio of
    medians where it differs by more than ``stats.MEDIANS_APART``."""
    said, medians = [], []
    wide = speedups(table).set_index(["condition", "batch_size", "seq_len"])["speedup"]
    for condition, words in (("alone", "alone"), ("contended", "under contention")):
        if condition in set(table["condition"]):
            ratio = transfer_speedup(table, condition, batch_size=batch_size, seq_len=seq_len)
            said.append(f"{ratio.estimate:.2f}x as fast {words}")
            medians.append((wide[(condition, batch_size, seq_len)], ratio.estimate))
    text = (f"In one line: at batch {batch_size} and completions of {seq_len}, one transfer instead "
            f"of {syncs_per_row:.0f} syncs a row gives identical lists " + " and ".join(said))
    if any(stats.medians_apart(m, e) for m, e in medians):
        text += (" (estimates from the runs; the table's ratio of the medians: "
                 + " and ".join(f"{m:.2f}x" for m, _ in medians) + ")")
    return text + "."


def length_line(wide, batch_size, condition="alone") -> str:
    """How the completion length moves both methods at one batch size: each one's median time
    at the shortest and the longest length, and the speedup they give."""
    part = wide[(wide["condition"] == condition) & (wide["batch_size"] == batch_size)]
    short, long = part.loc[part["seq_len"].idxmin()], part.loc[part["seq_len"].idxmax()]
    return (f"{condition.capitalize()} at batch {batch_size}, completions of {int(short['seq_len'])} "
            f"-> {int(long['seq_len'])} take one transfer from {1e3 * short['on host']:.2f} to "
            f"{1e3 * long['on host']:.2f} ms and the per-row loop from {1e3 * short['per row']:.2f} "
            f"to {1e3 * long['per row']:.2f} ms: the speedup goes from {short['speedup']:.2f}x to "
            f"{long['speedup']:.2f}x." + _flat_note(short, long))


def batch_line(wide, seq_len, syncs=None, condition="alone") -> str:
    """Why cutting the syncs many times over buys a smaller speedup: one transfer still builds
    the lists row by row on the host, so its time grows with the batch, and the per-row loop's
    time is its syncs plus that same list building. Each method's median time at the smallest
    and the largest batch, at completions of ``seq_len``."""
    part = wide[(wide["condition"] == condition) & (wide["seq_len"] == seq_len)]
    if part["batch_size"].nunique() < 2:
        return ""
    small, big = part.loc[part["batch_size"].idxmin()], part.loc[part["batch_size"].idxmax()]
    rows = big["batch_size"] / small["batch_size"]
    cut = ""
    if syncs is not None:
        at = syncs[syncs["batch_size"] == big["batch_size"]].set_index("method")["syncs"]
        if {"per row", "on host"} <= set(at.index) and at["on host"] > 0:
            fold = at["per row"] / at["on host"]
            if big["speedup"] < fold:
                cut = (f" That is why cutting the syncs {fold:.0f}x ({int(at['per row'])} -> "
                       f"{int(at['on host'])} at batch {int(big['batch_size'])}) buys a smaller "
                       "speedup than that.")
    return (f"One transfer still builds the lists row by row on the host: {condition}, at "
            f"completions of {int(seq_len)}, its time goes from {1e3 * small['on host']:.2f} ms at "
            f"batch {int(small['batch_size'])} to {1e3 * big['on host']:.2f} ms at batch "
            f"{int(big['batch_size'])} ({rows:.0f}x the rows), so the per-row loop's time is its "
            f"syncs plus that same list building." + cut)


def _flat_note(short, long) -> str:
    """Why the per-row loop may not slow down with longer completions (or even speed up)."""
    if long["per row"] > 1.2 * short["per row"]:
        return ""
    grown = long["seq_len"] / short["seq_len"]
    ratio = long["per row"] / short["per row"]
    change = "no slower" if ratio <= 1.05 else f"only {ratio:.2f}x slower"
    note = (f" The per-row loop is {change} at {grown:.0f}x longer completions: its time is mostly "
            "a fixed number of syncs and small kernels per row, whatever the length")
    if long["per row"] < short["per row"]:
        note += "; the shorter time at the longer length is the host's variation between the points"
    return note + "."


def call_budget(table, batch_size, seq_len, methods=("per row", "on host")):
    """The time budget of one post-processing call at a point timed alone (``busy=True``), in
    ms per call: the host's wall clock, the GPU's work inside it (for one transfer: the copies)
    and the GPU's idle time; the columns of ``budget.per_step``, which ``budget.plot`` draws.
    There is no floor: nothing here has to be read at the GPU's bandwidth."""
    rows = table[(table["condition"] == "alone") & (table["batch_size"] == batch_size)
                 & (table["seq_len"] == seq_len)]
    return budget.per_step(rows.assign(seq_len=1), list(methods))


def call_sentence(frame, syncs_per_row=float("nan")) -> str:
    """``call_budget`` read in one sentence; empty without the GPU's numbers (a CPU run)."""
    data = frame.set_index("method")
    if len(data) < 2 or data["gpu_ms"].isna().any():
        return ""
    slow, fast = data.iloc[0], data.iloc[1]
    syncs = "" if math.isnan(syncs_per_row) else f", {syncs_per_row:.0f} syncs a row"
    return (f"The per-row loop keeps the host busy {slow['wall_ms']:.2f} ms per batch while the "
            f"GPU works {slow['gpu_ms']:.2f} ms of it: the rest is Python issuing tiny kernels "
            f"and waiting for each{syncs}. For one transfer the GPU's work is its copies: "
            f"{fast['gpu_ms']:.2f} ms, and the whole call {fast['wall_ms']:.2f} ms"  # speedup: verdict line
            + (", most of it the host's list building." if fast["gpu_ms"] < fast["wall_ms"] / 2
               else "."))
