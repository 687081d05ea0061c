"""Profiling plumbing for notebooks 06 and 07: where the GPU waits for the CPU between steps.

- ``StepRanges`` numbers the decode steps as ranges ``step 0``, ``step 1``, ... that both
  ``torch.profiler`` (``record_function``) and Nsight Systems (NVTX) show.
- ``profile_steps`` profiles one generation with those ranges and returns the Chrome trace.
- ``trace_events`` turns a trace into one table of CPU step ranges, CPU waits for the GPU and
  GPU activity (kernels, copies, memsets), each GPU event tagged with the step that launched it.
- ``gpu_idle_gaps`` measures, from plain ``(start_us, end_us, step)`` events, how long the GPU
  sat idle between one step's last event and the next step's first: the cost of a per-step sync.
  ``step_table`` adds the CPU's time per step, to tell a sync's gap from a launch-bound loop.
- ``plot_timeline`` draws CPU ranges against GPU events, the view Nsight Systems gives.
- ``gpu_busy_idle`` profiles one call and splits its GPU time per step into busy (by kernel
  kind) and idle: how far a loop is from keeping the GPU busy (notebook 10).
- ``find_syncs`` lists every host-device synchronization a call makes, with the line that made it.
- ``check_cost`` reads notebook 06's time budget per step: what the stop check adds.
"""
from __future__ import annotations

import json
import linecache
import os
import re
import tempfile
import traceback
import warnings
from bisect import bisect_right
from pathlib import Path

import pandas as pd
import torch
from torch.profiler import ProfilerActivity, profile

from . import plotting

STEP_PREFIX = "step "
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
# CPU calls in which the host blocks until the GPU has reached a point.
SYNC_CALLS = ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize")

try:  # the `nvtx` package works without a GPU (a no-op unless a profiler listens)
    import nvtx as _nvtx
except ImportError:  # pragma: no cover - depends on the environment
    _nvtx = None


def nvtx_push(name: str) -> None:
    """Open an NVTX range (shown by Nsight Systems): the ``nvtx`` package, else torch's binding
    on a CUDA build, else nothing."""
    if _nvtx is not None:
        _nvtx.push_range(name)
    elif torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)


def nvtx_pop() -> None:
    """Close the NVTX range opened last by ``nvtx_push``."""
    if _nvtx is not None:
        _nvtx.pop_range()
    elif torch.cuda.is_available():
        torch.cuda.nvtx.range_pop()


class StepRanges:
    """Consecutive ranges ``step 0``, ``step 1``, ...: each ``mark()`` closes the open range and
    opens the next, for ``torch.profiler`` (``record_function``) and NVTX alike. ``wrap(step)``
    marks before every call of a decode step, so a range holds that step's launches and the
    loop's work up to the next step (the stop check included)."""

    def __init__(self, prefix: str = STEP_PREFIX):
        self.prefix, self.steps, self._open = prefix, 0, None

    def mark(self) -> None:
        self.close()
        name = f"{self.prefix}{self.steps}"
        self._open = torch.autograd.profiler.record_function(name)
        self._open.__enter__()
        nvtx_push(name)
        self.steps += 1

    def close(self) -> None:
        if self._open is not None:
            nvtx_pop()
            self._open.__exit__(None, None, None)
            self._open = None

    def wrap(self, step):
        """``step`` with a new range opened before each call."""
        def marked(*args, **kwargs):
            self.mark()
            return step(*args, **kwargs)
        return marked


def profile_call(fn, device) -> dict:
    """The Chrome trace (as a dict) of one call of ``fn()``, the device synchronized before and
    after. On a CPU only CPU events are recorded."""
    cuda = torch.device(device).type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize(device)
    with warnings.catch_warnings():  # a note about profiling cycles that does not apply here
        warnings.filterwarnings("ignore", message=".*Profiler clears events")
        with profile(activities=activities) as prof:
            fn()
            if cuda:
                torch.cuda.synchronize(device)
    fd, path = tempfile.mkstemp(suffix=".json", prefix="trace_")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        return json.loads(Path(path).read_text())
    finally:
        Path(path).unlink(missing_ok=True)


def profile_steps(generate, step, device, warmup: int = 1) -> dict:
    """Profile ``generate(step)`` once (after ``warmup`` unprofiled calls) with every call of the
    decode step ``step`` opening a ``StepRanges`` range; returns the Chrome trace as a dict."""
    for _ in range(warmup):
        generate(step)
    ranges = StepRanges()

    def run():
        generate(ranges.wrap(step))
        ranges.close()

    return profile_call(run, device)


def _step_of(name: str, prefix: str):
    match = re.fullmatch(re.escape(prefix) + r"(\d+)", name)
    return int(match.group(1)) if match else None


def trace_events(trace: dict, prefix: str = STEP_PREFIX) -> pd.DataFrame:
    """One row per event of interest in a Chrome trace from ``torch.profiler``:

    - ``kind='step'``: a CPU step range (``prefix`` + number);
    - ``kind='sync'``: a CPU call that blocks until the GPU catches up (``SYNC_CALLS``);
    - ``kind='gpu'``: a kernel, copy or memset on the GPU, with its stream in ``lane``.

    Columns: kind, lane, name, start_us, end_us, step. A GPU event's step is that of the CPU
    range in which its launch call (matched by correlation id) ran; NaN if it had none."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    steps = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), _step_of(e["name"], prefix))
                   for e in events if e.get("cat") == "user_annotation"
                   and _step_of(e.get("name", ""), prefix) is not None)
    starts = [s[0] for s in steps]

    def step_at(ts):
        i = bisect_right(starts, ts) - 1
        return steps[i][2] if i >= 0 and ts <= steps[i][1] else None

    launch_step = {}
    for e in events:
        corr = e.get("args", {}).get("correlation")
        if e.get("cat") in LAUNCH_CATEGORIES and corr is not None:
            launch_step[corr] = step_at(float(e["ts"]))
    rows = [{"kind": "step", "lane": "CPU: step ranges", "name": f"{prefix}{n}", "start_us": s,
             "end_us": t, "step": n} for s, t, n in steps]
    for e in events:
        start = float(e["ts"])
        end = start + float(e.get("dur", 0))
        if e.get("cat") in LAUNCH_CATEGORIES and e.get("name") in SYNC_CALLS:
            rows.append({"kind": "sync", "lane": "CPU: waiting for the GPU", "name": e["name"],
                         "start_us": start, "end_us": end, "step": step_at(start)})
        elif e.get("cat") in GPU_CATEGORIES:
            corr = e.get("args", {}).get("correlation")
            rows.append({"kind": "gpu", "lane": f"GPU stream {e.get('tid', '?')}",
                         "name": e.get("name", ""), "start_us": start, "end_us": end,
                         "step": launch_step.get(corr)})
    frame = pd.DataFrame(rows, columns=["kind", "lane", "name", "start_us", "end_us", "step"])
    frame["step"] = pd.to_numeric(frame["step"], errors="coerce").astype(float)
    return frame.sort_values("start_us", kind="stable").reset_index(drop=True)


def gpu_event_tuples(frame: pd.DataFrame) -> list:
    """The GPU events of ``trace_events`` that belong to a step, as (start_us, end_us, step)."""
    gpu = frame[(frame["kind"] == "gpu") & frame["step"].notna()]
    return [(float(s), float(e), int(n)) for s, e, n in zip(gpu["start_us"], gpu["end_us"], gpu["step"])]


def _busy(intervals) -> float:
    """Length of the union of (start, end) intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for start, end in sorted(intervals):
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def busy_idle(intervals):
    """(span, busy, idle) in the time unit of ``intervals`` [(start, end), ...]: busy is the
    union of the intervals, idle the rest of the span from the first start to the last end."""
    intervals = list(intervals)
    if not intervals:
        return 0.0, 0.0, 0.0
    span = max(end for _, end in intervals) - min(start for start, _ in intervals)
    busy = _busy(intervals)
    return span, busy, span - busy


KERNEL_KINDS = (("attention", ("attention", "fmha", "flash", "attn")),
                ("matmul", ("gemm", "gemv", "cutlass", "sm90", "sm80", "cublas", "matmul", "mm_")),
                ("copy", ("memcpy", "memset", "copy")))


def kernel_kind(name: str) -> str:
    """'matmul', 'attention', 'copy' or 'other' (elementwise, reductions, norms) by kernel name."""
    low = name.lower()
    for kind, marks in KERNEL_KINDS:
        if any(mark in low for mark in marks):
            return kind
    return "other"


def gpu_busy_idle(fn, steps, device) -> dict:
    """Profile one call of ``fn()`` (which runs ``steps`` decode steps) and return per-step
    seconds: span (first GPU event's start to the last one's end), GPU busy, GPU idle, the busy
    time by kernel kind, and the number of GPU events (kernels, copies, memsets) per step."""
    frame = trace_events(profile_call(fn, device))
    gpu = frame[frame["kind"] == "gpu"]
    span, busy, idle = busy_idle(zip(gpu["start_us"], gpu["end_us"]))
    by_kind = (gpu["end_us"] - gpu["start_us"]).groupby(gpu["name"].map(kernel_kind)).sum()
    us = 1e-6 / steps
    return {"steps": steps, "kernels_per_step": len(gpu) / steps, "span_s": span * us,
            "busy_s": busy * us, "idle_s": idle * us,
            **{f"{kind}_s": float(by_kind.get(kind, 0.0)) * us for kind, _ in KERNEL_KINDS},
            "other_s": float(by_kind.get("other", 0.0)) * us}


def gpu_idle_gaps(events) -> pd.DataFrame:
    """Per step, from GPU events ``(start_us, end_us, step)``: when its first event started and its
    last ended, how long the GPU was busy (union of events) and idle inside that span, and
    ``gap_before_us``: idle time between the previous step's last event and this step's first
    (0 when they overlap, NaN for the first step or after a step with no events)."""
    by_step = {}
    for start, end, step in events:
        if end < start:
            raise ValueError(f"event of step {step} ends before it starts: ({start}, {end})")
        by_step.setdefault(int(step), []).append((float(start), float(end)))
    rows, prev_step, prev_end = [], None, None
    for step in sorted(by_step):
        intervals = by_step[step]
        first, last = min(s for s, _ in intervals), max(e for _, e in intervals)
        busy = _busy(intervals)
        gap = max(0.0, first - prev_end) if prev_end is not None and prev_step == step - 1 else float("nan")
        rows.append({"step": step, "events": len(intervals), "first_us": first, "last_us": last,
                     "busy_us": busy, "idle_inside_us": (last - first) - busy, "gap_before_us": gap})
        prev_step, prev_end = step, last
    return pd.DataFrame(rows, columns=["step", "events", "first_us", "last_us", "busy_us",
                                       "idle_inside_us", "gap_before_us"])


def step_table(frame: pd.DataFrame) -> pd.DataFrame:
    """``gpu_idle_gaps`` of a ``trace_events`` frame, plus per step the CPU's time in the step's
    range (``cpu_us``) and, of that, blocked in syncs (``cpu_wait_us``). ``cpu_us - cpu_wait_us``
    is what the CPU needs to issue a step: when it exceeds the GPU's ``busy_us`` the loop is
    launch-bound and the GPU waits for the CPU, check or no check."""
    gaps = gpu_idle_gaps(gpu_event_tuples(frame))
    spans = frame.assign(us=frame["end_us"] - frame["start_us"])
    cpu = spans[spans["kind"] == "step"].groupby("step")["us"].sum()
    wait = spans[spans["kind"] == "sync"].groupby("step")["us"].sum()
    gaps["cpu_us"] = gaps["step"].map(cpu)
    gaps["cpu_wait_us"] = gaps["step"].map(wait).fillna(0.0)
    return gaps


def step_gaps(trace: dict) -> pd.DataFrame:
    """``step_table`` of a ``profile_steps`` trace."""
    return step_table(trace_events(trace))


DEFAULT_STREAM = "GPU: default stream"


def stream_names(frame: pd.DataFrame) -> dict:
    """Plain names for the GPU lanes of a ``trace_events`` frame, whose lanes carry the profiler's
    stream numbers ("GPU stream 7"): the stream of the call's first GPU event reads
    ``DEFAULT_STREAM`` (06's and 07's loops reset the cache there before anything else); any
    other "GPU: streams[0]", "GPU: streams[1]", ... in the order they first ran, as
    ``generate_interleaved`` names its side streams (its prompt runs on ``streams[0]``)."""
    gpu = frame[frame["kind"] == "gpu"].sort_values("start_us", kind="stable")
    order = list(dict.fromkeys(gpu["lane"]))
    return {lane: DEFAULT_STREAM if i == 0 else f"GPU: streams[{i - 1}]"
            for i, lane in enumerate(order)}


def plot_timeline(ax, frame: pd.DataFrame, first_step: int = 1, steps: int = 4, title: str = "",
                  step_offset: int = 0):
    """CPU step ranges and waits against GPU events, over ``steps`` steps from ``first_step``;
    alternate steps in alternate colours, time in ms from the first shown step's start. The
    CPU's waits at a sync are red on their own lane, and every idle gap of the GPU between two
    steps is shaded grey across the GPU lanes, with its length written below them. GPU lanes
    are named by ``stream_names``, the default stream first. Panels made with ``sharex=True``
    share one time axis, each with its tick labels. ``step_offset`` is added to the step numbers
    written under the bars: the ranges count the decode step's calls from 0, and 06's and 07's
    loops make their first call at ``i = 1``, so 1 labels each step with the loop's ``i``."""
    shown = frame[(frame["step"] >= first_step) & (frame["step"] < first_step + steps)]
    if shown.empty:
        ax.set_title(title + " (no events)")
        return ax
    t0 = shown["start_us"].min()
    names = stream_names(frame)
    gpu_lanes = sorted((lane for lane in shown["lane"].unique() if lane.startswith("GPU")),
                       key=lambda lane: (list(names).index(lane) if lane in names else len(names), lane))
    lanes = ["CPU: step ranges", "CPU: waiting for the GPU"] + gpu_lanes
    colors = [plotting.PALETTE[0], plotting.PALETTE[3]]
    for y, lane in enumerate(lanes):
        part = shown[shown["lane"] == lane]
        for parity in (0, 1):
            sel = part[part["step"].astype(int) % 2 == parity]
            bars = [((s - t0) / 1e3, max((e - s) / 1e3, 1e-4)) for s, e in zip(sel["start_us"], sel["end_us"])]
            color = plotting.PALETTE[1] if lane.startswith("CPU: waiting") else colors[parity]
            ax.broken_barh(bars, (y - 0.35, 0.7), color=color, linewidth=0)
    gaps = gpu_idle_gaps(gpu_event_tuples(shown))
    span_ms = (shown["end_us"].max() - t0) / 1e3
    for first, gap in zip(gaps["first_us"], gaps["gap_before_us"]):
        if gap > 0 and gap / 1e3 > 0.004 * span_ms:  # wide enough to see at this scale
            left = (first - gap - t0) / 1e3
            # over the GPU lanes only: the CPU's step boundaries stay visible above
            ax.broken_barh([(left, gap / 1e3)], (1.5, len(lanes) - 1.5), color="#999999",
                           alpha=0.25, linewidth=0)
            ax.annotate(f"GPU idle {gap:.0f} µs", (left + gap / 2e3, len(lanes) - 1 + 0.45), fontsize=9,
                        ha="center", va="top", color="#333333")
    for _, row in shown[shown["kind"] == "step"].iterrows():
        ax.annotate(f"step {int(row['step']) + step_offset}", ((row["start_us"] - t0) / 1e3, -0.45), fontsize=9,
                    ha="left", va="top", color="#333333")
    ax.set_yticks(range(len(lanes)), [names.get(lane, lane) for lane in lanes])
    ax.set_ylim(len(lanes) - 0.5 + 0.45, -0.8)
    ax.set_xlabel("ms from the first shown step (colours alternate by step)")
    ax.tick_params(labelbottom=True)  # panels sharing one time axis each keep their scale
    ax.set_title(title, loc="left")
    ax.grid(axis="y", visible=False)
    return ax


def find_syncs(fn, *args, **kwargs) -> pd.DataFrame:
    """Run ``fn(*args, **kwargs)`` with ``torch.cuda.set_sync_debug_mode('warn')`` and count the
    host-device synchronizations it makes, by the line outside PyTorch that caused them
    (columns file, line, function, code, count, and ``via``: the innermost Python frame, inside
    PyTorch or not; most frequent first). CUDA only: on a CPU nothing syncs."""
    columns = ["file", "line", "function", "code", "count", "via"]
    if not torch.cuda.is_available():
        return pd.DataFrame(columns=columns)
    counts, via = {}, {}

    def record(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return
        frame, innermost = blame(traceback.extract_stack()[:-1])
        if innermost is not None and innermost.name == "set_sync_debug_mode":
            return  # switching the mode on can warn once itself: not the call's doing
        key = (frame.filename, frame.lineno, frame.name) if frame else (filename, lineno, "?")
        counts[key] = counts.get(key, 0) + 1
        if innermost is not None:
            via.setdefault(key, f"{_short_path(innermost.filename)}:{innermost.lineno} "
                                f"({innermost.name})")

    before = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn(*args, **kwargs)
        finally:
            torch.cuda.set_sync_debug_mode(before)
    rows = [{"file": _short_path(f), "line": n, "function": name,
             "code": linecache.getline(f, n).strip(), "count": c, "via": via.get((f, n, name), "")}
            for (f, n, name), c in counts.items()]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("count", ascending=False, kind="stable").reset_index(drop=True)


def blame(stack, torch_dir: str | None = None):
    """For a sync raised under the Python ``stack`` (frames, outermost first): the frame to blame,
    the innermost one outside PyTorch (the warnings machinery and this module left out), and the
    innermost frame of all. Either is None when no frame qualifies."""
    torch_dir = torch_dir or str(Path(torch.__file__).parent)
    frames = [f for f in stack if f.filename not in (warnings.__file__, __file__)]
    outside = [f for f in frames if not f.filename.startswith(torch_dir)]
    return (outside[-1] if outside else None), (frames[-1] if frames else None)


def _short_path(path: str) -> str:
    parts = Path(path).parts
    for anchor in ("site-packages", "helpers"):
        if anchor in parts:
            return str(Path(*parts[parts.index(anchor) + (anchor == "site-packages"):]))
    return Path(path).name


def recovered_pct(sync_s, method_s, free_s) -> float:
    """How much of the time the per-step check costs (``sync_s - free_s``, against the loop with
    no check) a loop gets back, in %; NaN when the check costs nothing measurable here."""
    cost = float(sync_s) - float(free_s)
    if not cost > 0:
        return float("nan")
    return 100.0 * (float(sync_s) - float(method_s)) / cost


def check_cost(step_budget: pd.DataFrame, unclear=(), check: str = "check every step",
               free: str = "no check") -> pd.DataFrame:
    """Notebook 06's per-step view of ``budget.per_step`` rows named "<regime>, <loop>": wall
    clock, the GPU's work and its idle time per step, and on each checking row what the check
    adds per step against the same regime without it (ms); "can't tell" instead of a signed
    number for the regimes in ``unclear`` (rounds that did not tell the two loops apart); "\u2014"
    on the rows without the check."""
    data = step_budget.set_index("method")
    out = pd.DataFrame({"wall ms": data["wall_ms"], "GPU busy ms": data["gpu_ms"],
                        "GPU idle ms": data["idle_ms"]})
    cost = {}
    for method in data.index:
        regime, _, loop = method.rpartition(", ")
        if loop == check and f"{regime}, {free}" in data.index:
            cost[method] = data.loc[method, "wall_ms"] - data.loc[f"{regime}, {free}", "wall_ms"]
    out["the check adds ms"] = pd.Series(cost, dtype=float)
    out = out.round(3)
    hidden = [m for m in cost if m.rpartition(", ")[0] in set(unclear)]
    out["the check adds ms"] = out["the check adds ms"].astype(object)
    out.loc[hidden, "the check adds ms"] = "can't tell"
    out.loc[[m for m in out.index if m not in cost], "the check adds ms"] = "\u2014"  # no check
    return out
