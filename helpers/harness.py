"""The benchmark harness: warm up, time with the device synchronized, repeat, and report
median / min / max with the allocator's peak memory, fragmentation and retries.

Why synchronize: CUDA kernels run asynchronously, so a host clock read right after a call
measures only how long the CPU took to *queue* the work. ``sync`` waits for the GPU first.
"""
from __future__ import annotations

import gc
import math
import statistics
import time

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


def measure(fn, *, device, repeats, warmup=1):
    """Run ``fn()`` ``warmup`` times untimed, then ``repeats`` times timed with the device
    synchronized around each call. Returns (row, last output); ``row`` holds the timing summary
    and memory statistics. Out of memory is not an error here: the row says ``status='oom'``,
    the allocator is cleaned, and the output is None, so a sweep can go on."""
    release_memory(device)
    times, out, oom = [], None, None
    try:
        for _ in range(warmup):
            out = fn()
        for _ in range(repeats):
            sync(device)
            start = time.perf_counter()
            out = fn()
            sync(device)
            times.append(time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - only OOM is turned into a row
        if not is_oom(error):
            raise
        oom = _first_line(error)
    if oom is None:
        return {"status": OK, **summarize(times), **memory_stats(device), "error": ""}, out
    # Out here, not in the except block: the exception's traceback kept the failed call's frames,
    # and with them its tensors, alive; only now can release_memory hand that memory back.
    out = None
    row = {"status": OOM, "repeats": len(times), **_nan_timing(), **memory_stats(device),
           "error": oom}
    release_memory(device)
    return row, out


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


def _nan_timing() -> dict:
    nan = float("nan")
    return {"median_s": nan, "min_s": nan, "max_s": nan}


def bench_row(method, fn, *, device, batch_size, seq_len, repeats, warmup=1, new_tokens=None,
              **extra):
    """``measure`` plus the columns every results table shares; ``new_tokens`` (default
    ``batch_size * seq_len``) counts the tokens one call generates, for tokens/s."""
    row, out = measure(fn, device=device, repeats=repeats, warmup=warmup)
    new_tokens = batch_size * seq_len if new_tokens is None else new_tokens
    tokens_per_s = new_tokens / row["median_s"] if row["status"] == OK else float("nan")
    return {"method": method, "batch_size": batch_size, "seq_len": seq_len, **extra, **row,
            "tokens_per_s": tokens_per_s, "device_name": device_label(device)}, out


def device_label(device) -> str:
    """The GPU's name, or 'cpu'."""
    device = torch.device(device)
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def sweep(points, run_point, desc="sweep"):
    """Run ``run_point(point)`` for every point and collect the rows it returns (a dict or a
    list of dicts). Shows a progress bar in JupyterLab and prints one line per point, so a
    headless log shows where a long run is. A point that runs out of memory outside
    ``measure`` (building its inputs, say) becomes one row with status 'oom' (the point's keys,
    when it is a dict, and NaN timings), the allocator is cleaned, and the sweep goes on."""
    from tqdm.auto import tqdm

    points = list(points)
    rows = []
    with tqdm(total=len(points), desc=desc, leave=False) as bar:
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
            print(f"[{desc} {i}/{len(points)}] {point}: {status} "
                  f"({time.perf_counter() - start:.1f}s)", flush=True)
            bar.update(1)
    return rows


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
