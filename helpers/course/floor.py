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
    positions a run's launches read on average, when each replays the shortest bucket that holds
    its positions, against the buffer's slots (prompt, new tokens and one launch's steps of room,
    rounded up to a multiple of 16 as ``static_state`` sizes every buffer); with ``model`` and
    ``batch_size``, as a share of all the bytes the plain step reads (weights too)."""
    slots = graphs.cache_slots(prompt_len + new_tokens + steps_per_graph)
    lengths = graphs.bucket_lengths(slots, bucket)
    launches = max(1, -(-(new_tokens - 1) // steps_per_graph))
    read = [graphs.shortest_bucket(lengths, prompt_len + (i + 1) * steps_per_graph)
            for i in range(launches)]
    mean = sum(read) / len(read)
    text = (f"Buckets of {bucket}: a launch reads {mean:.1f} of the cache's {slots} slots on "
            f"average (the run's {prompt_len + new_tokens} positions plus a launch's room, "
            f"rounded up to a multiple of 16), so buckets can skip at most ")
    if model is None or not batch_size:
        return text + f"{1 - mean / slots:.1%} of the key and value reads."
    cfg, size = model.config, next(model.parameters()).element_size()
    per_slot = 2 * cfg.n_layer * batch_size * cfg.n_embd * size  # keys and values, all layers
    skipped = per_slot * (slots - mean) / (per_slot * slots + parameter_bytes(model))
    return text + f"{skipped:.0%} of the bytes the plain step reads (the weights included)."


def buckets_line(verdict: str, plain_gpu_ms: float, bucketed_gpu_ms: float) -> str:
    """Notebook 10's reading of the bucketed step against the plain graph step (``verdict``:
    ``stats.verdict`` of the bucketed step against it), with the GPU work per step of each (ms,
    ``budget.per_step``'s ``gpu_ms``). It names no cause: the lesson does not measure one."""
    how = {stats.FASTER: "was faster than the plain step",
           stats.SLOWER: "was slower than the plain step"}.get(
               verdict, "and the plain step can't be told apart")
    moved = ("rose" if bucketed_gpu_ms > plain_gpu_ms else "fell") + \
        f" from {plain_gpu_ms:.2f} to {bucketed_gpu_ms:.2f} ms per step"
    if bucketed_gpu_ms > plain_gpu_ms:
        moved += " although it reads fewer cache slots"
    return (f"As eager ops the bucketed step {how}: its GPU work {moved}. Notebook 11 compiles "
            "it.")


def prefill_cost(decoder, input_ids, device, repeats) -> tuple:
    """(wall clock, GPU work) in ms of ``decoder``'s prompt forward alone, which every run pays
    once before its first step: the median of ``repeats`` timed runs and one profiled run (GPU
    work NaN on a CPU)."""
    rows, _ = harness.compare({"prefill": lambda: decoder.prefill(input_ids)}, device=device,
                              repeats=repeats, busy=True)
    return 1e3 * rows[0]["median_s"], 1e3 * rows[0]["gpu_busy_s"]


def prompt_line(verdict, saved_ms, eager, graphed, new_tokens) -> str:
    """Notebook 11's prompt-in-a-graph rung (``verdict``: ``stats.verdict`` of it against the
    rung before): where the rounds found it faster, its step's fall per step (``saved_ms``, from
    the table's medians) against what its prompt's forward saves timed alone (``eager``,
    ``graphed``: ``prefill_cost`` of the rung before and of this one), spread over the
    ``new_tokens`` steps of a run, so the two can be compared. Otherwise no fall is explained."""
    if verdict != stats.FASTER:
        found = ("found this rung slower than the one above" if verdict == stats.SLOWER
                 else "could not tell this rung from the one above")
        return f"The prompt in a graph: the rounds {found}, so no fall of the step is explained here."
    alone = (eager[0] - graphed[0]) / new_tokens
    text = (f"The prompt in a graph: the step {'fell' if saved_ms >= 0 else 'rose'} "
            f"{abs(saved_ms):.3f} ms (the table's medians); the prompt's forward timed alone went "
            f"from {eager[0]:.2f} to {graphed[0]:.2f} ms per run, {abs(alone):.3f} ms per step "
            + ("less" if alone >= 0 else "more"))
    if not (saved_ms > 0 and alone > 0):  # nothing to share out
        return text + "."
    share = alone / saved_ms
    if share < 0.9:
        return text + f", {share:.0%} of the step's fall; what makes the rest is not measured here."
    if share > 1.1:
        return text + ", more than the step fell: inside a run it saved less than timed alone."
    return text + ", about all of the step's fall."


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


def launches_line(verdict: str, steps_per_graph: int, new_tokens: int, ladder=None,
                  estimate: float = float("nan")) -> str:
    """Notebook 10's reading of "more steps per launch" (``verdict``: ``stats.verdict`` of k
    steps per launch against one, ``estimate`` its ratio, above 1 where k is faster): the steps
    a run of ``new_tokens`` replays at k per launch (its last launch can run steps no token
    needs), how much of a slowdown those extra steps can explain, and what the verdict means for
    08's ladder, whose rung runs ``ladder`` steps per launch."""
    k, needed = steps_per_graph, new_tokens - 1  # the prefill gives the first token
    replayed = -(-needed // k) * k
    one = replayed - needed == 1
    extra = (f"the {replayed - needed} extra step{'' if one else 's'} they run ({replayed} "
             f"replayed for the {needed} needed)")
    if ladder != k:
        eight = (f" 08's ladder times {ladder} per launch, which this run did not compare."
                 if ladder else "")
    elif verdict in (stats.FASTER, stats.SLOWER):
        eight = (f" 08's ladder times {k} per launch, so its graph rung is that much "
                 f"{'faster' if verdict == stats.FASTER else 'slower'} than 1 per launch would be.")
    else:
        eight = f" 08's ladder times {k} per launch, so its graph rung stands for either."
    if verdict == stats.FASTER:
        return f"{k} steps per launch pay: fewer replays saved more than {extra} cost.{eight}"
    if verdict == stats.SLOWER:
        if replayed == needed:
            return f"{k} steps per launch cost time; what costs it is not measured here.{eight}"
        bound, slower = replayed / needed, 1 / estimate if estimate > 0 else float("nan")
        if round(slower, 2) > round(bound, 2):  # as printed: "at most 1.01x of the 1.01x" is none left
            why = (f"{extra} {'explains' if one else 'explain'} at most {bound:.2f}x of the "
                   f"{slower:.2f}x; what costs the rest is not measured here")
        else:
            why = (f"{extra} can explain all of it (up to {bound:.2f}x)")
        return f"{k} steps per launch cost time: {why}.{eight}"
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


def largest_gaps(table: pd.DataFrame, within: float = 0.1) -> str:
    """The part of a kernel table furthest above its floor (the step's own row left out), as
    "part, µs against its floor µs"; where the next part is within ``within`` of it above its
    floor, both, since the table cannot rank them."""
    parts = table[table["part"] != "step (span)"].sort_values("above_floor_us", ascending=False)
    top = parts.iloc[:2] if len(parts) > 1 and parts["above_floor_us"].iloc[1] >= \
        (1 - within) * parts["above_floor_us"].iloc[0] else parts.iloc[:1]
    said = " and ".join(f"{r['part']}, {r['us']:.0f} µs against {r['floor_us']:.0f}"
                        for _, r in top.iterrows())
    return (f"the parts furthest above their floors, within {within:.0%} of each other: {said}"
            if len(top) > 1 else f"the part furthest above its floor: {said}")
