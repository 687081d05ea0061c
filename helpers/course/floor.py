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
import re
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


def bucket_reads(prompt_len, new_tokens, bucket, steps_per_graph=1, model=None,
                 batch_size=None) -> str:
    """What attention over buckets of cache length can save at most, from the sizes alone
    (notebook 10's ``GraphDecoder(..., bucket=b)``, ``steps_per_graph`` steps per launch): the
    buffer's slots (prompt, new tokens and the room ``check_fits`` keeps for one launch's steps
    past them, rounded up to a multiple of 16, as ``static_state`` sizes every buffer whatever
    the bucket), and the positions a run's launches read on average when each replays the
    shortest bucket that holds its positions. With ``model`` and ``batch_size``, also those
    reads in bytes per step against the weights' bytes, both of which every step reads."""
    needed = prompt_len + new_tokens + steps_per_graph
    slots = graphs.cache_slots(needed)
    lengths = graphs.bucket_lengths(slots, bucket)
    launches = max(1, -(-(new_tokens - 1) // steps_per_graph))
    read = [graphs.shortest_bucket(lengths, prompt_len + (i + 1) * steps_per_graph)
            for i in range(launches)]
    mean = sum(read) / len(read)
    text = (f"Buckets of {bucket}: the cache holds {prompt_len} prompt + {new_tokens} new + "
            f"{steps_per_graph} spare (the steps of one launch: the last launch runs all of them, "
            f"so the decoder keeps room for them past the run) = {needed} "
            f"positions, rounded up to {slots} slots, since every buffer is allocated in "
            f"multiples of 16 positions, whatever the bucket; graphs for "
            f"{', '.join(map(str, lengths))} positions; a launch reads {mean:.1f} of the {slots} "
            f"on average.\nSo buckets can save at most {1 - mean / slots:.1%} of the key and "
            "value reads, whatever the kernels.")
    if model is not None and batch_size:
        cfg, size = model.config, next(model.parameters()).element_size()
        per_slot = 2 * cfg.n_layer * batch_size * cfg.n_embd * size  # keys and values, all layers
        weights, full = parameter_bytes(model), per_slot * slots
        skipped = per_slot * (slots - mean)
        def mb(x):
            return f"{x / 1e6:.0f} MB" if x >= 1e7 else f"{x / 1e6:.2f} MB"
        text += (f" In bytes per step: the whole cache is {mb(full)} and the weights "
                 f"{mb(weights)}, both read by the plain step; buckets skip {mb(skipped)} on "
                 f"average, {skipped / (full + weights):.0%} of the bytes the plain step must read.")
    return text


def buckets_line(verdict: str) -> str:
    """Notebook 10's reading of the bucketed step against the plain graph step (``verdict``:
    ``stats.verdict`` of the bucketed step against it)."""
    how = ("As eager ops the bucketed step launches no fewer kernels than the plain step and "
           "writes its query-key products out in full")
    if verdict == stats.FASTER:
        return f"{how}, yet reading fewer positions paid here; notebook 11 compiles it."
    if verdict == stats.SLOWER:
        return (f"{how}, and here it was slower than the plain step; notebook 11 compiles it, "
                "fusing its attention into reductions that read the bucket once.")
    return (f"{how}; here the two steps can't be told apart; notebook 11 compiles it, fusing its "
            "attention into reductions that read the bucket once.")


def peer_idle(budget, peer, ours) -> str:
    """Why ``peer`` (``generate()`` with a static cache, which replays CUDA graphs too) is slower
    than ``ours``, where the budget shows it: its GPU idles more of each step, and that extra
    idle time is most of the gap (empty else). Its idle time holds its eager prompt and the
    Python around its graph; the lesson does not split them."""
    data = budget.set_index("method")
    if not {peer, ours} <= set(data.index) or data[["gpu_ms", "idle_ms"]].isna().any().any():
        return ""
    p, o = data.loc[peer], data.loc[ours]
    gap = p["wall_ms"] - o["wall_ms"]
    if not (gap > 0 and p["idle_ms"] - o["idle_ms"] >= gap / 2):
        return ""
    return (f"{peer} replays CUDA graphs too, yet its GPU idles {p['idle_ms']:.2f} of its "
            f"{p['wall_ms']:.2f} ms per step ({p['idle_ms'] / p['wall_ms']:.0%}) against "
            f"{max(o['idle_ms'], 0):.2f} of {o['wall_ms']:.2f} ms for '{ours}'. "
            f"{peer.split(' ')[0]}'s idle time includes its eager prompt and the Python around its "
            "graph; this lesson does not split them.")


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
    text = (f"'{name}': the prompt's forward alone takes {wall:.2f} ms, once per run"
            + (f" (GPU work {gpu:.2f} ms of it)" if gpu == gpu else "") + f"; spread over "
            f"the {new_tokens} steps, that is {per:.3f} ms of each {step_ms:.3f} ms step "
            f"({per / step_ms:.0%})")
    idle = (wall - gpu) / new_tokens
    if idle == idle:
        text += f", of which the GPU idles {idle:.3f} ms"
        if idle_ms == idle_ms and idle_ms >= 0.05 * step_ms and idle > idle_ms:
            # the prompt timed on its own idled more than a whole timed run did per step
            text += (f", more than the {idle_ms:.3f} ms per step the GPU idles in the timed runs: "
                     "timed on its own, the prompt ran slower than inside them, so this is an "
                     "upper bound on its share")
        elif idle_ms == idle_ms and idle_ms >= 0.05 * step_ms:  # a share of a visible idle time
            share = idle / idle_ms
            text += (f". That is {share:.0%} of the {idle_ms:.3f} ms per step the GPU idles; "
                     + ("most of that idle time is the prompt's, not the steps'" if share >= 0.5
                        else "the rest of that idle time is the steps' own"))
    return text + "."


def bytes_line(model, batch_size, prompt_len, new_tokens, bandwidth, gpu_ms,
               steps_per_graph=1) -> str:
    """How long the plain graph step's reads (every weight and the whole cache, as
    ``bucket_reads`` counts them) take at the copy ``bandwidth`` (bytes/s), against its GPU work
    per step ``gpu_ms``: whether bytes explain that work. Empty without a GPU (NaN)."""
    if not (bandwidth == bandwidth and gpu_ms == gpu_ms):
        return ""
    cfg, size = model.config, next(model.parameters()).element_size()
    slots = graphs.cache_slots(prompt_len + new_tokens + steps_per_graph)
    nbytes = parameter_bytes(model) + 2 * cfg.n_layer * batch_size * cfg.n_embd * size * slots
    read_ms = 1e3 * nbytes / bandwidth
    how = ("so most of that work is not moving bytes" if read_ms < gpu_ms / 2 else
           "so moving bytes is much of that work")
    return (f"The plain graph step reads every weight and its whole cache, {nbytes / 1e6:.0f} MB "
            f"per step: {read_ms:.2f} ms at the {bandwidth / 1e9:.0f} GB/s copy bandwidth, "
            f"against its {gpu_ms:.2f} ms of GPU work per step, {how}.")


def without_prompt(step_ms, cost, new_tokens, floor_ms) -> str:
    """A time per step that counts the prompt's forward (``cost``: ``prefill_cost``, spread over
    ``new_tokens`` steps) read against the floor with that share taken out."""
    per = cost[0] / new_tokens
    return (f"that counts the prompt's forward, {per:.3f} ms of each step; without it, about "
            f"{(step_ms - per) / floor_ms:.1f}x")


def ladder_steps_per_launch():
    """The steps per launch of notebook 10's rung in 08's ladder (None if it names none)."""
    from . import summary  # here, not at the top: summary imports this module
    for lesson, _, method, _ in summary.RUNGS:
        found = re.search(r"\((\d+)/launch\)", method or "") if lesson == "10" else None
        if found:
            return int(found.group(1))
    return None


def launches_line(verdict: str, steps_per_graph: int, new_tokens: int, said: str = "",
                  ladder=None) -> str:
    """Notebook 10's reading of "more steps per launch" (``verdict``: ``stats.verdict`` of k
    steps per launch against one; ``said``: that comparison in words), with the steps a run of
    ``new_tokens`` replays at k per launch (its last launch can run steps no token needs), and
    what it means for 08's ladder, whose rung runs ``ladder`` steps per launch."""
    k, needed = steps_per_graph, new_tokens - 1  # the prefill gives the first token
    replayed = -(-needed // k) * k
    extra = f" ({replayed} steps replayed for the {needed} needed)" if replayed > needed else ""
    if ladder != k:
        eight = (f" 08's ladder times {ladder} per launch, which this run did not compare."
                 if ladder else "")
    elif verdict in (stats.FASTER, stats.SLOWER):
        how = said or ("that much " + ("faster" if verdict == stats.FASTER else "slower"))
        eight = (f" 08's ladder times {k} per launch, so its graph rung is {how} than 1 per launch "
                 "would be.")
    else:
        eight = f" 08's ladder times {k} per launch, so its graph rung stands for either."
    if verdict == stats.FASTER:
        return (f"{k} steps per launch pay: fewer replays saved more than the "
                f"{replayed - needed} extra step(s) they run{extra}.{eight}")
    if verdict == stats.SLOWER:
        return (f"{k} steps per launch cost time: fewer replays did not make up for the "
                f"{replayed - needed} extra step(s) they run{extra}.{eight}" if replayed > needed
                else f"{k} steps per launch cost time: fewer replays saved nothing here.{eight}")
    return (f"{k} steps per launch against one: no clear difference: with the flag read one "
            f"launch late the GPU already has the next launch queued, so fewer launches buy "
            f"nothing measurable here.{eight}")


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


def speed_note(bandwidth: float) -> str:
    """What the GB/s of ``speed_line`` count, said once above its lines (``bandwidth``: the
    measured copy bandwidth in bytes/s, what they are compared with)."""
    return (f"GB/s per part: the bytes it must move per step divided by the time all its "
            f"kernels take. "
            f"A weight GEMM counts the weights it reads plus its activations in and out (the "
            f"Triton LM head, which never writes its logits, counts no output); attention "
            f"counts the keys and values it reads (a whole bucket in the bucketed rungs, the filled "
            f"positions in the Triton rung); element-wise kernels are not counted. Copy bandwidth: "
            f"{bandwidth / 1e9:.0f} GB/s.")


def speed_line(name: str, table: pd.DataFrame, bandwidth: float) -> str:
    """One rung's kernel table in a line: kernels per step, and the GB/s its weight GEMMs and
    its attention reached against the measured copy bandwidth (``bandwidth`` in bytes/s; what
    the GB/s count: ``speed_note``)."""
    parts = table[table["part"] != "step (span)"].set_index("part")
    gemms = parts[parts.index.isin(["QKV", "attention out", "MLP up", "MLP down", "LM head"])]
    text = f"{name}: {parts['kernels'].sum():.0f} kernels per step"
    if len(gemms):
        text += (f"; weight GEMMs at {gemms['GBps'].min():.0f} to {gemms['GBps'].max():.0f} GB/s "
                 f"({gemms['GBps'].min() * 1e9 / bandwidth:.0%} to "
                 f"{gemms['GBps'].max() * 1e9 / bandwidth:.0%} of the copy bandwidth)")
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


def saved_us(ratio, before_ms: float, judge: bool = True) -> tuple:
    """(estimate, least, most) µs per step that a rung saved against one taking ``before_ms``
    per step, all three from the same rounds: their ``stats.Ratio`` (estimate and interval)
    taken at ``before_ms``. Least and most are NaN without an interval (too few runs, or a run
    that is not judged)."""
    def at(x):
        return 1e3 * before_ms * (1 - 1 / x) if 0 < x < float("inf") else float("nan")
    finite = all(x == x and abs(x) != float("inf") for x in (ratio.low, ratio.high))
    if not judge or ratio.n < stats.MIN_TRIALS or not finite or min(ratio.low, ratio.high) <= 0:
        return at(ratio.estimate), float("nan"), float("nan")
    return at(ratio.estimate), at(ratio.low), at(ratio.high)


PROFILER_STRETCH = 1.05  # a profiled span up to this times the timed step: not stretched


def pdl_line(saved: tuple, table: pd.DataFrame, before_ms: float, step_us=None) -> str:
    """What PDL saved per step (``saved``: ``saved_us`` of the PDL rung against the Triton
    rung, which takes ``before_ms`` per step) against the idle time between kernels of the step
    without it (``table``: that step's kernel table). ``step_us``: the Triton step timed without
    the profiler, its prompt's share taken out; the table's idle time is read against the timed
    saving only where the profiled span is not longer than that (the profiler did not stretch
    the step; without ``step_us`` it is read as is). Only when even the least saving exceeds
    that idle time do the kernels themselves overlap or finish sooner."""
    rows = table.set_index("part")
    idle, span = float(rows.loc["idle between kernels", "us"]), float(rows.loc["step (span)", "us"])
    count = rows.drop("step (span)")["kernels"].sum() if "kernels" in rows else float("nan")
    estimate, least, most = saved
    interval = least == least and most == most
    low = least if interval else estimate
    said = (f"{estimate:.1f} µs per step" + (f" ({least:.1f}–{most:.1f})" if interval else "")
            + f", from its ratio above at the Triton step's {1e3 * before_ms:.0f} µs")
    kernels = f"{count:.0f} kernels per step" if count == count else "its kernels"
    head = f"The Triton step runs {kernels}, each waiting for the one before. "
    if step_us is not None and not span <= PROFILER_STRETCH * step_us:
        return (head + f"PDL saved {said}. Its kernel table's idle time is not read against that: "
                f"under the profiler the step spans {span:.0f} µs, against {step_us:.0f} µs timed "
                f"without it (the prompt's share taken out), so the profiler stretched it.")
    if step_us is not None:
        head += (f"Under the profiler it spans {span:.0f} µs, no more than about the "
                 f"{step_us:.0f} µs timed without it (the prompt's share taken out), so its "
                 f"table's idle time can be read against the timed saving. ")
    if not estimate > 0:
        return (head + f"PDL saved nothing per step here ({said}); the Triton step idles "
                f"{idle:.1f} µs between kernels.")
    if low <= 0:
        return (head + f"PDL saved {said}: can't tell apart from no saving on this machine; the "
                f"Triton step idles {idle:.1f} µs between kernels.")
    text = head + f"PDL saved {said}; the Triton step without it idles {idle:.1f} µs between kernels, so "
    if low > idle:
        return text + ("PDL saved more than that idle time: the kernels themselves overlap or "
                       "finish sooner, not only the gaps close.")
    if estimate > idle:
        return text + ("this run can't tell whether PDL saved more than that idle time: the "
                       "gaps closing alone could account for it.")
    return text + "the gaps closing alone could account for what PDL saved."


def largest_gap(table: pd.DataFrame) -> pd.Series:
    """The part of a kernel table furthest above its floor (the step's own row left out)."""
    parts = table[table["part"] != "step (span)"]
    return parts.loc[parts["above_floor_us"].idxmax()]
