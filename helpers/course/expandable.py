"""Notebook 03's plumbing and analysis, kept out of the lesson: one fresh process per allocator
setting (``run_settings``), the children's rows as one table, the memory each setting held, how
often the allocator went to the driver, the GPU's work per step, and the memory history plot.
"""
from __future__ import annotations

import math

import pandas as pd

from .. import allocator
from ..model import model_config  # noqa: F401  (the notebook's shapes for stairs_line)
from . import budget, plotting

MIB = 2**20
ADDED = "added by the run MiB"  # memory(table, history): peak reserved less the run's start
SPEC_KEYS = ("model", "device", "batch_size", "seq_lens", "prompt_len", "repeats", "warmup", "seed")


def run_settings(P, history_len: int) -> dict:
    """Each setting of ``P.allocator_confs`` in its own fresh Python process, since the allocator
    reads its setting once, when CUDA starts (``allocator.run_one_after_another``: the child's
    first line is ``use_allocator``; on a GPU the parent then checks that the child's segments
    are expandable exactly when asked). Each child runs the KV-cache loop ``P.repeats`` times at
    every length for its memory peaks (``harness.bench_row`` empties the allocator's cache and
    resets its peaks before each run; the times are kept, not compared across processes),
    profiles one run for the GPU's work, and with ``history_len`` records the memory history of
    one run of that length with ``kv_cache_memory``. Raises if the settings changed the tokens."""
    spec = {key: P[key] for key in SPEC_KEYS}
    spec.update(history_len=history_len, busy=True)
    runs = allocator.run_one_after_another(P.allocator_confs, spec, echo=False)
    same_tokens_line(runs)  # raises if the settings changed the tokens
    return runs


def same_tokens_line(runs: dict) -> str:
    """Compare the token checksums every setting's child reported at each length: one line where
    they agree, an AssertionError naming them where they do not (or where one is missing)."""
    found = rows(runs)
    sums = {(r["seq_len"], r.get("tokens_checksum")) for r in found}
    lengths = {r["seq_len"] for r in found}
    if len(sums) != len(lengths) or any(c is None for _, c in sums):
        raise AssertionError(f"the allocator setting changed the tokens: {sorted(sums, key=str)}")
    return (f"Same tokens under every setting: the {len(runs)} processes' token checksums agree at "
            f"{', '.join(str(n) for n in sorted(lengths))} tokens.")


def rows(runs: dict) -> list:
    """Every child's rows (one per length), in the order of the settings."""
    return [row for result in runs.values() for row in result["rows"]]


def settings_line(runs: dict) -> str:
    """One line: whether each child's segments were expandable, read from its memory snapshot
    (a CPU has no caching allocator to read)."""
    seen = {True: "yes", False: "no", None: "not read (no GPU)"}
    parts = [f"{conf}: {seen[result['effective']['expandable_in_effect']]}"
             for conf, result in runs.items()]
    return "Expandable segments in effect, read back from each process: " + "; ".join(parts) + "."


def memory(table, history=None) -> pd.DataFrame:
    """Per length and setting: peak reserved memory (MiB, what the allocator held from the
    GPU: the lesson's subject), the peak allocated inside it, and the gap between the two peaks
    as a share of peak reserved (the two peaks need not fall at the same moment). With the
    recorded ``history`` (``timeline`` rows), also what the run added to the reserve it started
    from (``start_reserved``), the weights' segments left out (the twenty-eighth review: at 100
    tokens 17.6% against 6.6% unused read as a saving on the cache, where the settings were
    already 156 MiB apart before the prefill)."""
    ok = table[table["status"] == "ok"]
    out = pd.DataFrame({"tokens": ok["seq_len"], "setting": ok["method"],
                        "peak reserved MiB": ok["peak_reserved_bytes"] / MIB,
                        "peak allocated MiB": ok["peak_allocated_bytes"] / MIB,
                        "unused %": ok["fragmentation_pct"]})
    start = start_reserved(history) if history is not None else {}
    if start and set(out["setting"]) <= set(start):
        out[ADDED] = out["peak reserved MiB"] - out["setting"].map(start)
    return out.set_index(["tokens", "setting"]).sort_index().round(1)


def start_reserved(history) -> dict:
    """Each setting's reserve (MiB) at step 0 of the recorded run, just before the prefill and
    after emptying the cache: the weights' segments, where every run starts."""
    frame = pd.DataFrame(history)
    if frame.empty:
        return {}
    first = frame.sort_values("step").groupby("setting", sort=False).first()
    return {conf: float(r) / MIB for conf, r in first["reserved"].items()}


def unused_line(mem, old: str, new: str) -> str:
    """Peak reserved less peak allocated, over peak reserved, under both settings (``mem``:
    ``memory(table)`` at one length), compared in words; named as what it is, since the two
    peaks need not fall at the same moment."""
    before, after = (float(mem.loc[c, "unused %"]) for c in (old, new))
    word = ("far less than" if after <= before / 2 else "less than" if after < before
            else "no less than")
    return (f"Unused % (1 − peak allocated ÷ peak reserved; two peaks, not always of the same "
            f"moment): {after:.1f}% with {new}, {word} {old}'s {before:.1f}%.")


def unused_timeline_line(history, conf: str) -> str:
    """Figure 2's right panel read for one setting (the twenty-sixth review: expandable's gap rose
    to 523 MiB mid-run and shrank again, never read): the step of its largest gap, then its
    reserve and gap to the run's end. Round 34: no longer set against the peaks' unused %, whose
    line just before says it divides two peaks."""
    part = history[history["setting"] == conf].sort_values("step").reset_index(drop=True)
    gap = part["reserved"] - part["allocated"]
    top, last = part.loc[gap.idxmax()], part.iloc[-1]
    share = lambda row: 100 * (row["reserved"] - row["allocated"]) / row["reserved"]  # noqa: E731
    said = (f"Step by step (figure 2, right), {conf}'s unused memory was largest at the start of "
            f"decode step {int(top['step'])}: {(top['reserved'] - top['allocated']) / MIB:.0f} MiB of the "
            f"{top['reserved'] / MIB:.0f} MiB reserved ({share(top):.0f}%)")
    if int(top["step"]) == int(last["step"]):
        said += ", at the run's last step"
    else:
        final = part.loc[part["reserved"] == last["reserved"], "step"].min()
        grew = (last["allocated"] - part.loc[part["step"] == final, "allocated"].iloc[0]) / MIB
        if final < last["step"]:
            said += (f"; from decode step {int(final)} on its reserve stayed at "
                     f"{last['reserved'] / MIB:.0f} MiB while allocated grew {grew:.0f} MiB "
                     "inside it")
        said += (f", and at the start of the last step ({int(last['step'])}) "
                 f"{(last['reserved'] - last['allocated']) / MIB:.0f} MiB was unused "
                 f"({share(last):.0f}%)")
    return said + "."


# PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): requests up to 1 MiB
# share 2 MiB segments, up to 10 MiB share kLargeBuffer (20 MiB) segments, larger ones get a
# segment of their own, rounded up to kRoundLarge (the sizes docs/diagrams.py draws).
LARGE_BUFFER, ROUND_LARGE = 20 * MIB, 2 * MIB


def stairs(history, config, batch_size: int, prompt_len: int, conf: str = "default",
           dtype_bytes: int = 4) -> pd.DataFrame:
    """The measured stairs of one setting's memory history: the decode steps in which reserved
    memory rose by more than half the cache tensors together once each had outgrown the 20 MiB
    segments (the big stairs: most of them get a new segment at once; a few may land in blocks
    freed earlier, as the prompt's logits, so 94d1a85's full run rose by 440 MiB in its first
    stair against 24 tensors of 20.1 MiB; the small and medium stairs under 20 MiB are not
    counted), with
    the rise and the size one tensor had reached then. A reading is taken before a step's forward
    pass, so a rise seen at step s happened in step s - 1, whose cache held prompt_len + s - 1
    positions (batch x positions x n_embd floats per tensor)."""
    part = history[history["setting"] == conf].sort_values("step")
    rise = part["reserved"].diff()
    per = batch_size * config.n_embd * dtype_bytes  # one position of one tensor
    done = part["step"] - 1  # the step whose allocations the reading shows
    size = per * (prompt_len + done)
    found = pd.DataFrame({"step": done, "rise": rise, "size": size})
    found = found[(done >= 1) & (size > LARGE_BUFFER) & (rise > config.n_layer * size)]
    return found.reset_index(drop=True)


def stairs_line(history, config, batch_size: int, prompt_len: int, conf: str = "default",
                dtype_bytes: int = 4) -> str:
    """Figure 2's stairs, read from the measured history (``stairs``): a line saying how many,
    then one each for when the first came, how far apart and how high they were (the
    twenty-first review read one 110-word sentence three times; why they come is the lesson's
    prose, said once); where there were none, the largest rise of reserved memory."""
    tensors = 2 * config.n_layer
    found = stairs(history, config, batch_size, prompt_len, conf, dtype_bytes)
    if found.empty:  # said plainly (the twenty-second review: the workshop run's 3 MiB tensors
        # made no stair, and "never rose by all 24 cache tensors' size" had to be worked out)
        part = history[history["setting"] == conf].sort_values("step")
        rise = part["reserved"].diff()[part["step"] >= 2]  # rises in the decode steps
        if not (rise > 0).any():
            return f"With {conf}, no stair in this run: reserved memory never rose in a decode step."
        size = batch_size * config.n_embd * dtype_bytes * (prompt_len + int(part["step"].max()))
        at = int(part.loc[rise.idxmax(), "step"]) - 1
        why = (", under the 20 MiB where the big stairs start", "")
        if size > LARGE_BUFFER:  # past 20 MiB, yet no rise as large as a big stair's
            why = ("", f", less than half the {tensors} cache tensors together")
        return (f"With {conf}, no big stair in this run: each layer's keys (and values) reached "
                f"{size / MIB:.1f} MiB at most{why[0]}; its reserve rose at most "
                f"{rise.max() / MIB:.0f} MiB in a decode step (decode step {at}){why[1]}.")
    first = found.iloc[0]
    past = ", just past 20 MiB" if LARGE_BUFFER < first["size"] <= LARGE_BUFFER + ROUND_LARGE else ""
    # round 35: each jump's share of the cache's size then, computed ("more than half" hid 90-97% in 2f157b6)
    share = [f"{100 * s:.0f}%" for s in (found["rise"] / (tensors * found["size"])).agg(["min", "max"])]
    share = share[0] if share[0] == share[1] else f"{share[0]} to {share[1]}"
    if len(found) == 1:
        return (f"With {conf}, reserved memory jumped once by {found['rise'].iloc[0] / MIB:.0f} MiB, "
                f"{share} of the cache's size then, in decode step {int(first['step'])}, as each "
                f"layer's keys (and values) reached {first['size'] / MIB:.1f} MiB{past}.")
    gaps = found["step"].diff().dropna().astype(int)
    apart = f"{gaps.min()}" if gaps.min() == gaps.max() else f"{gaps.min()} to {gaps.max()}"
    low, high = (f"{found['rise'].agg(f) / MIB:.0f}" for f in ("min", "max"))
    per = batch_size * config.n_embd * dtype_bytes  # one position of one tensor
    # the mechanism in two lines (the twenty-fourth review: "at 10 decode steps" read as "10 steps
    # into the run"; the twenty-fifth: "in 10 decode steps" read as "within 10 steps", so the
    # steps are dated where they are counted)
    return (f"With {conf}, reserved memory jumped by {low if low == high else f'{low} to {high}'} "
            f"MiB, each {share} of the cache's size then, at {len(found)} separate decode steps, "
            f"one every {apart} steps from decode step {int(first['step'])}:\n"
            f"  the first when each layer's keys (and values) reached {first['size'] / MIB:.1f} "
            f"MiB{past}; a tensor grows 2 MiB in {ROUND_LARGE / per:.1f} steps "
            f"({per / 1024:.0f} KiB a step).")


# Actions of a memory history that go to the CUDA driver: a new segment (cudaMalloc), pages
# mapped onto an expandable segment, and their releases.
DRIVER_ACTIONS = ("segment_alloc", "segment_map", "segment_free", "segment_unmap")


def driver_calls(runs: dict, steps: int) -> pd.DataFrame:
    """Per setting, the allocator's trips to the driver during the recorded run of ``steps``
    decode steps (from its memory history), against the allocations it served from its
    cache. Driver actions that no setting made are left out."""
    rows = []
    for conf, result in runs.items():
        timeline = result.get("timeline")
        if not timeline:
            continue
        actions = timeline["actions"]
        driver = sum(actions.get(a, 0) for a in DRIVER_ACTIONS)
        rows.append({"setting": conf, "tensor allocations": actions.get("alloc", 0),
                     **{a: actions.get(a, 0) for a in DRIVER_ACTIONS},
                     "driver calls per decode step": round(driver / steps, 2)})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).set_index("setting")
    unused = [a for a in DRIVER_ACTIONS if not table[a].any()]
    return table.drop(columns=unused)


def driver_line(runs: dict, steps: int) -> str:
    """``driver_calls`` in one sentence: each setting's trips to the driver in the recorded run,
    prefill included. No rate per decode step: the twenty-second review found the workshop run's
    "0.32 per decode step" against a reserve that rose in one decode step only; no count of the
    steps in which the reserve rose (the twenty-fourth review: 41 with default against 52 with
    expandable_segments:True, beside 324 trips against 61, puzzled more than it told)."""
    calls = driver_calls(runs, steps)
    if calls.empty:
        return "No memory history recorded: no driver calls to count."
    words = {"segment_alloc": "for a new segment", "segment_map": "to map pages onto its segment",
             "segment_free": "to free a segment", "segment_unmap": "to unmap pages"}
    parts = []
    for conf, row in calls.iterrows():
        done = [f"{int(row[a])} times {words[a]}" for a in DRIVER_ACTIONS
                if a in calls.columns and row[a]]
        parts.append(f"{conf} {', '.join(done) or 'never'}")
    return ("Trips to the CUDA driver in that run, prefill included, for the same tensor "
            "allocations: " + "; ".join(parts) + ".")


def timeline(runs: dict) -> list:
    """The memory history of every setting as rows: allocated and reserved bytes at the start
    of each forward pass (step 0 is the prefill), and the peaks inside the step."""
    rows = []
    for conf, result in runs.items():
        recorded = result.get("timeline")
        if not recorded:
            continue
        peaks = {p["step"]: p for p in recorded["peaks"]}
        for s in recorded["steps"]:
            peak = peaks.get(s["step"], {})
            rows.append({"setting": conf, "step": s["step"], "allocated": s["allocated"],
                         "reserved": s["reserved"], "allocated_peak": peak.get("allocated_peak"),
                         "reserved_peak": peak.get("reserved_peak")})
    return rows


def plot_memory(ax, table, on_gpu: bool, history=None):
    """Peak reserved (wide, light bar) and peak allocated (narrow, dark bar inside it) memory per
    length, one colour a setting, side by side: bars, not lines, since two lengths say nothing
    about the shape in between (the memory history shows it step by step)."""
    if not on_gpu:
        ax.text(0.5, 0.5, "no GPU memory on a CPU run", ha="center", transform=ax.transAxes)
        ax.set(title="Peak reserved memory", xticks=[], yticks=[])
        return ax
    ok = table[table["status"] == "ok"]
    lengths = sorted(ok["seq_len"].unique())
    methods = list(dict.fromkeys(ok["method"]))
    width = 0.8 / len(methods)
    start = start_reserved(history) if history is not None else {}
    for i, method in enumerate(methods):
        part = ok[ok["method"] == method].set_index("seq_len").reindex(lengths)
        x = [j - 0.4 + width * (i + 0.5) for j in range(len(lengths))]
        color = plotting.PALETTE[i]
        reserved = ax.bar(x, part["peak_reserved_bytes"] / MIB, width * 0.9, color=color,
                          alpha=0.3, label=f"{method}: peak reserved")
        allocated = ax.bar(x, part["peak_allocated_bytes"] / MIB, width * 0.45, color=color,
                           label=f"{method}: peak allocated")
        plotting.label_bars(ax, reserved, fmt="{:.0f}")
        for bar in allocated:  # its value off the black line (round 32): in the taller part
            top, line = bar.get_height(), start.get(method, 0.0)
            if not math.isnan(top):
                y = min(line, top) / 2 if 0 < line and line >= top - line else (line + top) / 2
                ax.text(bar.get_x() + bar.get_width() / 2, y, f"{top:.0f}", ha="center",
                        va="center", color="white", fontsize=8)
        if method in start:  # where the run started: the weights' segments, before any cache
            ax.hlines([start[method]] * len(x), [v - width * 0.45 for v in x],
                      [v + width * 0.45 for v in x], colors="black", linewidths=1.5,
                      label="reserved before the prefill" if i == 0 else None)
    ax.set_xticks(range(len(lengths)), [f"{n} tokens" for n in lengths])
    ax.set(ylabel="MiB", title="Peak reserved memory per run (peak allocated inside)")
    ax.grid(axis="x", visible=False)
    # the legend under the axes, off every bar (the twenty-second review: on the default's bar
    # its "728" read as part of a legend entry), and the y axis only as tall as the bars' labels
    # need (the twenty-fourth review: room kept for the legend left a wide empty band)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.08)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    return ax


def speed_line(steps: pd.DataFrame, old: str, new: str) -> str:
    """The small panel in words: the GPU's kernel time per decode step under both settings
    (``budget.per_step``, one profiled run each), which an allocator setting does not change;
    "about the same" within 5% (the token checksums, not this panel, check that both did the
    same work). The setting's own cost is host time, which the processes' wall clocks (one run
    each, on a host whose speed varies) cannot compare. Empty without GPU work (a CPU run)."""
    gpu = steps.set_index("method")["gpu_ms"]
    if not {old, new} <= set(gpu.index) or gpu[[old, new]].isna().any() or gpu[old] <= 0:
        return ""
    said = f"{gpu[new]:.2f} ms with {new} against {gpu[old]:.2f} ms with {old}"
    said = (f"about the same, {said}" if budget.about_same(gpu[new], gpu[old])
            else f"{said}, one profiled run each: a difference an allocator setting does not make "
            "in the kernels")
    # round 35: whether the setting changes generation time, said plainly: this lesson does not
    # answer it, and no later one does (none sets the allocator)
    return (f"The small panel's GPU kernel time per decode step was {said}: an allocator setting "
            "changes no kernel. This lesson does not answer whether it changes generation time: "
            "the trips to the driver cost host time, and one run in each process, on a host whose "
            "speed varies, is too little to compare it; no later lesson times the two settings.")


def retries_line(table) -> str:
    """Whether any timed run ran short of GPU memory: the allocator's retries (``alloc_retries``:
    it freed its cached segments and asked the driver again), per setting and length. The saving
    matters only where memory runs short (the twenty-first review: "a smaller card runs the same
    loop" was said, not measured). Empty where the table has no such column."""
    ok = table[table["status"] == "ok"]
    if "alloc_retries" not in ok:
        return ""
    hit = ok[ok["alloc_retries"].fillna(0) > 0]
    if hit.empty:
        which = "either setting" if ok["method"].nunique() == 2 else "any setting"
        return (f"No run under {which} ran short of GPU memory: the allocator never had to "
                "free its cached segments and try again.")  # "timed": 03 times nothing (round 22)
    parts = [f"{r['method']} {int(r['alloc_retries'])} times at {int(r['seq_len'])} tokens"
             for _, r in hit.iterrows()]
    return ("GPU memory ran short, and the allocator freed its cached segments and tried again: "
            + "; ".join(parts) + ".")


def _change(before: float, after: float) -> str:
    """"7812 MiB less, 81% less" (the twenty-fifth review read "19% of default's" right after
    "less" as the saving): the change as a share of the first setting's reserve."""
    if round(after) == round(before):
        return "the same"
    word = "less" if after < before else "more"
    return f"{abs(before - after):.0f} MiB {word}, {100 * abs(before - after) / before:.0f}% {word}"


def cache_line(table, history, old: str, new: str, skip: int | None = None) -> str:
    """What each setting held before the prefill (step 0 of the recorded run, just after
    ``empty_cache``: the same bytes allocated, so the difference is free space inside segments
    that hold tensors), then at every length what the run added to that, the table's peak
    reserve less step 0's reserve (the twenty-seventh review: "128 MiB less" at 100 tokens read
    as a saving, where the two settings were already 156 MiB apart before any cache existed).
    Every run starts after ``empty_cache`` from the same weights, so step 0 is each length's
    start. ``skip``: a length the answer (``buys_line``) already gave. Empty without both
    settings' histories."""
    first = {}
    for conf in (old, new):
        part = history[history["setting"] == conf].sort_values("step")
        if part.empty:
            return ""
        first[conf] = part.iloc[0]
    r_old, r_new = (float(first[c]["reserved"]) / MIB for c in (old, new))
    held = [f"{float(first[c]['allocated']) / MIB:.0f}" for c in (old, new)]
    held = (f"the same {held[0]} MiB allocated" if held[0] == held[1] else
            f"{held[0]} and {held[1]} MiB allocated")
    head = (f"Before the prefill (step 0, just after emptying the cache) {old} held {r_old:.0f} "
            f"MiB reserved and {new} {r_new:.0f} MiB, for {held}: free space inside segments "
            "that hold the weights, which emptying the cache cannot release")
    mem = memory(table)
    parts = []
    for n in mem.index.get_level_values(0).unique():
        if skip is not None and int(n) == int(skip):
            continue
        a, b = (float(mem.loc[(n, c), "peak reserved MiB"]) - r for c, r in ((old, r_old),
                                                                            (new, r_new)))
        diff = "the same" if round(a) == round(b) else (
            f"{abs(a - b):.0f} MiB {'less' if b < a else 'more'}")  # no % of a small base
        said = f"at {int(n)} tokens {old} {a:.0f} MiB, {new} {b:.0f} MiB ({diff})"
        if round(b) >= round(a):
            said += ": no saving on the cache itself at this length"
        parts.append(said)
    if not parts:
        return f"{head}."
    return f"{head}. What the run added to that at its peak: " + "; ".join(parts) + "."


def answer_line(mem, old: str, new: str, point: int) -> str:
    """The summary's "In one line", in the answer's measure (``buys_line``): what the run added to
    the reserve it started from under each setting (``mem``: ``memory(table, history)`` at
    ``point``), as a share where the setting saved, plainly where it did not (the 48-token
    workshop tables: 164 MiB against 48)."""
    before, after = (float(mem.loc[c, ADDED]) for c in (old, new))
    said = (f"In one line: at {point} tokens the same loop added {after:.0f} MiB to the "
            f"allocator's reserve with {new}")
    if round(after) < round(before):
        return f"{said}, {100 * after / before:.0f}% of the {before:.0f} MiB it added with {old}."
    return f"{said}, against {before:.0f} MiB with {old}: no saving on this loop's cache."


def buys_line(mem, runs: dict, steps: int, old: str, new: str, point: int) -> str:
    """What the setting buys on this loop, in one sentence: peak reserved memory under both
    settings for the same peak allocated (``mem``: ``memory(table)`` at ``point`` tokens), and
    the trips to the driver in the recorded run (``driver_calls``), where recorded. The GPU's
    work is left to ``speed_line``, printed next, which measures it. (Round 32 dropped the
    share of the saving that default's largest jump made: the reader could not see its use.)"""
    held = [f"{float(mem.loc[c, 'peak allocated MiB']):.0f}" for c in (new, old)]
    held = (f"the same {held[0]} MiB peak allocated" if held[0] == held[1] else
            f"a peak allocated of {held[0]} MiB against {held[1]} MiB")  # 634 and 635 (round 22)
    if ADDED in mem:  # the measure the lesson names (round 29: the text said "the one to compare"
        # of `added by the run`, the answer compared peak reserved)
        before, after = (float(mem.loc[c, ADDED]) for c in (old, new))
        # the saving in MiB only: its share is the summary's one line (round 37: "86% less" here
        # and "14% of" there, the one result printed twice)
        change = (f"{before - after:.0f} MiB less" if round(after) < round(before) else
                  "no saving on the cache itself" if round(after) > round(before) else "the same")
        said = (f"What {new} bought on this loop at {point} tokens, in memory the run added to the "
                f"reserve it started from (the table's `added by the run`): {after:.0f} MiB against "
                f"{before:.0f} MiB ({change}), for {held}")
    else:
        before, after = (float(mem.loc[c, "peak reserved MiB"]) for c in (old, new))
        said = (f"What {new} bought on this loop at {point} tokens: a peak reserve of {after:.0f} "
                f"MiB against {before:.0f} MiB ({_change(before, after)}) for {held}")
    calls = driver_calls(runs, steps)
    if not calls.empty and {old, new} <= set(calls.index):
        trips = {c: int(sum(calls.loc[c, a] for a in DRIVER_ACTIONS if a in calls.columns))
                 for c in (old, new)}
        said += (f", and {trips[new]} trips to the CUDA driver against {trips[old]} in the "
                 "recorded run")
    # the GPU's work is the next line's (speed_line, measured): said here too, it read twice in a
    # row (the preflight of round 18)
    return said + "."


def plot_gpu_work(ax, steps: pd.DataFrame, title: str):
    """A small panel: the GPU's work per decode step under each setting (bars, first on top),
    from ``budget.per_step``, with short names, no floor and no wall clock (an allocator setting
    is not meant to change the kernels, and wall clocks are not compared across processes).
    Drawn here, not by ``budget.plot``, whose title sits high over a legend this panel does not
    need (the twenty-first review: the title floated above the wide panel's, the values touched
    the bars and a grid line crossed them)."""
    if steps["gpu_ms"].isna().all():
        ax.text(0.5, 0.5, "no GPU work\non a CPU run", ha="center", transform=ax.transAxes)
        ax.set(title=title, xticks=[], yticks=[])
        return ax
    # one colour a setting, as the memory panel draws it, the first setting on top (the
    # twenty-second review: both bars blue beside a red expandable_segments:True)
    colors = {m: plotting.PALETTE[i] for i, m in enumerate(steps["method"])}
    rows = steps.dropna(subset=["gpu_ms"]).iloc[::-1]
    names = rows["method"]  # whole (the twenty-fourth review read "expandable_ / segments:True")
    bars = ax.barh(range(len(rows)), rows["gpu_ms"], height=0.5,
                   color=[colors[m] for m in rows["method"]])
    ax.bar_label(bars, labels=[f"{v:.2f} ms" for v in rows["gpu_ms"]], padding=4, fontsize=9)
    ax.set_yticks(range(len(rows)), names)  # the wide panel's size (round 32: 8 read small)
    ax.set_xlim(0, 1.7 * rows["gpu_ms"].max())  # room for the labels
    ax.set_axisbelow(True)
    ax.grid(axis="y", visible=False)
    ax.set(title=title, xlabel="ms per decode step\n(one profiled run each)")
    return ax


def plot_timeline(ax_abs, ax_gap, frame):
    """Reserved (solid) and allocated (dashed) memory over the steps of one run (left) and
    their gap, memory reserved but unused (right), one colour a setting; each panel has its
    legend. Where the settings' allocated memory lies within 2% of its largest value at every
    step, its dashed lines are grey with one legend entry that says they overlap."""
    allocated = frame.pivot_table(index="step", columns="setting", values="allocated")
    spread = (allocated.max(axis=1) - allocated.min(axis=1)).max()
    overlap = (allocated.shape[1] > 1 and not allocated.isna().any().any()
               and spread <= 0.02 * allocated.max().max())  # dashed lines drawn on top of each other
    for i, (conf, part) in enumerate(frame.groupby("setting", sort=False)):
        color = plotting.PALETTE[i]
        ax_abs.plot(part["step"], part["reserved"] / MIB, color=color, label=f"{conf}: reserved")
        label = (f"{conf}: allocated" if not overlap else "_nolegend_" if i else
                 f"allocated, every setting (within {spread / MIB:.0f} MiB: the lines overlap)")
        ax_abs.plot(part["step"], part["allocated"] / MIB, color="0.3" if overlap else color,
                    ls="--", label=label)
        ax_gap.plot(part["step"], (part["reserved"] - part["allocated"]) / MIB, color=color,
                    label=conf)
    ax_abs.set(xlabel="decode step", ylabel="MiB",
               title="Reserved (solid) and allocated (dashed)")
    ax_gap.set(xlabel="decode step", ylabel="MiB",
               title="Reserved but unused\n(reserved − allocated at step start)")
    for ax in (ax_abs, ax_gap):  # "upper left" crossed the workshop run's lines (round 22)
        ax.legend(fontsize=8, loc="best")
