"""Notebook 08's ladder: every lesson's method, in lesson order, measured side by side in one
call, and read against the naive loop, ``generate()`` and the floor.

- ``RUNGS``: lesson -> plain name -> the ``helpers.bench.LADDER`` method it runs (GPU, CPU);
  ``ladder_methods`` builds them for one run (``bench.Method``), ``lessons`` shows them.
- ``check_peers``: ``generate()`` gives the naive loop's tokens.
- ``measure``: first call of each method timed apart (compilation, capture), then all of them
  in turns with ``harness.compare_row`` (with the GPU's busy time, for ``budget``).
- ``view``, ``reading``, ``one_line``: the table in lesson order and the answer in words.
"""
from __future__ import annotations

import functools
import math
import time

import pandas as pd
import torch

from .. import bench
from ..checks import check_same_tokens
from ..generation import generate_naive
from ..model import exact_matmul
from . import floor, harness, stats
from .budget import pace, printed_share
from .budget import sentence as _sentence
from .budget import printed_idle as _idle  # the idle time as the figure's labels give it
from .claims import (CACHE_DYNAMIC, CACHE_STATIC, CANT_TELL, KV, KV_COMPILED, LATE, NAIVE, STATIC,
                     STATIC_COMPILED, TABLES, say)

PEERS = ("generate()", "generate() static")
FUSED = "CUDA graph, fused kernels"
WHOLE = "CUDA graph, whole step"  # lesson 10's rung


def fastest_rung() -> str:
    """Lesson 11's best rung where ``helpers.bench`` names one (the last LADDER entry of
    notebook "11"), else bench's fused step in a CUDA graph (its fastest float32 rung)."""
    eleven = [name for name, entry in bench.LADDER.items() if entry[0] == "11"]
    return eleven[-1] if eleven else bench.FUSED_GRAPH


# (lesson, plain name, bench method on a GPU, bench method on a CPU or None: left out there)
RUNGS = [
    ("01", NAIVE, "naive", "naive"),
    ("02", KV, "kv cache", "kv cache"),
    ("04", STATIC, "static cache", "static cache"),
    ("05", KV_COMPILED, "kv cache, compiled (dynamic shapes)", None),  # with compile_dynamic
    ("05", STATIC_COMPILED, "static compiled (reduce-overhead)", None),
    ("07", LATE, "interleaved (compiled)", "interleaved (eager)"),
    ("10", WHOLE, "CUDA graph, lean step (4/launch)", None),
    ("11", FUSED, None, None),  # fastest_rung(), read when the ladder is built
]
WHAT = {  # what each lesson's rung changes (lessons without a rung say why), at most 50 characters
    "01": "the whole sequence through the model every step",
    "02": "keys and values kept: one new token per step",
    "00": "no rung: the setup and the time budget",
    "03": "no rung: memory mapping, not the step",
    "04": "a preallocated cache of fixed shape, eager",
    "05": "the step compiled (static cache: CUDA graphs)",
    "06": "no rung: measures what the stop check costs",
    "07": "the stop check read a step late, second stream",
    "08": "no rung: this summary",
    "09": "no rung: post-processing after generation",
    "10": "ahead: 10, a step by hand, uncompiled, in a graph",
    "11": "ahead: 11, kernel by kernel toward the floor",
    "peer": "transformers' own loop, for comparison",
    "generate()": "transformers' loop: dynamic cache, eager",
    "generate() static": "transformers' loop: static cache, step compiled",
    KV_COMPILED: "the dynamic KV cache's step compiled, no graphs",
    STATIC_COMPILED: "the step compiled (static cache: CUDA graphs)",
    FUSED: "ahead: 11, kernel by kernel toward the floor",
}
AHEAD = ("10", "11")  # lessons that come after this one: their rungs are labelled "ahead"


def ladder_methods(model, eos_token_id, *, compile_dynamic=False, peers=PEERS) -> dict:
    """The ladder's methods by plain name, in lesson order, then the ``peers``: on a CPU the
    GPU-only rungs are left out (or replaced by their eager form)."""
    cuda = next(model.parameters()).device.type == "cuda"
    lab = bench.Lab(model, eos_token_id)
    chosen = []
    for lesson, label, gpu_name, cpu_name in RUNGS:
        name = (gpu_name or fastest_rung()) if cuda else cpu_name
        if name and (label != KV_COMPILED or compile_dynamic):
            chosen.append((label, bench.LADDER[name][0] if lesson == "11" else lesson, name))
    chosen += [(peer, "peer", peer) for peer in peers]
    methods = {}
    for label, lesson, name in chosen:
        _, builder, options, _ = bench.LADDER[name]
        methods[label] = bench.Method(lesson, functools.partial(builder, lab, **options))
    return methods


def lessons(methods) -> pd.DataFrame:
    """Which lesson each rung comes from, what it runs and what it changes (the lessons without
    a rung are named in the notebook's text, not as rows of dashes)."""
    rows = [{"lesson": m.notebook, "method": name, "runs": runs(m),
             "what it changes": WHAT.get(name, WHAT.get(m.notebook, ""))}
            for name, m in methods.items()]
    return pd.DataFrame(rows).sort_values("lesson", key=lambda s: s.map(lambda v: (v == "peer", v)),
                                          kind="stable").reset_index(drop=True)


WIDE = ("display.width", 400, "display.max_columns", None, "display.max_colwidth", None)  # pd.option_context: one block, cells uncut


def runs(method) -> str:
    """The ``helpers.bench`` function a rung runs, with its options: "static_compiled(mode=...)"."""
    build = method.build
    func = getattr(build, "func", build)
    options = ", ".join(f"{k}={v!r}" for k, v in getattr(build, "keywords", {}).items())
    return f"bench.{func.__name__}({options})"


def check_peers(model, prompt, methods, new_tokens, eos_token_id) -> list:
    """``generate()``'s tokens against the naive loop's, in full float32 (TF32 can flip a
    near-tie): one line per peer that is in ``methods``."""
    lines = []
    with exact_matmul(), floor.quiet_compile():
        reference = generate_naive(model, prompt, new_tokens, eos_token_id)
        for name in (n for n, m in methods.items() if m.notebook == "peer"):
            check_same_tokens(model, reference, methods[name].build(prompt, new_tokens)(), name,
                              verbose=False)
            lines.append(f"{name}: the naive loop's tokens ({tuple(prompt.shape)[0]} rows, "
                         f"{new_tokens} new tokens)")
    return lines


def measure(methods, prompt, lengths, *, device, repeats, budget_s=0) -> list:
    """Every method at every length: each built and called once on its own (``first_call_s``:
    compilation, capture, warm-up), then all of them in turns (``harness.compare_row``: round r
    runs each once), with one profiled run each for the GPU's busy time. A method that raises
    while being built is a ``failed`` row (``run.save_table`` then fails the notebook)."""
    rows = []
    for n in lengths:
        calls, first = {}, {}
        with floor.quiet_compile():
            for name, method in methods.items():
                start = time.perf_counter()
                try:
                    call = method.build(prompt, n)
                    bench.timed_first_call(call)
                except Exception as error:  # noqa: BLE001 - one broken method must not end the ladder
                    rows.append(bench._failed_row(name, method.notebook, prompt, n, device, error))
                    harness.release_memory(device)
                    continue
                calls[name], first[name] = call, time.perf_counter() - start
            timed, _ = harness.compare_row(calls, device=device, batch_size=prompt.shape[0],
                                           seq_len=n, repeats=repeats, warmup=0,
                                           budget_s=budget_s, busy=True)
        for row in timed:
            row["notebook"] = methods[row["method"]].notebook
            row["first_call_s"] = first[row["method"]]
        rows += timed
        calls = None
        harness.release_memory(device)
    return rows


def add_columns(frame, floor_ms) -> pd.DataFrame:
    """Per-step time, ratio to the floor (``floor_ms`` per step, one value or by length), the
    speedups against the naive loop and each peer as ratios of the medians
    (``bench.add_ladder_columns``: ``speedup_vs_naive``, ...), and, where the rounds give them,
    the rounds' estimates the lesson shows and quotes, saved beside them as
    ``speedup_vs_naive_rounds``, ... (round 37: the saved CSV held only the medians' ratios, under
    names like the displayed "(rounds)" columns)."""
    floors = ({n: v / 1e3 for n, v in floor_ms.items()} if isinstance(floor_ms, dict)
              else floor_ms / 1e3)
    frame = bench.add_ladder_columns(frame, floors, reference=NAIVE)
    for column in BASES:
        if column in frame and (rounds := _by_the_rounds(frame, column)) is not None:
            frame[f"{column}_rounds"] = rounds
    return frame


COLUMNS = {"notebook": "lesson", "method": "method", "seq_len": "tokens",
           "per_step_s": "ms per step", "speedup_vs_naive": "× naive (medians)",
           "floor_ratio": "÷ floor", "speedup_vs_generate": "× generate() (medians)",
           "speedup_vs_generate_static": "× generate() static (medians)"}  # first_call_s: saved only
BASES = {"speedup_vs_naive": NAIVE, "speedup_vs_generate": "generate()",
         "speedup_vs_generate_static": "generate() static"}  # each × column's baseline


def _by_the_rounds(table, column):
    """A × column as the ladder's rounds read it (``stats.row_speedup``'s estimate, no range),
    row by row; None unless every row's pair has as many rounds, at least ``stats.MIN_TRIALS``
    (a smoke run's few rounds: the medians stay)."""
    if "trials_wall_ms" not in table or BASES[column] not in set(table["method"]):
        return None
    said = []
    for method, n in zip(table["method"], table["seq_len"]):
        pair = [stats.method_trials(table, m, seq_len=n) for m in (method, BASES[column])]
        if len(pair[0]) != len(pair[1]) or len(pair[0]) < stats.MIN_TRIALS:
            return None
        said.append(stats.speedup(*pair).estimate)
    return said


def view(table) -> pd.DataFrame:
    """The ladder for display, in lesson order (as measured), in ms and ratios; the tokens
    column only with several lengths; columns without data (a CPU run's floor) left out. The ×
    columns are the rounds' estimates, the answer every line quotes, where the rounds give one
    (round 35: the table showed 1.26x, the medians', beside "1.08x by the rounds, the answer to
    quote"); else the ratio of the medians, named in the header."""
    out = table[[c for c in COLUMNS if c in table]].copy()
    names = dict(COLUMNS)
    for column in BASES:
        if column in out and (rounds := _by_the_rounds(table, column)) is not None:
            out[column], names[column] = rounds, names[column].replace("(medians)", "(rounds)")
    out["per_step_s"] = out["per_step_s"] * 1e3
    out = out.sort_values("seq_len", kind="stable")
    if out["seq_len"].nunique() == 1:
        out = out.drop(columns="seq_len")
    out = out.dropna(axis=1, how="all")
    # one decimal for the floor, rounded once from the unrounded ratio (round 28: 6.0504 rounded
    # to 6.05, then to 6.0, beside the text's 6.06x); two for the rest
    out = out.round({c: 1 if c == "floor_ratio" else 2 for c in out.select_dtypes("number")})
    if "speedup_vs_generate_static" in out:  # one peer column: the faster peer's, where it ran
        out = out.drop(columns="speedup_vs_generate", errors="ignore")
    return out.rename(columns=names).reset_index(drop=True)


def fastest(table, seq_len, taught=False) -> pd.Series:
    """The course's fastest method (lowest median, peers left out) at one length; with
    ``taught``, the fastest of the lessons before this one (the rungs "ahead" left out)."""
    ok = table[(table["status"] == harness.OK) & (table["seq_len"] == seq_len)
               & (table["notebook"] != "peer")]
    if taught:
        ok = ok[~ok["notebook"].isin(AHEAD)]
    return ok.sort_values("median_s").iloc[0]


def reading(table, seq_len, judge) -> list:
    """The answer in a few lines, lesson 07's rung first: the fastest rung taught so far (lessons
    01-07) and its speedup over ``generate()`` static (the naive loop's is claim 7's number,
    printed once there; its ms per step is the figure's line's and ``one_line``'s, round 32;
    ``claims.say``: ``stats.say``'s words, a "can't tell" interval's bounds never printed as
    1.00; none on a smoke run); then, in one line, the fastest rung of the lessons still ahead
    against it; last, where ``generate()`` beats the course's own KV-cache loop, why it can."""
    best, taught = fastest(table, seq_len), fastest(table, seq_len, taught=True)
    name = taught["method"]
    peers = [other for other in (PEERS if best["method"] == name else PEERS[-1:])  # naive: claim 7
             if other in set(table["method"])]
    said = "; ".join(f"against {other}, {say(table, name, other, judge, seq_len=seq_len)}"
                     for other in peers)
    lines = [f"The fastest rung taught so far (lessons 01-07) at batch "
             f"{int(taught['batch_size'])} and {int(seq_len)} tokens is {name} (lesson "
             f"{taught['notebook']})" + (f": {said}." if said else ".")]
    if best["method"] != name:  # second: the fastest rung ahead against the best taught so far
        lines.append(f"Ahead, lesson {best['notebook']}'s {best['method']} against {name}: "
                     f"{say(table, best['method'], name, judge, seq_len=seq_len)}.")
    if judge and (peer := _generate_note(table, seq_len)):
        lines.append(peer)
    return lines


def _generate_note(table, seq_len, peer="generate()") -> str:
    """``generate()`` (its defaults) against lesson 02's KV-cache loop, the same eager
    dynamic-cache loop, in one sentence, led by the rounds' verdict (round 29: "most of the
    0.08 ms it adds is the host's" rested on a 1.3% gap the rounds could not tell apart).
    Where the rounds call it slower: both ms per step and GPU work, and, where the GPU's work grew
    by less than half the extra wall clock, that most of the extra is the host's (as
    ``_eager_cache``). Where they can't tell the two apart: that they take about the same time,
    nothing attributed. Where the rounds call it faster: their verdict (``say``), and that on a
    step whose pace the host sets, small differences in the host's work decide. Empty where the
    medians and the rounds point opposite ways."""
    ok = table[(table["seq_len"] == seq_len) & (table["status"] == harness.OK)]
    if not {peer, KV} <= set(ok["method"]):
        return ""
    rows = ok.set_index("method")
    ms = (rows["per_step_s"] * 1e3).round(2)
    ratio = stats.row_speedup(table, peer, KV, seq_len=seq_len)
    word = stats.verdict(ratio)  # NOISE too with fewer than MIN_TRIALS rounds
    if word == stats.NOISE:  # a gap the rounds cannot tell from noise, either way; round 35:
        # its range, where "8.91 against 7.80 ms" sat beside a 1.13x gap called slower
        return (f"{peer} and the course's KV-cache loop (lesson 02): {ms[peer]:.2f} against "
                f"{ms[KV]:.2f} ms per step by the medians; by the rounds, {stats.plain(ratio)}.")
    if word == stats.SLOWER:
        if ms[peer] <= ms[KV] or "gpu_busy_s" not in rows or not rows.loc[[peer, KV], "gpu_busy_s"].gt(0).all():
            return ""
        gpu = (rows["gpu_busy_s"] / seq_len * 1e3).round(2)
        extra, grew = ms[peer] - ms[KV], gpu[peer] - gpu[KV]
        host = ("all" if grew <= 0 else "most" if grew < extra / 2 else "") if extra > 0 else ""
        # round 30: "1.24x slower ...: 6.13 against 5.26 ms" (the rounds' estimate beside two
        # medians that give 1.17x): the medians' ratio, as the table's column prints it
        # round 35: the rounds' reading, as the static cache's line above; the medians named
        return (f"{peer} is {stats.short(ratio)} than the course's KV-cache loop (lesson 02) by "
                f"the rounds; by the medians, "
                f"{ms[peer]:.2f} against {ms[KV]:.2f} ms per step, with GPU work of "
                f"{gpu[peer]:.2f} against {gpu[KV]:.2f} ms"
                + (f", so {host} of the {extra:.2f} ms it adds is the host's: work {peer} does "
                   "around the model that our loop does not (this lesson does not take it "
                   "apart)." if host else "."))
    return (f"{peer} ({ms[peer]:.2f} ms per step) beats the course's own KV-cache loop "
            f"({ms[KV]:.2f} ms, lesson 02): {say(table, peer, KV, seq_len=seq_len)}. It runs the "
            "same eager dynamic-cache loop, and on a step whose pace the host sets, small "
            "differences in the host's work decide.")


def one_line(table, seq_len, judge) -> str:
    """The summary's closing sentence: the fastest taught rung's ms per step and the fastest rung
    ahead's, by the medians, with no ratio (the speedup over the naive loop is claim 7's, the
    distance to the floor and the naive loop's time the budget's first line, round 37: each said
    once)."""
    best, taught = fastest(table, seq_len), fastest(table, seq_len, taught=True)
    text = (f"In one line: per decode step (medians), lessons 01-07 reach "
            f"{taught['per_step_s'] * 1e3:.2f} ms ({taught['method']})")
    if best["method"] != taught["method"]:  # second: where the lessons ahead go
        text += (f"; ahead, {best['per_step_s'] * 1e3:.2f} ms in lesson {best['notebook']} "
                 f"({best['method']})")
    return text + ("." if judge else " (smoke run: exercises the code, not a measurement).")


def pdl_note(budget, names, device):
    """``budget`` with lesson 11's bar labelled "busy": where the GPU has PDL (compute capability
    9 and up, as lesson 11 checks), that rung's graph holds kernels that start early and wait, so
    its GPU time is kernels plus waits, not work (``budget.plot`` reads the ``gpu_note``)."""
    pdl_on = device == "cuda" and torch.cuda.get_device_capability()[0] >= 9
    budget = budget.copy()
    budget["gpu_note"] = [f"busy {g:.2f}: kernels + PDL waits, lesson 11"
                          if pdl_on and m == names.get(FUSED) else None
                          for m, g in zip(budget["method"], budget["gpu_ms"])]
    return budget


def figure_line(budget, names, table, seq_len) -> str:
    """The figure read in one sentence (``budget.sentence``): from the question's starting point,
    the naive loop (the KV cache where the naive loop is itself the fastest), to the fastest rung
    taught so far (lessons 01-07: the rungs ahead wait). Empty without GPU numbers."""
    best = fastest(table, seq_len, taught=True)["method"]
    before = NAIVE if best != NAIVE else KV
    return _sentence(budget, names[best], names[before])


def compile_gap(budget, names, table=None, seq_len=None, tables=None) -> str:
    """What the static cache (04, where no faster than the KV cache: ``_eager_cache``) and
    compiling alone (05, ``_no_graphs``) do to the GPU's work and idle time, read from the budget
    (empty without GPU numbers); the naive loop and the KV cache are read in the summary
    (``kv_gain``), the CUDA-graph rungs off the figure and the budget's first line. ``table``
    (the ladder) and ``seq_len``: the rounds' verdict on the static cache, where given;
    ``tables`` (this run's, ``claims.this_run_tables``): notebook 04's own verdict on the pair."""
    data = budget.set_index("method")
    if data["gpu_ms"].isna().any():
        return ""
    parts = (_eager_cache(data, names, table, seq_len, tables), _no_graphs(data, names))
    return "\n".join(p.strip() for p in parts if p.strip())  # a short line per rung


def _eager_cache(data, names, table=None, seq_len=None, tables=None) -> str:
    """Where the static cache (04) is no faster than the KV cache (02) by the medians, one
    sentence: both wall clocks and GPU work, and, where the GPU's work grew by less than half the
    extra wall clock, that most of it is the host's (all of it where the GPU's work did not
    grow); this is the ladder's one call, and notebook 04 times the pair over its own rounds
    (every preset; claim 4 reads them only at the full preset's sizes). Where the ladder's
    rounds (``table``) can't tell the two apart, that they take about the same time, nothing
    attributed (round 29: the host's share is read only from a gap clearly above the noise).
    Where notebook 04's own rounds (``tables``) give the pair another verdict, both verdicts with
    each notebook's ms per step, in place of the host's share (``_other_04``). Empty where it is
    faster."""
    new, old = names.get(STATIC), names.get(KV)
    if not {new, old} <= set(data.index):
        return ""
    b, a = data.loc[new], data.loc[old]
    extra = round(b["wall_ms"], 2) - round(a["wall_ms"], 2)
    if extra < 0:
        return ""
    work = (f"with GPU work of {b['gpu_ms']:.2f} against {a['gpu_ms']:.2f} ms per step")
    pace = (f"is {b['wall_ms'] / a['wall_ms']:.2f}x slower than" if extra > 0 else
            "takes as long as")  # "no faster" would understate a slower rung
    by = "by the medians"
    if table is not None and {STATIC, KV} <= set(table["method"]):
        ratio = stats.row_speedup(table, STATIC, KV, seq_len=seq_len)
        if other := _other_04(ratio, tables, table, seq_len, (new, old), (b, a)):
            return other  # round 37: "1.26x slower" here beside claim 4a's "can't tell apart"
        if stats.verdict(ratio) == stats.NOISE:  # too few rounds read as NOISE too
            return (f"The {new} and the {old} take about the same time by the rounds "
                    f"({CANT_TELL}), {work}. ")
        if stats.verdict(ratio) == stats.FASTER:
            return ""
        # round 35: "1.13x slower by the medians" beside generate()'s tie "by the rounds": the
        # rounds' reading, as every verdict of this lesson
        pace, by = f"is {stats.short(ratio)} than", "by the rounds"
    # round 28c: both ms per step are the table's, printed above: not repeated here
    text = f"The {new} {pace} the {old} {by}, {work}"
    one_call = (" (this notebook's one call; notebook 04 times the pair over its own rounds)"
                if by == "by the medians" else "")
    grew = round(b["gpu_ms"], 2) - round(a["gpu_ms"], 2)  # as printed beside it
    if grew <= 0:
        text += f", so the {extra:.2f} ms it adds is the host's"
    elif grew < extra / 2:  # the GPU's extra work is a small part: "mostly", never "all"
        text += f", so most of the {extra:.2f} ms it adds is the host's"
    # its range: notebook 04's own rounds, timed on every preset (claim 4 is not judged on all)
    return text + one_call + ". "


def _other_04(ratio, tables, ladder, seq_len, labels, rows) -> str:
    """The static against the KV cache where this ladder's rounds (``ratio``) and notebook 04's
    (its eager loops at the ladder's batch and length, in ``tables``) give different verdicts:
    both, each with its notebook's ms per step, and why two notebooks can disagree (round 37:
    the ladder's "1.26x slower" stood beside claim 4a's "can't tell apart", 9.60 and 6.19 ms here,
    9.28 and 9.30 in notebook 04). Empty where they agree or notebook 04 lacks the pair."""
    frame = _ok_rows((tables or {}).get(TABLES["04"]), (CACHE_DYNAMIC, CACHE_STATIC))
    if frame is None or "batch_size" not in frame or ladder is None:
        return ""
    frame = frame[(frame["batch_size"] == ladder["batch_size"].iloc[0])
                  & (frame["seq_len"] == seq_len)]
    theirs = stats.row_speedup(frame, CACHE_STATIC, CACHE_DYNAMIC, seq_len=seq_len)
    if theirs.n < stats.MIN_TRIALS or stats.verdict(theirs) == stats.verdict(ratio):
        return ""
    ms = frame.groupby("method")["median_s"].median() / seq_len * 1e3
    word = lambda r: CANT_TELL if stats.verdict(r) == stats.NOISE else stats.short(r)  # noqa: E731
    (new, old), (b, a) = labels, rows
    return (f"The {new} against the {old}: {word(ratio)} by this ladder's rounds "
            f"({b['wall_ms']:.2f} against {a['wall_ms']:.2f} ms per step), {word(theirs)} by "
            f"notebook 04's ({ms[CACHE_STATIC]:.2f} against {ms[CACHE_DYNAMIC]:.2f} ms). Both "
            "loops are eager and host-bound, and the host's speed moves between notebooks: "
            "their order is not settled. ")


def kv_gain(budget, names, table, tables, seq_len, judge) -> str:
    """Takeaway 1's KV cache, from this run's numbers (round 29: "on its own it gains little"
    was typed in prose, and rested on the ladder alone): the GPU's work it cut against the naive
    loop, the wall clock's gain by the ladder's rounds (``stats.short``: no range), and who sets
    its step's pace (``budget.pace``). Where notebook 02, the KV cache's own lesson, measured a
    gain in its own rounds (``tables``: this run's, ``claims.this_run_tables``) whose span over
    its lengths the ladder's estimate lies outside (by more than ``stats.MEDIANS_APART``), its
    gains too. Empty on a smoke run or without GPU numbers."""
    data = budget.set_index("method")
    naive, kv = names.get(NAIVE), names.get(KV)
    if (not judge or not {naive, kv} <= set(data.index)
            or data.loc[[naive, kv], "gpu_ms"].isna().any()):
        return ""
    ratio = stats.row_speedup(table, KV, NAIVE, seq_len=seq_len)
    if ratio.n < stats.MIN_TRIALS:
        return ""
    a, b = data.loc[naive], data.loc[kv]
    share = printed_share(b)
    said = CANT_TELL if stats.verdict(ratio) == stats.NOISE else _by_rounds(
        ratio, table, KV, NAIVE, seq_len)
    # round 37: the GPU's work in ms is the figure's line's and the compile line's, not repeated
    text = (f"The {kv} cut the GPU's work {a['gpu_ms'] / b['gpu_ms']:.2f}x; its wall clock "
            f"against the naive loop's here: {said}. The GPU idles {share:.0f}% of its step: "
            f"{pace(share, why=False)}.")
    own = _ok_rows((tables or {}).get(TABLES["02"]))
    if own is None:
        return text
    gains = {int(n): stats.row_speedup(own, "kv_cache", "naive", seq_len=n)
             for n in sorted(set(own["seq_len"]))}
    gains = {n: r for n, r in gains.items() if r.n >= stats.MIN_TRIALS and r.estimate > 0}
    if not gains:
        return text
    low = min(r.estimate for r in gains.values()) * (1 - stats.MEDIANS_APART)
    high = max(r.estimate for r in gains.values()) * (1 + stats.MEDIANS_APART)
    if low <= ratio.estimate <= high:
        return text
    at = [f"{r.estimate:.2f}x at {n}" for n, r in gains.items()]
    more = "less" if ratio.estimate > high else "more"
    return text + (f" Notebook 02, timing the pair in its own rounds, measured "
                   f"{stats.listed(at)} tokens: {more} than this ladder's "
                   f"{ratio.estimate:.2f}x.")


def _by_rounds(ratio, table, name, base, seq_len) -> str:
    """A clear verdict of the rounds without its range, named as theirs, with the table's
    medians in ``stats.plain``'s words where they print differently (round 30: "1.22x faster"
    beside the table's 1.17): "1.22x faster by the rounds (the table's medians: 1.17x)"."""
    ok = table[(table["seq_len"] == seq_len) & (table["status"] == harness.OK)]
    medians = stats.medians_ratio(*(stats.method_trials(ok, m, seq_len=seq_len)
                                    for m in (name, base)))
    said = stats.short(ratio)  # "1.22x faster"
    digits = len(said.split("x")[0].split(".")[1])  # as short printed it: 2, or 3 near 1.00
    faster = stats.verdict(ratio) == stats.FASTER
    m = medians if faster else 1 / medians
    if not 0 < m < math.inf or f"{m:.{digits}f}x" == said.split(" ")[0]:
        return f"{said} by the rounds"
    other = stats.SLOWER if faster else stats.FASTER
    note = f"{m:.{digits}f}x" if m >= 1 else f"{1 / m:.{digits}f}x {other}"
    return f"{said} by the rounds (the table's medians: {note})"


def _ok_rows(frame, loops=("naive", "kv_cache")):
    """A table's rows that ran (``claims._ok``); None without ``loops`` (by default notebook
    02's naive and KV-cache loops)."""
    if frame is None or not {"method", "seq_len"} <= set(frame):
        return None
    frame = frame[frame["status"] == harness.OK] if "status" in frame else frame
    return frame if set(loops) <= set(frame["method"]) else None


def _no_graphs(data, names) -> str:
    """What compiling alone (fewer, fused kernels; no CUDA graphs) does to the dynamic cache's
    step (05): the GPU's idle time and work, before -> after (the wall clocks are the table's),
    and the idle time
    the static cache compiled with CUDA graphs leaves (empty without the compile-alone rung)."""
    kv, kv_compiled = names.get(KV), names.get(KV_COMPILED)
    static, graphs = names.get(STATIC), names.get(STATIC_COMPILED)
    if not {kv, kv_compiled} <= set(data.index):
        if not {static, graphs} <= set(data.index):
            return ""
        # round 30: takeaway 1's "CUDA graphs cut the idle time further" where compiling alone
        # was not timed: what the one rung that brings both did, in this run's numbers
        a, b = data.loc[static], data.loc[graphs]
        did = "cut" if _idle(b) < _idle(a) else "did not cut"
        return (f"Compiling and CUDA graphs come in one rung here ({graphs}: compiling "
                f"alone is timed only where compile_dynamic is on); per step they {did} the "
                f"GPU's idle time, {_idle(a):.2f} -> {_idle(b):.2f} ms. ")
    a, b = data.loc[kv], data.loc[kv_compiled]
    # round 28c: the wall clocks are the table's ms column, printed above: not repeated here
    text = (f"Compiling alone, without CUDA graphs (05, the dynamic cache's step: fewer, fused "
            f"kernels to launch), per step: the GPU's idle time {_idle(a):.2f} -> {_idle(b):.2f} "
            f"ms, its work {a['gpu_ms']:.2f} -> {b['gpu_ms']:.2f} ms.")
    if graphs in data.index:  # what CUDA graphs leave of that idle time (the takeaways' point)
        left = _idle(data.loc[graphs])
        further = ("less still" if left < _idle(b) else "no less")  # round 30: computed
        text += (f" With CUDA graphs as well ({STATIC_COMPILED}, 05), the idle time is "
                 f"{left:.2f} ms, {further}.")
    return text + " "




def labels(methods) -> dict:
    """Each method's name with its lesson, for the figure: "KV cache (02)"."""
    return {name: name if m.notebook == "peer" else
            f"{name} (ahead: {m.notebook})" if m.notebook in AHEAD else f"{name} ({m.notebook})"
            for name, m in methods.items()}
