"""The ladder: every method of the course against the naive loop, ``generate()`` and the floor.

- ``copy_bandwidth`` and ``floor_per_step``: a decode step must read every parameter once, so
  parameter bytes over the device-to-device copy bandwidth is the fastest a step can be.
- ``generate_hf``: transformers' own ``model.generate()`` (greedy, EOS-padded: our contract) as
  the peer, with the dynamic cache or ``cache_implementation="static"`` (which compiles itself).
- ``gpu_busy_idle``: the profiler's view of a run, GPU busy against idle per step.
- ``check_claims``: the article's claims against a run's numbers, reproduced or not.
- ``python -m helpers.bench``: the ladder table on any CUDA GPU (or, as a test, the tiny model
  on a CPU).
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import torch

from . import harness
from .model import parameter_bytes


def copy_bandwidth(device, nbytes=None, repeats=10) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting the read and the write."""
    if nbytes is None:
        nbytes = 2**28 if torch.device(device).type == "cuda" else 2**24
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    row, _ = harness.measure(lambda: dst.copy_(src), device=device, repeats=repeats, warmup=2)
    del src, dst
    harness.release_memory(device)
    return 2 * nbytes / row["median_s"]


def floor_per_step(model, bandwidth) -> float:
    """Seconds one decode step needs at least: every parameter byte read once at ``bandwidth``."""
    return parameter_bytes(model) / bandwidth


@torch.no_grad()
def generate_hf(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                cache_implementation=None):
    """``model.generate()`` held to our contract: greedy, finished rows padded with EOS, stop
    when all rows have finished. (``min_new_tokens`` would also fix the shape, but by banning
    EOS, which changes a row's tokens if EOS ever wins the argmax.)"""
    if stop_lengths is not None:
        raise ValueError("generate() has no forced-stop schedule; compare it without stop_lengths")
    return model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                          max_new_tokens=max_new_tokens, eos_token_id=eos_token_id,
                          pad_token_id=eos_token_id, cache_implementation=cache_implementation)


def generate_hf_static(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None):
    """``generate()`` with a static cache: on a GPU it compiles the decode step (CUDA graphs)."""
    return generate_hf(model, input_ids, max_new_tokens, eos_token_id, stop_lengths,
                       cache_implementation="static")


def timed_first_call(fn):
    """(seconds, output) of one call, synchronized: the compile or capture cost of a method,
    reported apart from its steady-state timing."""
    start = time.perf_counter()
    out = fn()
    if isinstance(out, torch.Tensor):
        harness.sync(out.device)
    return time.perf_counter() - start, out


def add_ladder_columns(frame, floor_step_s, reference="naive", peer="generate() static"):
    """Per-step time, speedup against ``reference``, ratio to the floor (``floor_step_s`` per
    step) and speedup against ``peer``, for every row, comparing rows of the same ``seq_len``
    (and ``batch_size``). A missing reference or peer leaves NaN."""
    frame = frame.copy()
    frame["per_step_s"] = frame["median_s"] / frame["seq_len"]
    frame["floor_ratio"] = frame["per_step_s"] / floor_step_s
    for column, name in (("speedup_vs_naive", reference), ("speedup_vs_generate", peer)):
        base = frame[frame["method"] == name].set_index(["batch_size", "seq_len"])["median_s"]
        keys = list(zip(frame["batch_size"], frame["seq_len"]))
        frame[column] = [base.get(key, float("nan")) / t for key, t in zip(keys, frame["median_s"])]
    return frame


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


def busy_idle(intervals):
    """(span, busy, idle) in the time unit of ``intervals`` [(start, end), ...]: busy is the
    union of the intervals, idle the rest of the span from the first start to the last end."""
    intervals = sorted(intervals)
    if not intervals:
        return 0.0, 0.0, 0.0
    busy, cur_start, cur_end = 0.0, *intervals[0]
    for start, end in intervals[1:]:
        if start > cur_end:
            busy += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    busy += cur_end - cur_start
    span = max(end for _, end in intervals) - intervals[0][0]
    return span, busy, span - busy


def gpu_busy_idle(fn, steps, device):
    """Profile one call of ``fn()`` (which runs ``steps`` decode steps) and return per-step
    seconds: span (first kernel start to last kernel end), GPU busy, GPU idle, the busy time by
    kernel kind, and the number of kernels per step."""
    from torch.profiler import ProfilerActivity, profile

    harness.sync(device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        harness.sync(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    kernels = [e for e in events if e.get("ph") == "X" and
               e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    span, busy, idle = busy_idle([(e["ts"], e["ts"] + e["dur"]) for e in kernels])
    by_kind: dict = {}
    for e in kernels:
        kind = kernel_kind(e.get("name", ""))
        by_kind[kind] = by_kind.get(kind, 0.0) + e["dur"]
    us = 1e-6 / steps
    return {"steps": steps, "kernels_per_step": len(kernels) / steps, "span_s": span * us,
            "busy_s": busy * us, "idle_s": idle * us,
            **{f"{kind}_s": by_kind.get(kind, 0.0) * us for kind, _ in KERNEL_KINDS},
            "other_s": by_kind.get("other", 0.0) * us}
