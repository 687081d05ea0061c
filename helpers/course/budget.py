"""The time budget of one decode step: the spine of the course (taught in notebook 00).

Per generated token, three numbers:

- **wall clock**: what the user waits for, the run's median wall time over its tokens;
- **GPU work**: the time the GPU was running kernels or copies (the profiler's busy time over
  the tokens, from one profiled run; kernels that overlap count once). The profiler slows a run
  a little, so where the GPU is busy throughout, its work can come out a hair above the timed
  wall clock: the figure then shows the step as wholly busy;
- **floor**: the bytes a step must read (every weight once, and the keys and values it attends
  to) over the GPU's measured copy bandwidth.

Wall clock minus GPU work is the time the GPU sat idle: waiting for the host (Python, kernel
launches, syncs) in an eager loop, or in the gaps between kernels when a CUDA graph launches
them (the budget cannot tell the two apart; notebook 11's kernel table can). When that idle
share is large the host sets the pace, and making kernels
faster changes nothing a user can feel; when it is small the GPU sets the pace, and only less
GPU work helps. Every lesson shows how its technique moves these numbers in one figure
(``plot``) and reads it in one sentence (``sentence``).
"""
from __future__ import annotations

import math
from functools import lru_cache

import pandas as pd

from . import floor as _floor
from . import harness, plotting

COLUMNS = ["method", "wall_ms", "gpu_ms", "idle_ms", "floor_ms"]


def bandwidth(device) -> float:
    """The copy bandwidth (bytes/s) every ``floor_ms`` divides by, measured once per device
    (NaN without a CUDA GPU)."""
    if not str(device).startswith("cuda"):
        return float("nan")
    return _bandwidth(str(device))


@lru_cache(maxsize=4)
def _bandwidth(device: str) -> float:
    return _floor.copy_bandwidth(device)


def floor_ms(model, device, batch_size, prompt_len, new_tokens, dtype_bytes=4) -> float:
    """The floor of one decode step in ms (NaN without a CUDA GPU): weights plus the average
    keys and values of the filled positions, read once at the measured copy bandwidth."""
    if not str(device).startswith("cuda"):
        return float("nan")
    kv = _floor.kv_bytes_per_step(model.config, batch_size, prompt_len, new_tokens, dtype_bytes)
    return 1e3 * _floor.floor_per_step(model, bandwidth(device), kv)


def per_step(table, methods=None, floor=float("nan"), labels=None, **where) -> pd.DataFrame:
    """One row per method (in the order of ``methods``, default the table's) at the point
    ``where`` selects (e.g. ``seq_len=100``): wall clock, GPU work and GPU idle per generated
    token in ms, and the ``floor`` in ms. ``labels`` renames methods for the figure. Needs the
    table's ``gpu_busy_s`` column (``busy=True`` in the measurement); without it (a CPU run) the
    GPU columns are NaN."""
    rows = table
    for key, value in where.items():
        rows = rows[rows[key] == value]
    if "status" in rows:
        rows = rows[rows["status"] == harness.OK]
    order = list(methods) if methods else list(dict.fromkeys(rows["method"]))
    out = []
    for method in order:
        part = rows[rows["method"] == method]
        if len(part) != 1:
            continue
        row = part.iloc[0]
        tokens = float(row["seq_len"])
        wall = 1e3 * float(row["median_s"]) / tokens
        busy = float(row.get("gpu_busy_s", float("nan")))
        gpu = 1e3 * busy / tokens if busy > 0 else float("nan")
        out.append({"method": (labels or {}).get(method, method), "wall_ms": wall, "gpu_ms": gpu,
                    "idle_ms": wall - gpu if not math.isnan(gpu) else float("nan"),
                    "floor_ms": floor})
    return pd.DataFrame(out, columns=COLUMNS)


def plot(ax, budget: pd.DataFrame, title: str = "One decode step: where the time goes",
         wall: bool = True):
    """Horizontal bars, one method a row (first on top): the wall clock per decode step (light), the
    GPU's work inside it (dark), and the floor as a dashed line. Values written on the bars.
    ``wall=False`` draws the GPU's work and the floor only (methods timed in separate processes,
    whose wall clocks are not comparable: notebook 03)."""
    names = list(budget["method"])[::-1]
    data = budget.set_index("method").loc[names]
    y = range(len(names))
    if wall:
        ax.barh(y, data["wall_ms"], color="#c9d3df", label="wall clock (what you wait for)")
    gpu_drawn = data["gpu_ms"].fillna(0)
    if wall:  # never drawn past the step it is inside of (see the label below)
        gpu_drawn = gpu_drawn.clip(upper=data["wall_ms"])
    ax.barh(y, gpu_drawn, height=0.45, color=plotting.PALETTE[0],
            label="GPU work (kernel time)")
    ends = data["wall_ms"] if wall else data["gpu_ms"]
    top = max(ends.max(), data["gpu_ms"].max() if data["gpu_ms"].notna().any() else 0, 1e-9)
    notes = data["gpu_note"] if "gpu_note" in data else pd.Series(None, index=data.index)
    for i, (end, gpu, note) in enumerate(zip(ends, data["gpu_ms"], notes)):
        # two short lines, not one long one: the label must stay inside a narrow panel. The GPU's
        # work comes from a profiled run, which can come out a little longer than the timed wall
        # clock: the step was then busy throughout, and the label says so instead of a GPU
        # time longer than the step it is inside of. A row's ``gpu_note`` (optional column)
        # replaces that reading where the GPU bar is not pure work (kernels launched early
        # with Programmatic Dependent Launch wait inside the GPU's time: notebook 11).
        busy = "" if math.isnan(gpu) else ("\n(GPU busy throughout)" if wall and gpu >= end
                                            else f"\n(GPU {gpu:.2f})")
        if isinstance(note, str) and note and not math.isnan(gpu):
            busy = f"\n({note})"
        text = f"{end:.2f} ms{busy}" if wall else f"{gpu:.2f} ms"
        at = end if math.isnan(gpu) else max(end, gpu)  # past the longer bar (kernels can overlap)
        ax.text(at + 0.01 * top, i, text, va="center", fontsize=9)
    floor = data["floor_ms"]
    if floor.notna().any():
        value = floor.dropna().iloc[0]
        style = dict(color=plotting.PALETTE[1], linestyle="--", linewidth=1.2,
                     label=f"floor ({value:.3g} ms)")
        if floor.notna().all():
            ax.axvline(value, **style)
        else:  # only across the rows that have a floor (02: the naive loop has none of that kind)
            for i, f in enumerate(floor):
                if not math.isnan(f):
                    ax.vlines(f, i - 0.4, i + 0.4, **style)
                    style.pop("label", None)
    ax.set_yticks(list(y), names)
    # room past the longest bar for its two-line label (about 0.9 inch), whatever the panel's width
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    ax.set_xlim(0, top / (1 - min(0.5, 0.9 / max(width_in, 1e-9))))
    if floor.notna().any() and value < 0.04 * ax.get_xlim()[1]:
        # a floor this close to the axis hides behind it (the round-35 review of 00): named beside
        # the line, in the wall clock's light part above the GPU's bar, on the top row that has one
        row = max(i for i, f in enumerate(floor) if not math.isnan(f))
        ax.text(value + 0.01 * ax.get_xlim()[1], row + 0.31, f"\u25c0 floor {value:.3g} ms",
                color=plotting.PALETTE[1], fontsize=8, va="center")
    ax.set_xlabel("ms per decode step (the median run ÷ its tokens, prefill included)")
    ax.set_title(title, loc="left", pad=34)
    ax.grid(axis="y", visible=False)
    # The legend sits between the title and the bars, in two rows so that it stays within the
    # panel's width (one row ran into the next panel's title in a two-panel figure).
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, fontsize=8, borderaxespad=0.2,
              handlelength=1.2, columnspacing=1.0)
    return ax


def sentence(budget: pd.DataFrame, new: str, old: str, why: str = "", verdict: bool = True) -> str:
    """One plain sentence reading the figure for ``new`` against ``old`` (method labels as in
    the budget), e.g. "Per decode step, the GPU's work fell 8.0x (5.71 -> 0.71 ms), but the GPU still
    waits 5.1 ms for the host, so the wall clock fell only 1.4x (8.12 -> 5.80 ms); the floor is
    0.22 ms." ``why``: what the idle time holds, in place of ``IDLE_WHY`` (e.g.
    ``floor.prompt_why``). ``verdict=False`` leaves out who sets the pace (notebook 01 gives the
    idle share at every length instead). Empty without GPU numbers (a CPU run)."""
    data = budget.set_index("method")
    if new not in data.index or old not in data.index:
        return ""
    a, b = data.loc[old], data.loc[new]
    if any(math.isnan(v) for v in (a["gpu_ms"], b["gpu_ms"])):
        return ""
    gpu_word = _moved(a["gpu_ms"], b["gpu_ms"])
    # The wall clock is given in ms, not as a ratio: the lesson's verdict line states the speedup
    # (from its interleaved rounds), and a second, median-based ratio here would contradict it.
    # the labels quoted where they hold a comma ("eager, check every step"): it would read as
    # the sentence's own
    # and where they hold a rung's number ("2 · bucketed step (Inductor)", lesson 11)
    q = lambda label: f"“{label}”" if "," in label or "·" in label else label
    text = (f"Per decode step, from {q(old)} to {q(new)}: the GPU's work {gpu_word} "
            f"({a['gpu_ms']:.2f} -> {b['gpu_ms']:.2f} ms) and the wall clock went from "
            f"{a['wall_ms']:.2f} to {b['wall_ms']:.2f} ms. ")
    if b["gpu_ms"] >= b["wall_ms"]:
        # busy time is a union of intervals, so only a profiled run slower than the timed ones
        # gets here: kernels were running for the whole step. Busy is not all work: with
        # Programmatic Dependent Launch (lesson 11) a kernel starts early and waits for its
        # predecessor, and that wait counts as busy.
        text += ("Kernels were running for the whole step (the GPU's busy time, which counts "
                 "kernels started early and waiting for the previous one)"
                 + (": the GPU sets the pace." if verdict else "."))
    else:
        # from the printed values where the idle time is printed in ms, as below (0.21 of 1.37
        # reads 15%, not 16%); a smaller idle time is printed unrounded, in µs
        share = printed_share(b)
        # in ms, the difference of the two rounded values printed beside it (a reader checks
        # 15.41 - 13.77 = 1.64, not the unrounded 1.65)
        # the old method's idle beside the new one's: what the change did to the wait is the
        # budget's point (the sixteenth review of 06 asked for 'without the check, with it')
        text += (f"The GPU's idle time went from {ms_or_us(a['idle_ms'], printed_idle(a))} to "
                 f"{ms_or_us(b['idle_ms'], printed_idle(b))} per step ({share:.0f}% of "
                 f"{b['wall_ms']:.2f} ms: {why or IDLE_WHY})"
                 + (f": {pace(share)}." if verdict else "."))
    if not math.isnan(b["floor_ms"]):
        # to three digits, as the figure labels it (0.184, not 0.18: 1.23 / 0.18 printed 6.83x
        # beside the table's 6.7); the step's unrounded time over it, as the tables divide
        # (round 24: 1.34 / 0.220 printed 6.09x beside the table's 6.10)
        floor = float(f"{b['floor_ms']:.3g}") or b["floor_ms"]
        text += (f" The floor is {floor:.3g} ms: this step takes "
                 f"{b['wall_ms'] / floor:.3g}x that.")
    return text


def ms_or_us(ms: float, printed: float | None = None) -> str:
    """A time per step as the budget's sentences write it: ms to two decimals from 0.1 ms
    (``printed`` where given: the difference of two printed values, which a reader checks), else
    µs (0.01 ms would print as 0.00)."""
    if ms >= 0.1:
        return f"{ms if printed is None else printed:.2f} ms"
    return f"{max(ms, 0.0) * 1e3:.0f} µs"


def printed_idle(row) -> float:
    """The GPU's idle time per step as the figure's labels give it: the wall clock minus the
    GPU's work, each rounded to 0.01 ms first, so the printed numbers subtract exactly."""
    return max(round(row["wall_ms"], 2) - round(row["gpu_ms"], 2), 0.0)


def printed_share(row) -> float:
    """The GPU's idle share of a step (%) as ``sentence`` prints it: from the printed idle time
    and wall clock (``printed_idle``, 0.21 of 1.37 reads 15%, not 16%) where the idle time is
    printed in ms (0.1 ms or more), else unrounded (it is printed in µs); a negative idle time
    counts as none. NaN without a wall clock."""
    if row["idle_ms"] >= 0.1:
        return 100 * printed_idle(row) / round(row["wall_ms"], 2)
    return 100 * max(row["idle_ms"], 0.0) / row["wall_ms"] if row["wall_ms"] > 0 else float("nan")


IDLE_WHY = ("waiting while the host issues the decode steps and the prompt's forward, or in "
            "gaps between kernels")
HOST_PACE_PCT = harness.HOST_IDLE_PCT  # the GPU idle at least this share: the host sets the pace
GPU_PACE_PCT = 100 - harness.BOUND_BUSY_PCT  # idle at most this (busy 80%): the GPU does, as
                                             # the tables' 'GPU-bound' label says


def pace(idle_pct: float, why: bool = True) -> str:
    """Who sets the pace of a step whose GPU idles ``idle_pct`` % of it:
    the host where the GPU waits most of the step (00's definition), the GPU where it waits
    little, and both in between (then faster kernels and less host work both pay; said unless
    ``why`` is False)."""
    label = harness.pace_label(idle_pct)  # the tables' 'bound' label, by the same rule
    if label == "CPU-bound":
        return "the host sets the pace"
    if label == "GPU-bound":
        return "the GPU sets the pace"
    # no "(the GPU works N% of the step)": every caller prints the idle share beside it (the
    # sixteenth review read "28% of 0.72 ms ... the GPU works 72%" as the same thing twice)
    return "host and GPU share the pace" + (
        ", so both less host work and faster kernels pay" if why else "")


SAME_WORK = 0.05  # two GPU works within 5% of each other read "about the same"


def about_same(before: float, after: float) -> bool:
    """Whether two positive amounts of GPU work read "about the same" (within ``SAME_WORK``):
    the one rule every budget reading uses (False where either is not positive)."""
    return before > 0 and after > 0 and 1 - SAME_WORK <= before / after <= 1 + SAME_WORK


def _moved(before: float, after: float) -> str:
    if after <= 0 or before <= 0:
        return "is unknown"
    # from the values printed beside it (5.71 -> 0.71 reads 8.0x), where both print as nonzero
    shown = round(before, 2), round(after, 2)
    ratio = shown[0] / shown[1] if min(shown) > 0 else before / after
    if about_same(before, after):
        return "stayed about the same"
    return f"fell {ratio:.1f}x" if ratio > 1 else f"rose {1 / ratio:.1f}x"
