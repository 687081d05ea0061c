"""The hardware floor of a decode step (notebooks 08, 10 and 11).

A decode step must read every parameter once, and attention must read the keys and values of
every position it attends to, so those bytes over the device's memory bandwidth (measured as a
device-to-device copy, timed by CUDA events over many back-to-back copies) is the fastest a step
can be.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import warnings
from pathlib import Path

import pandas as pd
import torch

from . import harness, report, stats
from ..model import parameter_bytes


def copy_bandwidth(device, nbytes=None, iters=50) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting the read and the write: ``iters``
    back-to-back copies timed by CUDA events (launch gaps amortised). Inside a runner's run the
    default measurement on a GPU is taken once and shared by every notebook (``run_shared``), so
    all lessons of one run divide by the same number: measured in each notebook, it moved by a
    few percent, and the floors with it."""
    if nbytes is None and iters == 50 and torch.device(device).type == "cuda":
        return run_shared("copy_bandwidth", torch.cuda.get_device_name(device),
                          lambda: _copy_bandwidth(device, None, iters))
    return _copy_bandwidth(device, nbytes, iters)


def _copy_bandwidth(device, nbytes, iters) -> float:
    if nbytes is None:
        nbytes = 2**28 if torch.device(device).type == "cuda" else 2**24
    src = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    seconds = harness.device_time_s(lambda: dst.copy_(src), device=device, iters=iters)
    del src, dst
    harness.release_memory(device)
    return 2 * nbytes / seconds


def run_shared(name: str, gpu: str, measure) -> float:
    """``measure()``, once per run of the runner (``COURSE_RUN_DIR`` and ``COURSE_RUN_ID`` set)
    and GPU: kept in ``<run dir>/<name>.json`` and read back by the run's later notebooks.
    Outside a run (JupyterLab) it measures every time."""
    run_id, run_dir = os.environ.get("COURSE_RUN_ID"), os.environ.get("COURSE_RUN_DIR")
    if not (run_id and run_dir):
        return measure()
    path, key = Path(run_dir) / f"{name}.json", {"run": run_id, "gpu": gpu}
    try:
        saved = json.loads(path.read_text())
        if {k: saved.get(k) for k in key} == key:
            return float(saved["value"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none yet, another run's, or broken: measure and write it
    value = measure()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**key, "value": value}))
    return value


def kv_bytes_per_step(config, batch_size, prompt_len, new_tokens, dtype_bytes=4) -> float:
    """Key and value bytes one decode step reads on average over a run that attends only to the
    filled positions (prompt_len + i at step i): 2 x layers x batch x positions x width."""
    mean_positions = prompt_len + (new_tokens - 1) / 2
    return 2 * config.n_layer * batch_size * mean_positions * config.n_embd * dtype_bytes


def floor_per_step(model, bandwidth, kv_bytes=0.0) -> float:
    """Seconds one decode step needs at least: every parameter byte, plus the ``kv_bytes`` the
    step's attention reads, once at ``bandwidth``."""
    return (parameter_bytes(model) + kv_bytes) / bandwidth


def decode_floor(model, bandwidth, batch_size, prompt_len, new_tokens) -> float:
    """The floor of one decode step in a run of ``new_tokens`` after ``prompt_len``: the weights
    and, on average, the keys and values of the filled positions, read once at ``bandwidth``."""
    return floor_per_step(model, bandwidth,
                          kv_bytes_per_step(model.config, batch_size, prompt_len, new_tokens))


# ------------------------------------------------------------------ notebooks 10 and 11

EARLIER = "10_beyond_the_article"  # the lesson 10 and 11 were split from (its H100 run)


def medians_outside_line(table, pairs, judge: bool = True, **where) -> str:
    """One sentence for the comparisons (``pairs``: (what, candidate, baseline)) whose ratio of
    medians lies outside the interval their line prints (``stats.say``, the same direction and
    decimals): why the two disagree and which one the verdict follows. Empty where none does, in
    a smoke run, and with too few rounds for an interval."""
    outside = []
    for what, new, old in pairs:
        if found := stats.medians_outside(table, new, old, judge, **where):
            medians, low, high, digits = found
            outside.append(f"for '{what}' the medians' ratio, {medians:.{digits}f}x, lies outside "
                           f"{low:.{digits}f}\u2013{high:.{digits}f}")
    if not outside:
        return ""
    text = "; ".join(outside)
    return (text[0].upper() + text[1:] + ": the interval comes from each round's ratio of the "
            "two loops, while the medians pool all runs, so the medians' extra difference came "
            "from rounds in which both loops sped up or slowed down together (the host's speed "
            "drifting), which a round's ratio cancels; the verdict follows the rounds.")


def peer_idle_line(budget_frame, method: str) -> str:
    """Why a method's GPU bar is short of its wall clock (``budget_frame``: ``budget.per_step``):
    where the GPU idles at least ``budget.HOST_PACE_PCT`` % of the step (as printed), how many
    times the GPU's time the host takes to issue a step; otherwise who sets the pace. Empty without
    GPU numbers."""
    from . import budget  # here, not at the top: budget imports this module
    data = budget_frame.set_index("method")
    if method not in data.index or not data.loc[method, "wall_ms"] > 0 or \
            pd.isna(data.loc[method, "gpu_ms"]):
        return ""
    wall, gpu = data.loc[method, "wall_ms"], data.loc[method, "gpu_ms"]
    share = round(100 * max(wall - gpu, 0.0) / wall)  # the verdict goes with the printed share
    idle = (f"{round(wall, 2) - round(gpu, 2):.2f} ms" if wall - gpu >= 0.1
            else f"{max(wall - gpu, 0.0) * 1e3:.0f} µs")  # as budget.sentence writes it
    text = f"{method}: the GPU is idle {idle} of each {wall:.2f} ms ({share}%)"
    if share >= budget.HOST_PACE_PCT:
        return text + (f": the host takes about {wall / gpu:.1f}x the GPU's time to issue each "
                       "step, so the GPU waits.")
    return text + f": {budget.pace(share, why=False)}."


def prefill_cost(decoder, input_ids, device, repeats) -> tuple:
    """(wall clock, GPU work) in ms of ``decoder``'s prompt forward alone, which every run pays
    once before its first step: the median of ``repeats`` timed runs and one profiled run (GPU
    work NaN on a CPU)."""
    rows, _ = harness.compare({"prefill": lambda: decoder.prefill(input_ids)}, device=device,
                              repeats=repeats, busy=True)
    return 1e3 * rows[0]["median_s"], 1e3 * rows[0]["gpu_busy_s"]


def without_prompt(step_ms, cost, new_tokens, floor_ms) -> str:
    """A time per step that counts the prompt's forward (``cost``: ``prefill_cost``, spread over
    ``new_tokens`` steps) read against the floor with that share taken out."""
    per = cost[0] / new_tokens
    return (f"that counts the prompt's forward, {per:.3f} ms of each step; without it, about "
            f"{(step_ms - per) / floor_ms:.2f}x")


def prompt_idle(sentence: str, budget_frame, method: str, eager, new_tokens) -> str:
    """``budget.sentence``'s reading of ``method`` with the cause of its idle GPU named where the
    prompt's forward, run eagerly once per run (``eager``: ``prefill_cost``) and so counted in
    every step's time, takes at least half that idle time by itself; else the sentence as is."""
    from . import budget  # budget imports this module

    rows = budget_frame.set_index("method")
    if (budget.IDLE_WHY not in sentence or method not in rows.index or not new_tokens > 0
            or not math.isfinite(eager[0])):
        return sentence
    idle, per = budget.printed_idle(rows.loc[method]), eager[0] / new_tokens
    if not (idle > 0 and per >= idle / 2):
        return sentence
    return sentence.replace(budget.IDLE_WHY, "timed alone, the prompt's forward, run eagerly once "
                            f"per run, takes {per:.2f} ms of each step, its GPU work included")


def show_reference(stem: str) -> None:
    """The committed GPU result of ``stem``; until a GPU run has published one, that of the
    lesson it was split from (its tables cover the same rungs), saying so."""
    parts = report.reference(stem)
    if len(parts) == 1 and parts[0][0] == "text" and "No committed GPU result" in parts[0][1]:
        if len(report.reference(EARLIER)) == 1:  # that one is gone too: the published run replaced it
            print(f"No committed GPU result for {stem} yet: the published full run stopped before "
                  "it. Its kernels and fastest step were measured on an H100 separately: "
                  "docs/floor-notes.md has those tables, and notebook 08's published ladder has the "
                  "fastest step's time ('CUDA graph, fused kernels').")
            return
        print(f"No committed GPU result for {stem} yet: the H100 result of {EARLIER}, the lesson "
              "it was split from, follows.")
        stem = EARLIER
    report.show_reference(stem)


@contextlib.contextmanager
def quiet_compile():
    """Messages Inductor prints while it compiles a step (08's ladder, 11's reference rung):
    expected there, not the reader's."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="(?s).*[Oo]nline softmax is disabled")
        warnings.filterwarnings("ignore", message=".*TensorFloat32 tensor cores")
        yield


def parts_side_by_side(tables: dict) -> pd.DataFrame:
    """µs per step of each part of the kernel table, one column per rung (``tables``: rung ->
    ``kernels.kernel_table``), with the floor of each part."""
    frame = pd.concat({name: t.set_index("part")["us"] for name, t in tables.items()}, axis=1)
    first = next(iter(tables.values())).set_index("part")["floor_us"]
    return frame.assign(**{"floor µs": first.reindex(frame.index)}).round(1)
