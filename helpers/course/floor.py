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
from .. import triton_kernels as tk
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


def peer_idle_line(budget_frame, method: str) -> str:
    """Why a method's GPU bar is short of its wall clock (``budget_frame``: ``budget.per_step``):
    where the GPU idles at least ``budget.HOST_PACE_PCT`` % of the step (as printed), the wall
    clock as a multiple of the GPU's work (the host issuing the step and waiting on it); otherwise
    who sets the pace. Empty without GPU numbers."""
    from . import budget  # here, not at the top: budget imports this module
    data = budget_frame.set_index("method")
    if method not in data.index or not data.loc[method, "wall_ms"] > 0 or \
            pd.isna(data.loc[method, "gpu_ms"]):
        return ""
    wall, gpu = data.loc[method, "wall_ms"], data.loc[method, "gpu_ms"]
    share = round(100 * max(wall - gpu, 0.0) / wall)  # the verdict goes with the printed share
    idle = budget.ms_or_us(wall - gpu, budget.printed_idle(data.loc[method]))  # as budget.sentence
    text = f"{method}: the GPU is idle {idle} of each {wall:.2f} ms ({share}%)"
    if share >= budget.HOST_PACE_PCT:
        return text + (f": the wall clock is {wall / gpu:.1f}x the GPU's work, so "
                       f"{budget.pace(share, why=False)}.")
    return text + f": {budget.pace(share, why=False)}."


GRAPH_IDLE_WHY = ("the eager prompt's forward, sized on the next line, and gaps between "
                  "kernels or launches, which this lesson does not measure")
# 10's budget sentence for its graph (round 37: the markdown said "the eager prompt's forward and
# most likely gaps between the graph's kernels", budget.IDLE_WHY printed "the host issues the
# decode steps and the prompt's forward": two accounts of the same idle time)


def empty_slots_ms(config, batch_size, prompt_len, new_tokens, bandwidth) -> float:
    """What 10's ``decode_step`` reads beyond the floor, per step on average, in ms at the copy
    ``bandwidth`` (bytes/s): it attends over every slot of the cache (``prompt_len`` +
    ``new_tokens``), filled or not, where the floor counts the filled positions only. NaN
    without a bandwidth (no GPU)."""
    slots = 2 * config.n_layer * batch_size * (prompt_len + new_tokens) * config.n_embd * 4
    extra = slots - kv_bytes_per_step(config, batch_size, prompt_len, new_tokens)
    return 1e3 * extra / bandwidth if bandwidth > 0 else math.nan


def graph_answer_line(budget_frame, method: str, eager, new_tokens: int, batch_size: int) -> str:
    """10's answer (``budget_frame``: ``budget.per_step`` with the floor), each floor ratio beside
    the time it divides (round 37: "1.314 ms per step (... about 1.213 ms), 8.42x the floor" read
    as 1.213's ratio): the step's time and its ratio (the table's ÷ floor), then, less the eager
    prompt's share (``eager``: ``prefill_cost``), the decode step alone and its ratio (a division
    of the printed values). Without a floor (no GPU): the time only."""
    row = budget_frame.set_index("method").loc[method]
    wall, floor = row["wall_ms"], row["floor_ms"]
    text = f"{new_tokens} tokens, batch {batch_size}: '{method}' takes {wall:.3f} ms per step"
    if not (math.isfinite(floor) and floor > 0):
        return text + " (no floor without a GPU)."
    low = round(floor, 3)
    text += f", {wall / floor:.2f}x the floor of {low:.3f} ms"
    if math.isfinite(eager[0]) and new_tokens > 0:
        alone = round(wall - eager[0] / new_tokens, 3)
        text += (f"; less the eager prompt's share, the decode step alone takes about "
                 f"{alone:.3f} ms, {alone / low:.2f}x the floor")
    return text + "."


def _gpu_floor(budget_frame, method: str):
    """(the GPU's work per step as printed, its multiple of the floor from the printed values,
    the idle share as the budget sentence prints it, whether the GPU sets the pace) of
    ``method``'s row, which ``gpu_floor_line`` and ``gpu_floor_clause`` both read; None without
    GPU numbers."""
    from . import budget  # budget imports this module
    row = budget_frame.set_index("method").loc[method]
    if not (math.isfinite(row["gpu_ms"]) and math.isfinite(row["floor_ms"]) and row["floor_ms"] > 0):
        return None
    gpu, share = round(row["gpu_ms"], 2), budget.printed_share(row)
    return gpu, gpu / round(row["floor_ms"], 3), share, round(share) <= budget.GPU_PACE_PCT


def gpu_floor_line(budget_frame, method: str, empty_ms: float = math.nan) -> str:
    """The second half of 10's question, how far from the floor, once the host is out of the
    way (round 37: the lesson never said it): the GPU's own work per step as the figure draws it
    and its multiple of the floor (printed values divided), what reading the empty cache slots
    costs of it (``empty_slots_ms``), the GPU's idle share as the budget sentence prints it, who
    sets the pace, and, where the GPU does, that the rest is in the kernels, notebook 11's
    subject. Empty without GPU numbers."""
    from . import budget  # budget imports this module
    if (read := _gpu_floor(budget_frame, method)) is None:
        return ""
    gpu, times, share, gpu_paced = read
    text = f"The GPU's own work: {gpu:.2f} ms per step, {times:.2f}x the floor"
    if math.isfinite(empty_ms):
        text += (f" (reading the empty cache slots too costs about {budget.ms_or_us(empty_ms)} of "
                 "it at the copy bandwidth)")
    text += f"; the GPU idles {share:.0f}% of the step, so {budget.pace(share, why=False)}"
    if gpu_paced:
        text += (": with the host out of the way, what separates the step from the floor is its "
                 "kernels, which notebook 11 rebuilds")
    return text + "."


def gpu_floor_clause(budget_frame, method: str) -> str:
    """10's closing line on the floor: the GPU's own work as a multiple of it (as
    ``gpu_floor_line`` prints it), and that notebook 11 goes after the kernels where the GPU
    sets the pace; empty without GPU numbers."""
    if (read := _gpu_floor(budget_frame, method)) is None:
        return ""
    _, times, _, gpu_paced = read
    return f"; its GPU work is {times:.2f}x the floor" + (
        ", and notebook 11 goes after the kernels" if gpu_paced else "")


def prefill_cost(decoder, input_ids, device, repeats) -> tuple:
    """(wall clock, GPU work) in ms of ``decoder``'s prompt forward alone, which every run pays
    once before its first step: the median of ``repeats`` timed runs and one profiled run (GPU
    work NaN on a CPU)."""
    rows, _ = harness.compare({"prefill": lambda: decoder.prefill(input_ids)}, device=device,
                              repeats=repeats, busy=True)
    return 1e3 * rows[0]["median_s"], 1e3 * rows[0]["gpu_busy_s"]


def prompt_idle_ms(eager, new_tokens: int) -> float:
    """The eager prompt's GPU-idle time per step (``eager``: ``prefill_cost``, wall clock and GPU
    work in ms, timed alone), spread over ``new_tokens``: host time a graph could replace, as
    ``prompt_line`` prints it and ``launch_pace_line`` subtracts it."""
    return max(eager[0] - eager[1], 0.0) / new_tokens


def prompt_line(budget_frame, eager, new_tokens, graphed=None) -> str:
    """The eager prompt's share of a step, as its own line after the budget sentence (whose
    idle time it is part of): ``eager`` (``prefill_cost``: the prompt's forward timed alone, wall
    clock and GPU work in ms) runs once per run, so its time spread over ``new_tokens``, and the
    GPU-idle part of that, each labelled as timed alone, e.g. "The prompt's forward, run eagerly
    once per run: 9.2 ms timed alone (its GPU work 2.0 ms, the rest host time), spread over 100
    tokens = 92 µs per step, 72 µs of it GPU idle." (10's review read the same numbers folded into the budget sentence three times.) The
    GPU's work of the forward is named, the rest called host time: the review of round 21 read
    8.4 ms in 10 against 12.7 ms in 11 for the same forward, whose GPU part agreed. No
    split of the step's idle into prompt and decode loop: 11's 09:46 run printed "the prompt
    ... leaves the GPU idle 87 µs of each step, the decode loop the other 93 µs" while graphing
    the prompt took 0.14 ms off each step. ``graphed``: the (before, after) methods of the
    budget between which the prompt's forward became a graph; what that took off each step is
    named too (with "more than its whole time alone" where it did). Empty without the prompt's
    time."""
    if not new_tokens > 0 or not math.isfinite(eager[0]):
        return ""
    from . import budget  # budget imports this module

    per = eager[0] / new_tokens
    text = f"The prompt's forward, run eagerly once per run: {eager[0]:.1f} ms timed alone"
    if math.isfinite(eager[1]):  # the GPU's part is the same kernels in 10 and 11; the host's moves
        text += f" (its GPU work {min(eager[1], eager[0]):.1f} ms, the rest host time)"
    text += f", spread over {new_tokens} tokens = {budget.ms_or_us(per)} per step"
    if math.isfinite(eager[1]):
        text += f", {budget.ms_or_us(prompt_idle_ms(eager, new_tokens))} of it GPU idle"
    text += "."
    rows = budget_frame.set_index("method")
    if graphed and all(m in rows.index for m in graphed):
        before, after = (rows.loc[m, "wall_ms"] for m in graphed)
        if math.isfinite(before) and math.isfinite(after):
            saved = round(before, 2) - round(after, 2)  # as the figure's labels subtract
            if saved > 0:
                text += (f" Replaying it from a graph took {budget.ms_or_us(saved, printed=saved)} "
                         "off each step" + (", more than its whole time alone." if saved > per else "."))
    return text


def this_run_ms(stem: str, method: str, device_name: str, of: str = "median_s", **where) -> float:
    """ms per step (``median_s`` over ``seq_len``, the prompt included; ``of="gpu_busy_s"``: its
    GPU work, as ``budget.per_step`` reads it) of ``method`` in lesson
    ``stem``'s table of this runner run (``COURSE_RUN_DIR``), measured on ``device_name`` at the
    point ``where`` (e.g. ``batch_size=32, seq_len=100``); NaN outside a runner run, before that
    lesson ran in it, or with another GPU or point (never another run's number)."""
    run_dir = os.environ.get("COURSE_RUN_DIR")
    path = Path(run_dir) / "data" / f"{stem}.csv" if run_dir else None
    if path is None or not path.exists():
        return float("nan")
    try:
        rows = pd.read_csv(path)
        rows = rows[(rows["method"] == method) & (rows["device_name"] == device_name)]
        for key, value in where.items():
            rows = rows[rows[key] == value]
        if "status" in rows:
            rows = rows[rows["status"] == harness.OK]
        if len(rows) != 1:
            return float("nan")
        value = float(rows[of].iloc[0])
        return 1e3 * value / float(rows["seq_len"].iloc[0]) if value > 0 else float("nan")
    except (OSError, ValueError, KeyError, TypeError):
        return float("nan")


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


def rung_builder(rungs: dict, with_pdl) -> callable:
    """11's ``build(name, model, length)``: rung ``name``'s decoder from ``rungs`` (name ->
    ``(model, length) -> decoder``), its graphs captured with ``triton_kernels.PDL`` False (PDL
    off) or, for a rung in ``with_pdl``, None (PDL on if the GPU has it), Inductor's expected
    messages kept out of the lesson (round 36: this plumbing was in the lesson's code)."""
    def build(name, model, length):
        tk.PDL = None if name in with_pdl else False
        try:
            with quiet_compile():
                return rungs[name](model, length)
        finally:
            tk.PDL = None

    return build


def parts_side_by_side(tables: dict) -> pd.DataFrame:
    """µs per step of each part of the kernel table, one column per rung (``tables``: rung ->
    ``kernels.kernel_table``), with the floor of each part."""
    frame = pd.concat({name: t.set_index("part")["us"] for name, t in tables.items()}, axis=1)
    first = next(iter(tables.values())).set_index("part")["floor_us"]
    return frame.assign(**{"floor µs": first.reindex(frame.index)}).round(1)


RUNG_MARK = " · "  # 11's method labels: "3 · Triton kernels", the rung's number first


def _rung(label: str) -> str:
    """A rung's short column name: "rung 3" for "3 · Triton kernels" (the label if unnumbered)."""
    number, mark, _ = label.partition(RUNG_MARK)
    return f"rung {number}" if mark and number.isdigit() else label


def parts_view(tables: dict) -> pd.DataFrame:
    """``parts_side_by_side`` for reading: one compact block, a short column per rung ("rung 1",
    ...) and "floor" (11's review read the full method names wrap the table into three blocks);
    ``parts_legend`` names the rungs."""
    side = parts_side_by_side(tables)
    return side.rename(columns={**{name: _rung(name) for name in tables}, "floor µs": "floor"})


def parts_legend(tables: dict) -> str:
    """The line over ``parts_view``: its unit and which rung each short column is."""
    said = "; ".join(f"{_rung(name)}: {name.partition(RUNG_MARK)[2] or name}" for name in tables)
    return (f"µs per step of each part ({said}; floor: the part's bytes at the copy "
            "bandwidth)")


def pdl_legend(ax) -> None:
    """Rename the GPU bars in ``budget.plot``'s legend where PDL rungs are drawn (11): their busy
    time counts kernels launched early and waiting in ``gdc_wait``, not only kernel work."""
    legend = ax.get_legend()
    for text in legend.get_texts() if legend else []:
        if text.get_text().startswith("GPU work"):
            text.set_text("GPU busy: kernel time (PDL rungs: waits too)")


def launch_pace_line(budget_frame, method: str, k: int, eager=(math.nan, math.nan),
                     new_tokens: int = 0) -> str:
    """What ``k`` steps per launch can gain over one (10), where the budget of ``method`` (one
    step per launch) shows the GPU setting the pace, as ``budget.sentence`` reads it: without PDL
    the GPU's busy time is kernel time, the same at any k, so fewer replays can remove at most
    the GPU's idle time, less the eager prompt's share (``eager``: ``prefill_cost``, timed alone),
    which runs once per run at any k. Round 28: "cannot help" beside 11's rung 6, 1.029x faster
    per step; 11's PDL rungs count waits as busy time, so the bound does not carry over there.
    Empty otherwise, or without GPU numbers."""
    from . import budget  # budget imports this module
    rows = budget_frame.set_index("method")
    if not k > 1 or method not in rows.index:
        return ""
    row = rows.loc[method]
    wall, gpu = row["wall_ms"], row["gpu_ms"]
    if not (math.isfinite(wall) and math.isfinite(gpu) and wall > 0) or gpu >= wall:
        return ""
    share = budget.printed_share(row)  # as budget.sentence prints it
    if budget.pace(share, why=False) != "the GPU sets the pace":
        return ""
    idle = budget.printed_idle(row)  # as budget.sentence prints it
    text = (f"what more per launch can gain: at 1 per launch the GPU is idle only {share:.0f}% of "
            f"the step ({idle:.2f} ms), and its kernel time is the same at any number per launch")
    if new_tokens > 0 and all(math.isfinite(x) for x in eager):
        prompt = round(prompt_idle_ms(eager, new_tokens), 2)
        rest = round(idle - prompt, 2)
        text += (f"; {prompt:.2f} ms of that idle time is the eager prompt's, run once per run, so "
                 + (f"fewer replays can remove at most the other {rest:.2f} ms" if rest > 0
                    else "little idle time is left for fewer replays to remove"))
    else:
        text += ", so fewer replays can remove at most that idle time"
    return text + (" (in notebook 11, PDL's waits count as busy time, so there this bound does "
                   "not hold).")


def gpu_gap_line(budget_frame, method: str) -> str:
    """What is left of notebook 10's graphed step once the graph has taken the host off its
    critical path: its GPU work per step (as the figure draws it, the eager prompt's share
    included) against the floor, as printed (0.01 ms, the floor to 0.001 ms: 1.16 / 0.219 =
    5.30x). 10's review: the lesson asks how far from the floor and never said that this gap is
    GPU work no graph removes. Empty without GPU numbers or a floor."""
    rows = budget_frame.set_index("method")
    if method not in rows.index:
        return ""
    gpu, low = round(rows.loc[method, "gpu_ms"], 2), round(rows.loc[method, "floor_ms"], 3)
    if not (math.isfinite(gpu) and math.isfinite(low) and gpu > 0 and low > 0):
        return ""
    # round 29: not "its GPU work alone": the figure's GPU work holds the eager prompt's share
    text = (f"its GPU work per step, the eager prompt's share included, is {gpu:.2f} ms, "
            f"{gpu / low:.2f}x the floor")
    if gpu <= low:
        return text + "."
    # round 23: the causes it once listed (the whole cache buffer read, ...) were not measured
    # round 27: "notebook 11 profiles them" sent the reader to a profile 11 does not hold;
    # round 29: nor "a step that differs only in its attention" (its graphs differ too)
    return text + (": that gap is the kernels themselves (which of them, this lesson does not "
                   "measure), which no graph removes.")


def per_step_ratio(ratio, new_tokens: int, k: int):
    """``ratio`` (``stats.row_speedup``, k per launch against 1, per run) read per decode step: a
    run at ``k`` per launch does whole launches, ``ceil((n - 1) / k) * k`` decode steps, not
    ``n - 1``, so the ratio and its interval times that work ratio. (steps, Ratio), or None
    where no step is extra or the ratio is not a number."""
    if not (k > 1 and new_tokens > 1 and math.isfinite(ratio.estimate) and ratio.estimate > 0):
        return None
    steps = math.ceil((new_tokens - 1) / k) * k
    if steps == new_tokens - 1:
        return None
    w = steps / (new_tokens - 1)
    return steps, stats.Ratio(ratio.estimate * w, ratio.low * w, ratio.high * w, ratio.n,
                              ratio.level)


def extra_steps_note(ratio, new_tokens: int, k: int, unit: str = "launch") -> str:
    """The per-step reading of "k steps per launch against 1" (``per_step_ratio``), in
    ``stats.plain``'s words (10's 10:50 run: 1.004x slower per run (1.002-1.006), 100 steps not
    99, so 1.006x faster per step (1.004-1.008)). ``unit``: what one launch is called (11:
    "replay"). Empty where no step is extra or the ratio is not a number."""
    read = per_step_ratio(ratio, new_tokens, k)
    if read is None:
        return ""
    steps, per = read
    return (f"; per decode step (a run at {k} per {unit} does {steps} steps, not {new_tokens - 1}): "
            f"{stats.plain(per)}")


def rounds_ratio(table, candidate: str, baseline: str, judge: bool = True, *,
                 apart: bool = False, **where) -> str:
    """The rounds' ratio of two rows in ``stats.plain``'s words; where the table's medians'
    ratio prints outside the printed range, the same line says so, in the course's words:
    "1.86x faster (1.77–1.96; the table's medians: 1.76x)" (round 25: 1.76x, in the table and
    the figure, below a range that never named it). ``rounds_note`` says once why they differ.
    ``apart``: also where the medians' ratio is more than ``stats.MEDIANS_APART`` from the
    estimate, inside the range (``stats.plain``'s own rule), for a line read on its own (round
    29: 10's one line said "3.06x faster (2.70–3.50)" beside a table and figure at 2.73x)."""
    cand, base = stats._row_trials(table, candidate, baseline, "wall", where)
    outside = apart or stats.medians_outside(table, candidate, baseline, judge, **where)
    return stats.plain(stats._trials_speedup(cand, base), judge,
                       stats.medians_ratio(cand, base) if outside else None)


def rounds_note(table, comparisons, judge: bool = True, *, outside_only: bool = False,
                **where) -> str:
    """One sentence after a lesson's ratios (``comparisons``: (label, candidate, baseline)):
    they are the interleaved rounds' (the lesson's answer); the table's medians' ratio, where it
    prints otherwise (two decimals) and its line has not said so already (``rounds_ratio``:
    outside the range); and, once, why the two can differ, with this run's widest spread of
    runs among those methods. Empty in a smoke run or where no comparison has enough rounds.
    ``outside_only``: only where a line printed the medians beside a range that leaves them out
    (round 32: 11's note listed medians inside their ranges, about 0.01 from the ratios)."""
    if not judge:
        return ""
    apart, outside, differ, read = [], [], set(), 0
    for label, new, old in comparisons:
        cand, base = stats._row_trials(table, new, old, "wall", where)
        ratio, medians = stats._trials_speedup(cand, base), stats.medians_ratio(cand, base)
        if ratio.n < stats.MIN_TRIALS or not (math.isfinite(medians) and medians > 0
                                              and math.isfinite(ratio.estimate)):
            continue
        read += 1
        beside = stats.medians_outside(table, new, old, judge, **where) is not None
        if beside:  # its line printed the medians beside a range that leaves them out
            differ.update((new, old))
            outside.append(_rung(label))
        elif not outside_only and _as_said(medians) != _as_said(ratio.estimate):
            differ.update((new, old))
            apart.append(f"{_as_said(medians)} ({_rung(label)})")
    if not read:  # too few rounds for any ratio: nothing to reconcile
        return ""
    text = "The ratios above are the interleaved rounds' (notebook 00), which compare runs of the same round"
    if not differ:
        return "" if outside_only else text + "; the table's medians give the same ratios to two decimals."
    if apart:
        text += (f"; the table's medians, each method's middle run on its own, give "
                 f"{stats.listed(apart)}")
    spread = {m: stats.method_trials(table, m, **where) for m in sorted(differ)}
    widest = max(spread, key=lambda m: max(spread[m]) / min(spread[m]))
    low, high = 1e3 * min(spread[widest]), 1e3 * max(spread[widest])
    digits = 0 if low >= 100 else 1
    # round 30: the pair whose medians lie outside its printed range named (the review read
    # "1.82x faster (1.70–1.97; the table's medians: 1.69x)" and a note that never linked them)
    why = (f"because a method's runs take different times from round to round: here "
           f"{_quoted(widest)}'s took {low:.{digits}f} to {high:.{digits}f} ms.")
    if outside_only:
        return (text + f"; the table's medians, each method's middle run on its own, lie outside "
                f"the range for {stats.listed(outside)} " + why)
    even = f", even outside the range ({stats.listed(outside)})," if outside else ""
    return text + f". The two can differ{even} " + why


def _quoted(method: str) -> str:
    """A method named inside a sentence: a rung by its number ("rung 2"), a label holding a comma
    in quotes, another as it is."""
    if RUNG_MARK in method and method.partition(RUNG_MARK)[0].isdigit():
        return f"rung {method.partition(RUNG_MARK)[0]}"
    return f"\u201c{method}\u201d" if "," in method else method


def _as_said(ratio: float) -> str:
    """A ratio (baseline over candidate) as "1.49x faster" or "1.02x slower", two decimals."""
    return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"


def _per_launch(table, most: str, one: str, new_tokens: int, k: int) -> tuple:
    """k steps per launch against 1: (whole runs' ratio, ``per_step_ratio``'s (steps, ratio) or
    None, the per-step ratio where there is one, else the whole runs'), read by both
    ``per_launch_line`` and ``per_launch_clause``."""
    ratio = stats.row_speedup(table, most, one, seq_len=new_tokens)
    read = per_step_ratio(ratio, new_tokens, k)
    return ratio, read, read[1] if read else ratio


def per_launch_line(table, most: str, one: str, new_tokens: int, k: int, judge: bool) -> str:
    """10's "k steps per launch against 1", per decode step as 11 reads its rung 6
    (``extra_steps_note``: a run at k per launch does whole launches), then, only where they
    read otherwise, a whole run of ``new_tokens`` new tokens in words and its extra steps, as the
    table and the figure time every method (round 24: per decode step alone, 1.005x faster
    beside a table and figure that showed it slower). Round 28: the line gave 100 steps against
    99 and then said it did not know why the run was slower; now only a step slower per decode
    step is left unexplained. Empty in a smoke run or for k = 1."""
    if not judge or not k > 1:
        return ""
    ratio, read, per = _per_launch(table, most, one, new_tokens, k)
    # round 29: one range, the per-step reading's where there is one; whole runs in words (the
    # full copies of 6e28961 printed six ranges in 10, two of them here; a lesson prints five)
    # round 33: the per-step verdict (the fair one) leads; whole runs only where they read
    # otherwise, in words (the review: "1.01x slower. Per decode step ...: can't tell apart"
    # gave two verdicts at once)
    # round 36: two short sentences, the per-step verdict, then whole runs only where they read
    # otherwise, with the reason (the review read the one-sentence form three times)
    text = f"Per decode step, {k} steps per launch against 1 (time at 1 ÷ at {k}): {stats.plain(per)}"
    if stats.verdict(per) == stats.SLOWER:
        text += f"; why a step is slower at {k} per launch, this lesson does not measure"
    if read and stats.verdict(ratio) != stats.verdict(per):
        whole = "no faster" if stats.verdict(ratio) == stats.NOISE else stats.short(ratio)
        text += (f". A whole run is {whole} at {k} per launch, because it does {read[0]} steps, "
                 f"not {new_tokens - 1}")
    return text + "."


def per_launch_clause(table, most: str, one: str, new_tokens: int, k: int, judge: bool) -> str:
    """10's closing line on k steps per launch, from ``per_launch_line``'s per-step verdict
    (round 34: only an output line and an exercise said that more steps per launch bought
    nothing): "; 4 steps per launch bought nothing per step here" where the two can't be told
    apart, "; 4 steps per launch ran slower per step here" where slower; empty where faster, in a
    smoke run, or for k = 1."""
    if not judge or not k > 1:
        return ""
    ratio, _, per = _per_launch(table, most, one, new_tokens, k)
    if math.isnan(ratio.estimate) or ratio.n < stats.MIN_TRIALS:  # too few to judge: say nothing
        return ""
    verdict = stats.verdict(per)
    if verdict == stats.NOISE:
        return f"; {k} steps per launch bought nothing per step here"
    return f"; {k} steps per launch ran slower per step here" if verdict == stats.SLOWER else ""


def against_tenth(fast_ms: float, start_ms: float, tenth_ms: float, fast: str,
                  gpu=None, point=None) -> str:
    """11's answer first (round 23: it came only in the last line): notebook 10's graphed step
    (``tenth_ms``: ``this_run_ms``) against the last rung ``fast`` and against rung 1, where the
    ladder starts, each from the two tables' printed medians (no interval: the lessons time in
    separate rounds). ``gpu``: (rung 1's, 10's step's) GPU work in ms per step; with both, a
    second line gives the wall-clock and GPU-work differences between rung 1 and 10's step, as
    printed, and that what makes them up is not measured (round 27b: the lesson blamed rung 1's
    attention kernels while the GPU work differed by 0.07 ms of a 0.355 ms gap; round 29: not
    "only in its attention", its graphs, one per bucket length, differ too). ``point``: (batch,
    new tokens) of both runs, named with 10's time (round 30: the workshop copy's 1.333 ms read
    as the full preset's 1.335 ms, under other sizes)."""
    if not all(math.isfinite(x) and x > 0 for x in (fast_ms, start_ms, tenth_ms)):
        return ("Notebook 10's step ('graph, decode_step, 1/launch'): no time of it from this run "
                "on this GPU, so the ladder is read from its own rung 1 only.")
    fast_r, start_r, tenth_r = round(fast_ms, 3), round(start_ms, 3), round(tenth_ms, 3)
    where = ("in this run" if point is None else
             f"in notebook 10's run of this preset (batch {point[0]}, {point[1]} new tokens)")
    text = (f"Notebook 10's step ('graph, decode_step, 1/launch') takes {tenth_r:.3f} ms per step "
            f"{where}; the ladder starts at rung 1, {start_r:.3f} ms, "
            f"{_as_said(tenth_r / start_r)} than 10's step, and ends at '{fast}', {fast_r:.3f} ms, "
            f"{_as_said(tenth_r / fast_r)} than 10's step (the two tables' medians: the lessons "
            "time in separate rounds, so no range).")
    start_gpu, tenth_gpu = gpu if gpu is not None else (math.nan, math.nan)
    if not all(math.isfinite(x) and x > 0 for x in (start_gpu, tenth_gpu)):
        return text
    start_g, tenth_g = round(start_gpu, 2), round(tenth_gpu, 2)  # as the figures print them

    def more(diff, digits):
        diff = round(diff, digits)
        return "the same" if diff == 0 else f"{abs(diff):.{digits}f} ms {'more' if diff > 0 else 'less'}"

    return (text + f"\nRung 1 against 10's step, per step: wall clock {start_r:.3f} against "
            f"{tenth_r:.3f} ms ({more(start_r - tenth_r, 3)}), GPU work {start_g:.2f} against "
            f"{tenth_g:.2f} ms ({more(start_g - tenth_g, 2)}). Rung 1 differs in its attention and "
            "its graphs (one per bucket length); "
            "10's step is not profiled here, so which kernels or waits make up these differences "
            "is not measured.")


CLOSE_US = 5  # a drop this close to the prompt's GPU-idle time matches it


def graph_prompt_line(budget_frame, eager, new_tokens, graphed) -> str:
    """What replaying the prompt from a graph took off each step (``graphed``: the rungs before
    and after) against the eager prompt's share of a step (``eager``: ``prefill_cost``, timed
    alone, as ``prompt_line`` prints it): its GPU-idle part (host time a graph replaces; its GPU
    work still runs) and, where the drop is larger still, its whole time. Every number is
    computed from the printed ones, so they subtract exactly (round 28b: "80 µs more" from 0.32
    and 0.24 beside 0.769 -> 0.453 ms and (13.6 - 1.5) / 50, which give 74; and 0.32 ms taken
    off each step, more than the prompt's whole 0.27 ms, went unsaid). A larger drop is not
    explained: the line says the graph replays only what was timed alone (round 25: "took 100 µs
    off each step, of the 0.10 ms" read as fully explained beside 81 µs of idle). Empty without both
    rungs or the prompt's time. A drop within ``CLOSE_US`` of the GPU-idle part matches it
    (round 33: "where the rest comes from, this lesson does not measure" for 2 µs)."""
    rows = budget_frame.set_index("method")
    if not new_tokens > 0 or not math.isfinite(eager[0]) or \
            not all(m in rows.index for m in graphed):
        return ""
    before, after = (round(rows.loc[m, "wall_ms"], 3) for m in graphed)  # the medians, as printed
    if not (math.isfinite(before) and math.isfinite(after)):
        return ""
    saved = round((before - after) * 1e3)  # µs
    if saved <= 0:
        return ""
    text = (f"Replaying the prompt from a graph ({_rung(graphed[0])} to {_rung(graphed[1])}) "
            f"took {_us_as_said(saved)} off each step ({before:.3f} -> {after:.3f} ms, the "
            "table's medians)")
    if not math.isfinite(eager[1]):
        return text + "."
    whole, work = round(eager[0], 1), round(min(eager[1], eager[0]), 1)  # as prompt_line prints
    whole_us, idle_us = (round(x * 1e3 / new_tokens) for x in (whole, max(whole - work, 0.0)))
    idle = f"({_us_as_said(idle_us)}: host time a graph replaces)"
    if saved <= idle_us:
        return text + (f"; the eager prompt's GPU-idle time per step, timed alone, is "
                       f"{_us_as_said(idle_us)} (host time a graph replaces; its GPU work still "
                       "runs).")
    if saved - idle_us <= CLOSE_US:  # round 33: 2 µs left over sent the reader hunting
        return text + (f", {saved - idle_us} µs more than the eager prompt's GPU-idle time per "
                       f"step timed alone {idle}: the drop matches it.")
    if saved > whole_us:  # round 28b: more than the prompt's whole share, said plainly
        text += (f", {saved - whole_us} µs more than the eager prompt's whole time per step timed "
                 f"alone ({_us_as_said(whole_us)}, its GPU work included) and {saved - idle_us} µs "
                 f"more than its GPU-idle part {idle}.")
    else:
        text += (f", {saved - idle_us} µs more than the eager prompt's GPU-idle time per step "
                 f"timed alone {idle}.")
    # round 35: the code replays nothing else (the review guessed at cache setup, the first token)
    return text + (" That graph replays only what was timed alone (the prefill: the prompt's forward, "
                   "the cache copies, the first token); where the rest of the drop comes from, this "
                   "lesson does not measure.")


def _us_as_said(us: int) -> str:
    """A time per step in whole µs, as ``graph_prompt_line`` prints it: ms to three decimals
    from 0.1 ms, like the table's medians, so its numbers subtract exactly; else µs."""
    return f"{us / 1e3:.3f} ms" if us >= 100 else f"{us} µs"


def graph_scope_line(graph_steps, peers) -> str:
    """What notebook 10 times in this preset and what it leaves out, from its parameters: its
    opening promises more steps per launch against one and ``generate()`` static only where the
    preset runs them (round 22 read the workshop copy, ``graph_steps [1]`` and no peers, look
    for both)."""
    steps = sorted(set(graph_steps))
    text = (f"this preset times the step eagerly and at {stats.listed(steps)} step"
            f"{'s' if steps != [1] else ''} per launch (graph_steps {list(graph_steps)})")
    if len(steps) == 1:
        text += ": more steps per launch are not measured here (exercise 1)"
    if peers:
        return text + f", with {stats.listed(peers)} beside it."
    return text + "; generate() static is left out (peers [])."


def proof_line(checked: dict, against: str = "the naive loop") -> str:
    """One line for many proofs (11's review read ten near-identical lines): ``checked`` maps
    a variant's label to its ``check_same_tokens(..., verbose=False)`` results (plain, then with
    forced stops). The variants identical in every check are named together with the reference's
    size; one whose rows differ only at float32 near-ties (``check_same_tokens`` raised on any
    other difference) gets its own line, with its rows and largest float64 gap."""
    same = [name for name, results in checked.items() if all(r["identical"] for r in results)]
    lines = []
    if same:
        rows, tokens = next(iter(checked.values()))[0]["shapes"][0]
        lines.append(f"identical to {against}, with and without forced stops ({rows} rows, "
                     f"{tokens} tokens each, prompt included): {_named(same)}")
    for name, results in checked.items():
        if name not in same:
            ties = [t for r in results for t in r["ties"]]
            equal = min(r["rows_equal"] for r in results)
            lines.append(f"{name}: {equal}/{results[0]['rows']} rows identical to {against}; the "
                         f"others diverge at float32 near-ties (largest float64 gap "
                         f"{max(t['fp64_gap'] for t in ties):.2g})")
    return "\n".join(lines)


def _named(labels) -> str:
    """"rungs 1, 3 and 4" for 11's numbered rung labels, else each label in quotes (10's hold
    commas: “decode_step, eager” and “graph, decode_step, 1/launch”)."""
    numbers = [label.partition(RUNG_MARK)[0] for label in labels]
    if all(RUNG_MARK in label and n.isdigit() for label, n in zip(labels, numbers)):
        return ("rung " if len(numbers) == 1 else "rungs ") + stats.listed(numbers)
    return stats.listed([f"\u201c{label}\u201d" for label in labels])


def rungs_scope_line(inductor_reference: bool, bf16: bool) -> str:
    """What notebook 11 runs in this preset and leaves out, from its parameters; where rung 2
    does not run, that rung 3 follows rung 1 and why (round 28b: "the ladder starts here for it"
    read as unclear). Round 34: where it runs, no line repeats the intro's "rung 2 has Inductor
    fuse them"."""
    ran = ("rungs 1 to 6" if inductor_reference else
           "rungs 1 and 3 to 6 (rung 3 follows rung 1: the preset leaves out rung 2, rung 1's "
           "step compiled by Inductor, inductor_reference False)")
    left = [] if bf16 else ["the bf16 rung (bf16 False)"]
    text = f"this preset runs {ran}" + (" and the bf16 rung" if bf16 else "")
    text += f"; it leaves out {stats.listed(left)}." if left else "."
    return text  # round 34: what rung 2 does is said once, in the intro


def ladder_line(table, rungs, judge: bool, tenth_ms: float = math.nan, **where) -> str:
    """11's closing line, from its own first rung: rung 1's time per step and its floor ratio,
    the last rung's time and floor ratio, and what the ladder gained (``stats.short`` of the
    rounds' ratio, last rung against rung 1) (round 22: the line had
    credited one rung with a drop measured from notebook 10's step, two rungs before); then,
    where ``tenth_ms`` (notebook 10's step, ``this_run_ms``) is known, the last rung against it,
    as ``against_tenth`` divides the two tables' medians (round 37: the line gave only the gain
    from rung 1, a start slower than where notebook 10 ended). Without ``judge`` (a smoke run)
    no timing is read."""
    if not judge:
        return "every float32 rung checked gives the naive loop's tokens (smoke run)."
    rows = table.set_index("method")
    rungs = [r for r in rungs if r in rows.index]

    def at(rung):
        ratio = rows.loc[rung, "floor_ratio"]
        said = f"{rows.loc[rung, 'per_step_ms']:.3f} ms per step"
        return said + (f", {ratio:.2f}x the floor" if math.isfinite(ratio) else "")

    ratio = stats.row_speedup(table, rungs[-1], rungs[0], **where)
    # round 28: no longer each rung's gain again, printed just above it; the whole gain with its
    # range, and the medians' ratio where it differs (a bare 3.73x beside 1.569 and 0.448 ms,
    # whose ratio is 3.50, read as an error)
    medians = rows.loc[rungs[0], "per_step_ms"] / rows.loc[rungs[-1], "per_step_ms"]
    text = (f"\u201c{rungs[0]}\u201d takes {at(rungs[0])}; {_rung(rungs[-1])} takes "
            f"{at(rungs[-1])}; against rung 1: {stats.plain(ratio, medians=medians)}")
    if math.isfinite(tenth_ms) and tenth_ms > 0:
        last = round(rows.loc[rungs[-1], "per_step_ms"], 3)
        text += (f"; against notebook 10's step ({round(tenth_ms, 3):.3f} ms): "
                 f"{_as_said(round(tenth_ms, 3) / last)} (the two tables' medians)")
    return text + "."


def largest_after_line(table, rungs, after: str, host, judge: bool, **where) -> str:
    """11's takeaway on the rungs after ``after`` (the Triton kernels): which one gained most on
    the rung before it (the rounds' ratio, ``stats.short``, as its own line above says it), and
    whether that rung changes only the host's work (``host``: rungs 5 and 6) (round 30: the
    review found the prompt's graph, host work, gained more than any kernel change after rung 3,
    and nothing said so). Where none is faster than the rung before, that, in words. Empty in a
    smoke run or without those rungs."""
    rungs = [r for r in rungs if r in set(table["method"])]
    if not judge or after not in rungs or rungs.index(after) + 1 >= len(rungs):
        return ""
    later = rungs[rungs.index(after):]
    gains = {new: stats.row_speedup(table, new, old, **where) for old, new in zip(later, later[1:])}
    faster = {new: r for new, r in gains.items() if stats.verdict(r) == stats.FASTER}
    first = f"After {_rung(after)} ({after.partition(RUNG_MARK)[2] or after})"
    if not faster:
        return f"{first}, no rung is faster than the one before it in this run."
    best = max(faster, key=lambda m: faster[m].estimate)
    what = best.partition(RUNG_MARK)[2].removeprefix("+ ") or best
    kind = "host work, not a kernel" if best in set(host) else "a change on the GPU side"
    return (f"{first}, the largest gain is {_rung(best)}'s ({what}), {stats.short(faster[best])} "
            f"than the rung before: {kind}.")
