"""The benchmark harness: methods compared at one point run as interleaved trials (A B C,
B C A, ...) in one process, each trial timed three ways (wall clock, GPU events, the CPU's
issue time) with its own memory peaks; summaries keep every trial so that ``stats`` can put a
95% interval on a ratio and call it faster, slower or within noise.

Why synchronize: CUDA kernels run asynchronously, so a host clock read right after a call
measures only how long the CPU took to *queue* the work. ``sync`` waits for the GPU first.
"""
from __future__ import annotations

import contextlib
import gc
import math
import os
import statistics
import sys
import time
import warnings

import torch

OK, OOM = "ok", "oom"


def sync(device) -> None:
    """Wait until every kernel queued on ``device`` has finished (no-op on CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def fragmentation_pct(peak_reserved_bytes, peak_allocated_bytes) -> float:
    """Reserved memory the allocator holds but no tensor uses, at the peaks, in % of reserved.

    The article's definition: (reserved - allocated) / reserved. NaN when nothing was reserved.
    """
    if not peak_reserved_bytes or peak_reserved_bytes <= 0 or math.isnan(peak_reserved_bytes):
        return float("nan")
    return 100.0 * (peak_reserved_bytes - peak_allocated_bytes) / peak_reserved_bytes


def summarize(times) -> dict:
    """Median, min and max of a list of durations in seconds."""
    if not times:
        raise ValueError("summarize needs at least one duration")
    return {"repeats": len(times), "median_s": statistics.median(times),
            "min_s": min(times), "max_s": max(times)}


def release_memory(device) -> None:
    """Free cached blocks and reset the peak counters, so the next measurement starts clean."""
    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def memory_stats(device) -> dict:
    """Peak allocated/reserved bytes, fragmentation and allocation retries since the last reset.
    On a CPU the allocator keeps no such statistics and the values are NaN."""
    if torch.device(device).type != "cuda":
        nan = float("nan")
        return {"peak_allocated_bytes": nan, "peak_reserved_bytes": nan,
                "fragmentation_pct": nan, "alloc_retries": nan}
    stats = torch.cuda.memory_stats(device)
    allocated = stats.get("allocated_bytes.all.peak", 0)
    reserved = stats.get("reserved_bytes.all.peak", 0)
    return {"peak_allocated_bytes": allocated, "peak_reserved_bytes": reserved,
            "fragmentation_pct": fragmentation_pct(reserved, allocated),
            "alloc_retries": stats.get("num_alloc_retries", 0)}


def is_oom(error: BaseException) -> bool:
    """True for the CUDA allocator's out-of-memory error (and its RuntimeError spelling)."""
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower())


def _memory_baseline(device, fresh_allocator: bool) -> int:
    """Before one timed run: optionally empty the allocator's cache (the article's method), reset
    the peak counters, and return the allocation-retry count to subtract afterwards."""
    if torch.device(device).type != "cuda":
        return 0
    torch.cuda.synchronize(device)
    if fresh_allocator:
        torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    return torch.cuda.memory_stats(device).get("num_alloc_retries", 0)


def trial(fn, *, device, fresh_allocator: bool = True):
    """One timed run of ``fn()``. Returns (record, output); the record holds

    - ``wall_s``: host clock from a synchronized start to a synchronized end (what a user feels);
    - ``gpu_s``: CUDA events recorded on the current stream around the work (NaN on a CPU);
    - ``cpu_s``: the host's time until ``fn`` returned, i.e. to issue the work (a loop that
      syncs inside waits there too);
    - this run's own memory peaks and allocation retries (reset before it, retries as a
      difference), not those of warm-up or earlier runs.
    """
    cuda = torch.device(device).type == "cuda"
    retries0 = _memory_baseline(device, fresh_allocator)
    events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) if cuda else None
    start = time.perf_counter()
    if events:
        events[0].record()
    out = fn()
    issued = time.perf_counter()
    if events:
        events[1].record()
    sync(device)
    end = time.perf_counter()
    record = {"wall_s": end - start, "cpu_s": issued - start,
              "gpu_s": events[0].elapsed_time(events[1]) * 1e-3 if events else float("nan"),
              **memory_stats(device)}
    if cuda:
        record["alloc_retries"] -= retries0
    return record, out


def gpu_busy_s(fn, device) -> float:
    """Seconds the GPU was busy (kernels and copies) in one run of ``fn()``, from the profiler:
    the GPU *work*, apart from the gaps where it waited (for the CPU, or between kernels). One
    extra, untimed run; NaN on a CPU. Taken straight from the profiler's raw results (the union
    of the device events' intervals, ``device_event_ns``): its table of events
    (``key_averages``) gives their sum, but building it took 13.5 s
    against 0.6 s for one 400-token loop of notebook 04 (253,000 events; H100 host,
    ``docs/runs/probes/busy_sum_probe.py``)."""
    if torch.device(device).type != "cuda":
        return float("nan")
    from torch.profiler import ProfilerActivity, profile  # lazy: the profiler is slow to import

    sync(device)
    with warnings.catch_warnings():  # the profiler's notes on its own set-up are not the lesson's
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            sync(device)
    return device_event_ns(prof.profiler.kineto_results.events()) * 1e-9


def device_event_ns(events) -> int:
    """Time (ns) during which the GPU ran at least one of its events (kernels, copies, memsets)
    among the profiler's raw ``_KinetoEvent`` s: the union of their intervals, so kernels that
    overlap (two streams, or Programmatic Dependent Launch, where a kernel starts and waits
    while the one ahead still runs) count once, never more than the wall clock. CPU-side events
    and user annotations drawn on the GPU's timeline (ranges, not work) are left out."""
    cuda = torch.autograd.DeviceType.CUDA
    return busy_ns([(e.start_ns(), e.end_ns()) for e in events
                    if e.device_type() == cuda and not e.is_user_annotation()])


def busy_ns(intervals) -> int:
    """Length of the union of ``(start, end)`` intervals: the time at least one was running."""
    total, end = 0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total, end = total + max(stop - start, 0), stop
        elif stop > end:
            total, end = total + stop - end, stop
    return total


BOUND_BUSY_PCT = 80  # GPU busy at least this share of the wall clock: the GPU sets the pace
HOST_IDLE_PCT = 50  # GPU idle at least this share of the wall clock: the host sets the pace


def bound(busy_s, wall_s) -> str:
    """Lesson 00's pace rule as a table label (budget.pace words it): 'GPU-bound' where the GPU
    idles at most 20% of the wall clock, 'CPU-bound' where it idles 50% or more (waiting for the
    host's launches, Python, syncs), 'shared' in between; '' when unknown (no GPU). The idle
    share is rounded as the lessons print it, so a table's label and a lesson's words agree (the
    round-37 review of 01 read 'CPU-bound' beside 'host and GPU share the pace' at 37% idle)."""
    if not (busy_s > 0 and wall_s > 0):
        return ""
    return pace_label(100 - 100 * busy_s / wall_s)


def pace_label(idle_pct: float) -> str:
    """Lesson 00's pace rule on a step whose GPU idles ``idle_pct`` % of it, rounded as printed
    ("20%" never reads "shared"): 'CPU-bound' (the host sets the pace), 'GPU-bound' or 'shared';
    an unknown share (NaN) reads 'shared'. The one rule ``bound`` and ``budget.pace`` apply."""
    if not math.isnan(idle_pct):
        idle_pct = round(idle_pct)
    if idle_pct >= HOST_IDLE_PCT:
        return "CPU-bound"
    return "GPU-bound" if idle_pct <= 100 - BOUND_BUSY_PCT else "shared"


def _loop_s(n=20000) -> float:
    """Seconds for a fixed pure-Python loop: how fast the core running it is right now."""
    start = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i
    return time.perf_counter() - start


def fastest_cpu(tries: int = 3):
    """The CPU (of those this thread may run on) that runs a fixed pure-Python loop fastest now,
    or None where threads cannot be pinned (not Linux) or only one CPU is allowed.

    Why try: on a shared or virtualized host the cores do not run at one speed (measured on a
    lent H100 host: the same loop took 15 to 36 ms as the scheduler moved the thread between
    cores), and a CPU-bound decode loop slows with its core. Measured twice on lent H100 hosts:
    pinned to one core, the eager KV loop's trials spread 1.28x instead of 1.79x; but in 14
    rounds alternating pinned (fastest core) and unpinned in one process, pinning did not
    narrow the spread of eager or compiled trials (paired eager ratios spread more). So
    ``compare`` leaves it off unless asked (``pin_cpu=True``)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    best, best_s = None, math.inf
    for cpu in allowed:
        with pinned(cpu):
            seconds = min(_loop_s() for _ in range(tries))
        if seconds < best_s:
            best, best_s = cpu, seconds
    return best


@contextlib.contextmanager
def pinned(cpu):
    """Run the body with this thread on ``cpu`` alone (threads started inside inherit it), then
    restore its CPUs; a no-op for ``cpu=None``."""
    if cpu is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


TRIAL_COLUMNS = {"wall_s": "trials_wall_ms", "gpu_s": "trials_gpu_ms", "cpu_s": "trials_cpu_ms"}


def compare(methods: dict, *, device, repeats, warmup=1, budget_s=None, max_repeats=None,
            fresh_allocator=True, busy=False, pin_cpu=False, **columns):
    """Time several methods at one point as interleaved trials in this process: round r runs
    every method once, in an order rotated by r (A B C, B C A, C A B, ...), so drift in clocks,
    temperature or the host's load falls on all of them alike and trials of one round are
    paired. ``warmup`` untimed rounds come first. At least ``repeats`` rounds; with
    ``budget_s``, more while the budget lasts (up to ``max_repeats``, default 5 x repeats).
    With ``pin_cpu`` the timed rounds run on the fastest core (``fastest_cpu``, chosen after the
    warm-up, so compilation there still uses every core); each row names it in ``pinned_cpu``
    (-1: not pinned). Off by default: on a lent H100 host it did not narrow the spread (see
    ``fastest_cpu``).

    Returns (rows, outputs): one row per method (median/min/max wall time, median GPU and CPU
    time, every trial in ms as text so the CSV keeps them for intervals, the last run's memory
    peaks, retries summed over timed runs; with ``busy=True`` the GPU's busy time from one
    profiled run and whether the method is CPU- or GPU-bound) and each method's last output.
    A method that runs out of memory gets ``status='oom'`` and leaves the later rounds."""
    if not methods:
        raise ValueError("compare needs at least one method")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    names = list(methods)
    records = {name: [] for name in names}
    outputs, errors = {name: None for name in names}, {}
    release_memory(device)
    for _ in range(warmup):
        for name in names:
            if name not in errors:
                errors.update(_guard(name, lambda n=name: outputs.__setitem__(n, methods[n]()),
                                     device))
    max_repeats = max(repeats, max_repeats or 5 * repeats)
    cpu = fastest_cpu() if pin_cpu else None
    start, rounds = time.perf_counter(), 0
    with pinned(cpu):
        while rounds < repeats or (budget_s and rounds < max_repeats
                                   and time.perf_counter() - start < budget_s):
            live = [n for n in names if n not in errors]
            if not live:
                break
            shift = rounds % len(live)
            for name in live[shift:] + live[:shift]:
                def run(n=name):
                    record, outputs[n] = trial(methods[n], device=device,
                                               fresh_allocator=fresh_allocator)
                    records[n].append({"round": rounds, **record})
                errors.update(_guard(name, run, device))
            rounds += 1
    columns = {**columns, "pinned_cpu": -1 if cpu is None else cpu}
    busy_by = {}
    if busy:
        for name in names:
            if name not in errors:
                busy_by[name] = gpu_busy_s(methods[name], device)
    rows = [_summary_row(name, records[name], errors.get(name), busy_by.get(name), columns)
            for name in names]
    release_memory(device)
    return rows, outputs


def _guard(name, call, device) -> dict:
    """Run ``call``; an out-of-memory error becomes {name: message} (the allocator cleaned),
    anything else propagates, noted with the method's name."""
    try:
        call()
        return {}
    except Exception as error:  # noqa: BLE001 - only OOM is turned into a row
        if not is_oom(error):
            error.add_note(f"(while running the method {name!r})")
            raise
        message = _first_line(error)
    release_memory(device)
    return {name: message}


def _summary_row(name, records, error, busy, columns) -> dict:
    nan = float("nan")
    if error is not None or not records:
        return {"method": name, **columns, "status": OOM, "repeats": len(records),
                **_nan_timing(), "gpu_median_s": nan, "cpu_median_s": nan,
                "gpu_busy_s": nan, "bound": "", **{c: "" for c in TRIAL_COLUMNS.values()},
                "peak_allocated_bytes": nan, "peak_reserved_bytes": nan,
                "fragmentation_pct": nan, "alloc_retries": nan, "error": error or "no trials"}
    wall = [r["wall_s"] for r in records]
    last = records[-1]
    median = statistics.median(wall)
    busy = nan if busy is None else busy
    return {"method": name, **columns, "status": OK, **summarize(wall),
            "gpu_median_s": statistics.median(r["gpu_s"] for r in records),
            "cpu_median_s": statistics.median(r["cpu_s"] for r in records),
            "gpu_busy_s": busy, "bound": bound(busy, median),
            **{column: trials_text(r[key] for r in records)
               for key, column in TRIAL_COLUMNS.items()},
            "peak_allocated_bytes": last["peak_allocated_bytes"],
            "peak_reserved_bytes": last["peak_reserved_bytes"],
            "fragmentation_pct": last["fragmentation_pct"],
            "alloc_retries": sum(r["alloc_retries"] for r in records), "error": ""}


def trials_text(seconds) -> str:
    """Per-trial times as the text a results row keeps (ms, space-separated), for ``trials``."""
    return " ".join(f"{t * 1e3:.4f}" for t in seconds)


def trials(row, metric: str = "wall") -> list:
    """The per-trial times (seconds) of a results row (a dict or a table row), from its
    ``trials_<metric>_ms`` text; empty when the row has none."""
    text = row.get(f"trials_{metric}_ms")
    if not isinstance(text, str) or not text.strip():
        return []
    return [float(v) * 1e-3 for v in text.split()]


def measure(fn, *, device, repeats, warmup=1, fresh_allocator=True):
    """``compare`` for one method: (row, last output)."""
    rows, outputs = compare({"m": fn}, device=device, repeats=repeats, warmup=warmup,
                            fresh_allocator=fresh_allocator)
    row = rows[0]
    del row["method"]
    return row, outputs["m"]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


def _nan_timing() -> dict:
    nan = float("nan")
    return {"median_s": nan, "min_s": nan, "max_s": nan}


def with_tokens_per_s(row, batch_size, seq_len, new_tokens=None) -> dict:
    """A row with ``tokens_per_s`` (``new_tokens`` per call, default batch x length)."""
    new_tokens = batch_size * seq_len if new_tokens is None else new_tokens
    row["tokens_per_s"] = new_tokens / row["median_s"] if row["status"] == OK else float("nan")
    return row


def compare_row(methods: dict, *, device, batch_size, seq_len, repeats, warmup=1, new_tokens=None,
                budget_s=None, busy=False, fresh_allocator=True, **extra):
    """``compare`` with the columns every results table shares (batch size, length, tokens/s,
    device name). Returns (rows, outputs)."""
    rows, outputs = compare(methods, device=device, repeats=repeats, warmup=warmup,
                            budget_s=budget_s, busy=busy, fresh_allocator=fresh_allocator,
                            batch_size=batch_size, seq_len=seq_len, **extra)
    label = device_label(device)
    for row in rows:
        with_tokens_per_s(row, batch_size, seq_len, new_tokens)
        row["device_name"] = label
    return rows, outputs


def bench_row(method, fn, *, device, batch_size, seq_len, repeats, warmup=1, new_tokens=None,
              **extra):
    """One method timed alone (``compare_row`` with one entry): (row, last output). Methods that
    are compared with each other belong in one ``compare_row`` call, so their trials interleave."""
    rows, outputs = compare_row({method: fn}, device=device, batch_size=batch_size, seq_len=seq_len,
                                repeats=repeats, warmup=warmup, new_tokens=new_tokens, **extra)
    return rows[0], outputs[method]


def device_time_s(fn, *, device, iters=50, warmup=3) -> float:
    """Mean seconds per call of ``fn()`` timed by CUDA events over ``iters`` back-to-back calls
    (launch gaps amortised; for bandwidth and kernel timings). Host clock on a CPU."""
    for _ in range(warmup):
        fn()
    sync(device)
    if torch.device(device).type != "cuda":
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - start) / iters
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) * 1e-3 / iters


def device_label(device) -> str:
    """The GPU's name, or 'cpu'."""
    device = torch.device(device)
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def sweep(points, run_point, desc="sweep"):
    """Run ``run_point(point)`` for every point and collect the rows it returns (a dict or a
    list of dicts). Progress: in JupyterLab a bar that disappears when done; headless (the
    runner sets ``COURSE_RUN_DIR``) one line per point appended to ``runs/<preset>/NN_topic.log``,
    so the executed notebook stays quiet. A point
    that runs out of memory outside ``measure`` (building its inputs, say) becomes one row with
    status 'oom' (the point's keys, when it is a dict, and NaN timings), the allocator is
    cleaned, and the sweep goes on."""
    points = list(points)
    rows = []
    with _progress(len(points), desc) as step:
        for i, point in enumerate(points, start=1):
            start = time.perf_counter()
            oom = None
            try:
                result = run_point(point)
            except Exception as error:  # noqa: BLE001 - only OOM is turned into a row
                if not is_oom(error):
                    raise
                oom = _first_line(error)
            if oom is not None:  # outside the except block: the failed point's frames are gone
                result = _oom_row(point, desc, oom)
                release_memory("cuda" if torch.cuda.is_available() else "cpu")
            new = result if isinstance(result, list) else [result]
            rows.extend(new)
            status = ", ".join(f"{r.get('method', '')} {_short(r)}" for r in new)
            step(f"[{desc} {i}/{len(points)}] {point}: {status} "
                 f"({time.perf_counter() - start:.1f}s)")
    return rows


def headless() -> bool:
    """True when the runner executes this notebook (papermill), False in JupyterLab or a shell."""
    return bool(os.environ.get("COURSE_RUN_DIR"))


PROGRESS_LOG_ENV = "COURSE_PROGRESS_LOG"  # results.start_notebook points it at the run's log


@contextlib.contextmanager
def _progress(total: int, desc: str):
    """Yields ``step(line)``: headless, the line is appended to the notebook's log in the run
    folder (``runs/<preset>/NN_topic.log``), never to the notebook's own output (the kernel
    forwards even its raw stderr there); interactive, a tqdm bar advances and disappears."""
    if headless():
        log = os.environ.get(PROGRESS_LOG_ENV)

        def step(line):
            if log:
                with open(log, "a") as handle:
                    handle.write(line + "\n")
        yield step
        return
    from tqdm.auto import tqdm  # lazy: only an interactive session draws a bar

    with tqdm(total=total, desc=desc, leave=False) as bar:
        yield lambda line: bar.update(1)


def _oom_row(point, desc, error) -> dict:
    """The row of a sweep point that ran out of memory before ``measure`` could record it."""
    base = dict(point) if isinstance(point, dict) else {"point": str(point)}
    base.setdefault("method", desc)
    nan = float("nan")
    return {**base, "status": OOM, "repeats": 0, **_nan_timing(), "tokens_per_s": nan,
            "peak_allocated_bytes": nan, "peak_reserved_bytes": nan, "fragmentation_pct": nan,
            "alloc_retries": nan, "error": error}


def _short(row):
    if row.get("status") == OOM:
        return "OOM"
    median = row.get("median_s")
    return f"{median * 1e3:.1f} ms" if isinstance(median, float) and not math.isnan(median) else "done"
