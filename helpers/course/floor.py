"""The hardware floor of a decode step (notebooks 08, 10 and 11).

A decode step must read every parameter once, and attention must read the keys and values of
every position it attends to, so those bytes over the device's memory bandwidth (measured as a
device-to-device copy, timed by CUDA events over many back-to-back copies) is the fastest a step
can be.
"""
from __future__ import annotations

import contextlib
import json
import os
import warnings
from pathlib import Path

import pandas as pd
import torch

from .. import graphs
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


def bucket_reads(prompt_len, new_tokens, bucket, steps_per_graph=1) -> str:
    """What attention over buckets of cache length can save at most, from the sizes alone
    (notebook 10's ``GraphDecoder(..., bucket=b)``, ``steps_per_graph`` steps per launch): the
    buffer's slots (prompt, new tokens and the positions the last launch may write past them,
    rounded up to a multiple of 16, as ``static_state`` sizes every buffer whatever the bucket),
    and the positions a run's launches read on average when each replays the shortest bucket
    that holds its positions."""
    needed = prompt_len + new_tokens + steps_per_graph
    slots = graphs.cache_slots(needed)
    lengths = graphs.bucket_lengths(slots, bucket)
    launches = max(1, -(-(new_tokens - 1) // steps_per_graph))
    read = [graphs.shortest_bucket(lengths, prompt_len + (i + 1) * steps_per_graph)
            for i in range(launches)]
    mean = sum(read) / len(read)
    return (f"Buckets of {bucket}: {prompt_len} prompt + {new_tokens} new + {steps_per_graph} "
            f"written past them = {needed} positions, rounded up to {slots} slots (a multiple of "
            f"16); buckets {', '.join(map(str, lengths))}; a launch reads {mean:.1f} of the "
            f"{slots} on average.\nSo buckets can save at most {1 - mean / slots:.1%} of the key "
            "and value reads, whatever the kernels.")


def peer_idle(budget, peer, ours) -> str:
    """Why ``peer`` (``generate()`` with a static cache, which replays CUDA graphs too) is slower
    than ``ours``, where the budget shows it: its GPU idles more of each step, and that extra
    idle time is most of the gap, so its host work per step is what remains (empty else)."""
    data = budget.set_index("method")
    if not {peer, ours} <= set(data.index) or data[["gpu_ms", "idle_ms"]].isna().any().any():
        return ""
    p, o = data.loc[peer], data.loc[ours]
    gap = p["wall_ms"] - o["wall_ms"]
    if not (gap > 0 and p["idle_ms"] - o["idle_ms"] >= gap / 2):
        return ""
    return (f"{peer} replays CUDA graphs too, yet its GPU idles {p['idle_ms']:.2f} of its "
            f"{p['wall_ms']:.2f} ms per step ({p['idle_ms'] / p['wall_ms']:.0%}) against "
            f"{max(o['idle_ms'], 0):.2f} of {o['wall_ms']:.2f} ms for '{ours}': its host work per "
            f"step ({peer.split(' ')[0]}'s Python around the graph) is what remains.")


def prefill_cost(decoder, input_ids, device, repeats) -> tuple:
    """(wall clock, GPU work) in ms of ``decoder``'s prompt forward alone, which every run pays
    once before its first step: the median of ``repeats`` timed runs and one profiled run (GPU
    work NaN on a CPU)."""
    rows, _ = harness.compare({"prefill": lambda: decoder.prefill(input_ids)}, device=device,
                              repeats=repeats, busy=True)
    return 1e3 * rows[0]["median_s"], 1e3 * rows[0]["gpu_busy_s"]


def prefill_line(name, cost, new_tokens, step_ms, idle_ms=float("nan")) -> str:
    """How much of a method's time per step is its prompt's forward (``cost``: ``prefill_cost``),
    spread over the ``new_tokens`` steps of a run, and, with ``idle_ms`` (the GPU's idle time per
    step in the budget, named where it is at least 5% of the step), what share of that idle time
    the prompt's idle time is."""
    wall, gpu = cost
    per = wall / new_tokens
    text = (f"'{name}': the prompt's forward alone takes {wall:.2f} ms, once per run; spread over "
            f"the {new_tokens} steps, that is {per:.3f} ms of each {step_ms:.3f} ms step "
            f"({per / step_ms:.0%})")
    idle = (wall - gpu) / new_tokens
    if idle == idle:
        text += f", of which the GPU idles {idle:.3f} ms"
        if idle_ms == idle_ms and idle_ms >= 0.05 * step_ms:  # a share of a visible idle time
            text += f" ({min(idle / idle_ms, 1):.0%} of the {idle_ms:.3f} ms per step the GPU idles)"
    return text + "."


def launches_line(verdict: str, steps_per_graph: int, new_tokens: int) -> str:
    """Notebook 10's reading of "more steps per launch" (``verdict``: ``stats.verdict`` of k
    steps per launch against one), with the steps a run of ``new_tokens`` replays at k per
    launch: its last launch can run steps no token needs."""
    needed = new_tokens - 1  # the prefill gives the first token
    replayed = -(-needed // steps_per_graph) * steps_per_graph
    if verdict == stats.FASTER:
        return (f"{steps_per_graph} steps per launch pay: fewer replays saved more than the "
                f"{replayed - needed} extra step(s) they run ({replayed} for {needed}).")
    if verdict == stats.SLOWER:
        return (f"{steps_per_graph} steps per launch cost time: batching launches saves nothing "
                f"here, and they replay {replayed} steps for the {needed} needed.")
    return (f"{steps_per_graph} steps per launch against one: no clear difference in this run: "
            f"with the flag read one launch late the GPU already has the next launch queued, so "
            f"fewer launches buy nothing measurable here.")


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


def speed_line(name: str, table: pd.DataFrame, bandwidth: float) -> str:
    """One rung's kernel table in a line: kernels per step, and the GB/s its weight GEMMs and
    its attention reached against the measured copy bandwidth (``bandwidth`` in bytes/s)."""
    parts = table[table["part"] != "step (span)"].set_index("part")
    gemms = parts[parts.index.isin(["QKV", "attention out", "MLP up", "MLP down", "LM head"])]
    text = (f"{name}: {parts['kernels'].sum():.0f} kernels per step; copy bandwidth "
            f"{bandwidth / 1e9:.0f} GB/s")
    if len(gemms):
        text += (f"; weight GEMMs at {gemms['GBps'].min():.0f} to {gemms['GBps'].max():.0f} GB/s "
                 f"({gemms['GBps'].min() * 1e9 / bandwidth:.0%} to "
                 f"{gemms['GBps'].max() * 1e9 / bandwidth:.0%} of it; each is its GEMM's bytes "
                 "over the time of all its part's kernels, which can hold more than the GEMM)")
    if "attention" in parts.index and parts.loc["attention", "GBps"] == parts.loc["attention", "GBps"]:
        text += f"; attention at {parts.loc['attention', 'GBps']:.0f} GB/s"
    return text + "."


def profiled_line(name: str, table: pd.DataFrame, timed_ms: float) -> str:
    """A rung's kernel table (measured under the profiler) against its step timed without it
    (``timed_ms``: the wall clock per step, prompt and host included), so the reader knows which
    totals compare."""
    step = table.set_index("part").loc["step (span)", "us"]
    text = (f"{name}: under the profiler a step spans {step:.0f} µs of kernels and gaps; timed "
            f"without it, {1e3 * timed_ms:.0f} µs per step, the prompt and the host included")
    if step > 1e3 * timed_ms:
        text += ": the profiler's tracing slows the replays, so read the table's parts against each other and the floor, not against the budget figure"
    return text + "."


def pdl_line(saved_us: float, table: pd.DataFrame, saved_range: tuple | None = None) -> str:
    """What PDL saved per step (``saved_us``, from the medians; ``saved_range``, the least and
    most the interval of the two rungs' ratio allows) against the idle time between kernels of
    the step without it (``table``: that step's kernel table). Only when even the least saving
    exceeds that idle time do the kernels themselves overlap or finish sooner."""
    idle = float(table.set_index("part").loc["idle between kernels", "us"])
    low = saved_us if saved_range is None else saved_range[0]
    if saved_us <= 0:
        return (f"PDL saved nothing measurable per step here ({saved_us:.1f} µs); the Triton step "
                f"idles {idle:.1f} µs between kernels.")
    text = (f"PDL saved {saved_us:.1f} µs per step"
            + ("" if saved_range is None else f" ({saved_range[0]:.1f}–{saved_range[1]:.1f})")
            + f"; the Triton step without it idles {idle:.1f} µs between kernels, so ")
    if low > idle:
        return text + ("PDL saved more than that idle time: the kernels themselves overlap or "
                       "finish sooner, not only the gaps close.")
    if saved_us > idle:
        return text + ("this run can't tell whether PDL saved more than that idle time: the "
                       "gaps closing alone could account for it.")
    return text + "PDL saved part of that idle time."


def saved_range(ratio, before_ms: float):
    """(least, most) µs per step that a rung saved against one taking ``before_ms`` per step,
    from the interval of their ``stats.Ratio``; None without an interval (too few runs)."""
    finite = all(x == x and abs(x) != float("inf") for x in (ratio.low, ratio.high))
    if ratio.n < stats.MIN_TRIALS or not finite or min(ratio.low, ratio.high) <= 0:
        return None
    return tuple(1e3 * before_ms * (1 - 1 / x) for x in (ratio.low, ratio.high))


def bundle_line(saved_ms: float, prompt_before_ms: float, prompt_after_ms: float,
                new_tokens: int) -> str:
    """Notebook 11's last rung changes two things at once: how much of the ``saved_ms`` per
    step it saved is its prompt's forward replayed from a graph (the prompt's wall clock per run
    before and after, spread over ``new_tokens`` steps), the rest several steps per replay."""
    prompt = (prompt_before_ms - prompt_after_ms) / new_tokens
    forward = (f"{prompt:.3f} ms per step (its forward {prompt_before_ms:.2f} -> "
               f"{prompt_after_ms:.2f} ms per run)")
    if saved_ms <= 0:
        return (f"the last rung saved nothing per step against the rung above "
                f"({-saved_ms:.3f} ms more); its prompt's forward went {prompt_before_ms:.2f} -> "
                f"{prompt_after_ms:.2f} ms per run.")
    text = (f"of the {saved_ms:.3f} ms per step the last rung saved against the rung above, the "
            f"prompt replayed from a graph accounts for {forward}")
    if prompt >= saved_ms:
        return text + ": all of it; several steps per replay add nothing measurable on top."
    return text + (f", {max(prompt, 0) / saved_ms:.0%} of it; several steps per replay (and the "
                   f"spread between runs) the rest.")


def largest_gap(table: pd.DataFrame) -> pd.Series:
    """The part of a kernel table furthest above its floor (the step's own row left out)."""
    parts = table[table["part"] != "step (span)"]
    return parts.loc[parts["above_floor_us"].idxmax()]
