"""Notebook 07's measuring, table and figure: the stop check read one step late, timed against
the per-step sync and against no check at all, with the eager step and with notebook 05's
compiled CUDA-graph step. The loops themselves are taught in the notebook (helpers/streams.py);
this is the plumbing behind its one measurement call and its one figure."""
from __future__ import annotations

import json
import math
import os
import time

import pandas as pd
import torch

from . import budget, claims, harness, plotting, profiling, results, stats
from .eos_sync import pace_rule  # noqa: F401  (07 names the pace by the same rule as 06)
from .. import static
from ..model import make_prompt
from ..streams import eager_step, generate_sync

REGIME_LABELS = {"eager": "eager", "compiled": "CUDA graph"}
# One name per loop in every table, figure and printed line (the table's method column keeps
# the function's short name: "interleaved" is generate_interleaved, the two-stream loop).
LOOP_LABELS = {"sync": "per-step sync", "interleaved": "two streams", "event": "event",
               "no_check": "no check"}


class Decoders:
    """``(step, cache, first_call_s)`` per regime and batch size, built and warmed up once: the
    eager step on a DynamicCache, or the compiled step (``mode="reduce-overhead"``, one CUDA
    graph per batch size) on a static cache. ``first_call_s`` (compile and capture, or the
    eager warm-up) is timed apart and never inside a measurement."""

    def __init__(self, model, prompt_len, n_tokens, device, seed=0):
        self.model, self.prompt_len, self.n_tokens = model, prompt_len, n_tokens
        self.device, self.seed, self.built, self.compiled = device, seed, {}, None

    def __call__(self, regime, batch):
        if (regime, batch) not in self.built:
            if regime == "eager":
                step, cache = eager_step(self.model), None
            else:
                if self.compiled is None:
                    # One dynamo cache for every batch size's graph: past the default limit of 8
                    # recompilations dynamo would silently run the step uncompiled.
                    torch._dynamo.config.recompile_limit = 64
                    self.compiled = static.compiled_step(self.model, "reduce-overhead")
                step = self.compiled
                cache = static.make_static_cache(self.model, batch, self.prompt_len + self.n_tokens,
                                                 self.device, self.model.dtype)
            start = time.perf_counter()
            generate_sync(self.model, self.prompt(batch), self.n_tokens,
                          self.model.config.eos_token_id, step=step, cache=cache)
            harness.sync(self.device)
            self.built[regime, batch] = (step, cache, time.perf_counter() - start)
        return self.built[regime, batch]

    def prompt(self, batch):
        return make_prompt(batch, self.prompt_len, self.model.config.vocab_size,
                           self.model.config.eos_token_id, self.device, seed=self.seed)


EAGER_LOOPS = ("sync", "no_check")  # the eager step's budget: what the check costs there


def measure(decoders, methods, points, *, repeats, compiled_repeats, warmup, budget_s):
    """Every loop of ``methods`` at every ``(regime, batch_size)`` point, as interleaved trials
    (one of each per round, no profiler), every row running to ``n_tokens`` (no forced stops:
    the loops differ by their stop check only), with the GPU's busy time (``busy=True``) for the
    time budget. The eager step runs only ``EAGER_LOOPS``: the host sets its pace, so its time
    budget shows what a late read could win at most (the check's cost), and timing the late
    loops there would measure the host's speed between trials. One row per loop and point."""
    model, n_tokens, eos = decoders.model, decoders.n_tokens, decoders.model.config.eos_token_id

    def run_point(point):
        regime, batch = point
        step, cache, first = decoders(regime, batch)
        prompt = decoders.prompt(batch)
        calls = {name: (lambda g=generate: g(model, prompt, n_tokens, eos, step=step, cache=cache))
                 for name, generate in methods.items()
                 if regime != "eager" or name in EAGER_LOOPS}
        rows, _ = harness.compare_row(
            calls, device=decoders.device, batch_size=batch, seq_len=n_tokens,
            repeats=compiled_repeats if regime == "compiled" else repeats, warmup=warmup,
            budget_s=budget_s, busy=True, regime=regime, first_call_s=first)
        for row in rows:
            row["ms_per_step"] = row["median_s"] * 1e3 / n_tokens
        return rows

    return pd.DataFrame(harness.sweep(points, run_point, desc="stop check"))


def plan_line(points) -> str:
    """What ``measure`` times for ``points`` (``(regime, batch_size)`` pairs), from the preset
    itself: each step's batch sizes and loops, and a step the preset does not time."""
    said = []
    for regime in ("compiled", "eager"):
        sizes = sorted({b for r, b in points if r == regime})
        step = f"the {'CUDA-graph' if regime == 'compiled' else 'eager'} step"
        if not sizes:
            said.append(f"{step} is not timed in this run")
            continue
        loops = "all four loops" if regime == "compiled" else "the per-step sync and no check only"
        said.append(f"{step} at {_batches(sizes)}, {loops}")
    return "Timed here: " + "; ".join(said) + "."


def summary(table) -> pd.DataFrame:
    """One row per regime and batch size: each loop's ms per step, what the per-step check
    costs per step (sync against no check, µs) and the share of that cost each one-step-late
    loop wins back (NaN where the check costs nothing here)."""
    ok = table[table["status"] == harness.OK]
    wide = ok.pivot_table(index=["regime", "batch_size"], columns="method",
                          values="ms_per_step").reset_index()
    wide.columns.name = None
    # from the ms per step as the table prints them (three decimals), so the columns add up
    wide["check_cost_us"] = 1e3 * (wide["sync"].round(3) - wide["no_check"].round(3))
    measurable = [check_measurable(ok, r, b) for r, b in zip(wide["regime"], wide["batch_size"])]
    wide["check_resolved"] = measurable
    for name in ("interleaved", "event"):
        if name not in wide:
            wide[name] = float("nan")
        wide[f"{name}_recovered_pct"] = [
            profiling.recovered_pct(s, m, f) if known else float("nan")
            for s, m, f, known in zip(wide["sync"], wide[name], wide["no_check"], measurable)]
    return wide.round(3)


def check_measurable(ok, regime, batch_size) -> bool:
    """Whether the loop with no check is told apart as faster than the per-step sync at one
    point (``stats.verdict`` on their trials); with too few trials to judge (or none stored),
    whether the check cost anything at all. A share of a cost below the machine's resolution
    would be noise over noise."""
    part = ok[(ok["regime"] == regime) & (ok["batch_size"] == batch_size)]
    free, sync = (stats.method_trials(part, m) for m in ("no_check", "sync"))
    if min(len(free), len(sync)) >= stats.MIN_TRIALS:
        return stats.verdict(stats.row_speedup(part, "no_check", "sync")) == stats.FASTER
    rows = part.set_index("method")["ms_per_step"]
    return bool(rows.get("sync", float("nan")) > rows.get("no_check", float("nan")))


UNITS = {"regime": "step", "batch_size": "batch", "sync": "sync, ms/step",
         "interleaved": "two streams, ms/step", "event": "event, ms/step",
         "no_check": "no check, ms/step", "check_cost_us": "check's cost, µs/step",
         "interleaved_recovered_pct": "two streams win back, %",
         "event_recovered_pct": "event wins back, %"}


ALL = "all of it"  # a share that rounds to 100% or more: a late read wins back no more


def whole_share(pct) -> bool:
    """Whether a share won back reads "all of it" (round 29: the table printed 99.8% as "100"
    beside another loop's "all of it"): it rounds to 100% or more."""
    return not math.isnan(pct) and round(pct) >= 100


def view(summary_frame, compact=False) -> pd.DataFrame:
    """``summary`` for display: every column named with its unit, the step in words; a loop not
    timed reads "not timed" in its time and win-back columns; a cost the rounds do not resolve (no
    check not told apart as faster) and a share of it read "\u2014"; a share that rounds to 100%
    or more reads "all of it" (``whole_share``: a late read cannot win back more than the check
    costs). ``compact`` (round 34: the table wrapped into three blocks): where CUDA-graph rows
    exist, the eager row (two loops timed, the rest "not timed") is left out, ``eager_line`` says
    its result; the step column goes where one step remains (the plan line names it); the
    headers are one level, short (``SHORT``; round 36: the two-level header read as one)."""
    if compact and (summary_frame["regime"] != "eager").any():
        summary_frame = summary_frame[summary_frame["regime"] != "eager"]
    out = summary_frame[[c for c in UNITS if c in summary_frame]]
    whole = lambda v: "\u2014" if math.isnan(v) else f"{v:.0f}"  # noqa: E731
    timed = lambda v: "not timed" if math.isnan(v) else f"{v:.3f}"  # noqa: E731
    share = lambda loop: [  # noqa: E731
        "not timed" if math.isnan(ms) else ALL if whole_share(v) else whole(v)
        for ms, v in zip(out[loop], out[f"{loop}_recovered_pct"])]
    resolved = summary_frame.get("check_resolved", pd.Series(True, index=out.index)).astype(bool)
    out = out.assign(regime=out["regime"].map(REGIME_LABELS), **{
        col: [whole(v) if known else "\u2014" for v, known in zip(out[col], resolved)]
        for col in ("check_cost_us",) if col in out}, **{
        f"{loop}_recovered_pct": share(loop) for loop in ("interleaved", "event")
        if {loop, f"{loop}_recovered_pct"} <= set(out)}, **{
        col: out[col].map(timed) for col in ("interleaved", "event") if col in out})
    if not compact:
        return out.rename(columns=UNITS).reset_index(drop=True)
    if out["regime"].nunique() == 1:
        out = out.drop(columns="regime")
    return out.rename(columns=SHORT).reset_index(drop=True)


# ``view(compact=True)``'s headers, one level; the prose above the table says the loops' times
# are ms per step, "cost" the check's and "won" the share of it a late loop wins back
SHORT = {"regime": "step", "batch_size": "batch", "sync": "sync", "interleaved": "two streams",
         "event": "event", "no_check": "no check", "check_cost_us": "cost \u00b5s",
         "interleaved_recovered_pct": "streams won %", "event_recovered_pct": "event won %"}


def step_budget(model, table, params, methods):
    """``budget.per_step`` of every regime's loops at ``params.batch_size``, labelled
    "<regime>, <loop>" ("CUDA graph, two streams": ``LOOP_LABELS``; eager first), with the
    floor of that point."""
    part = table[table["batch_size"] == params.batch_size]
    labelled = part.assign(method=part["regime"].map(REGIME_LABELS) + ", "
                           + part["method"].map(lambda m: LOOP_LABELS.get(m, m)))
    order = [f"{REGIME_LABELS[r]}, {LOOP_LABELS.get(m, m)}" for r in ("eager", "compiled")
             for m in methods]
    floor = budget.floor_ms(model, params.device, params.batch_size, params.prompt_len,
                            int(part["seq_len"].max()) if len(part) else 1)
    return budget.per_step(labelled, order, floor=floor)


def count_steps(methods, model, prompt, n_tokens, eos, stops) -> dict:
    """The decode steps each loop of ``methods`` runs with the eager step and the forced stops
    (``profiling.StepRanges`` counts the step's calls), checked: a late loop runs one more than
    the per-step sync where the batch stops before ``n_tokens``, the step whose token it drops."""
    calls = {}
    for name, generate in methods.items():
        counter = profiling.StepRanges()
        generate(model, prompt, n_tokens, eos, stops, step=counter.wrap(eager_step(model)))
        counter.close()
        calls[name] = counter.steps
    extra = int(int(stops.max()) < n_tokens)
    assert calls["interleaved"] == calls["event"] == calls["sync"] + extra, calls
    return calls


def proof_line(proofs, calls) -> str:
    """How many token checks passed (and rows differing only at float32 near-ties), and the
    decode steps each loop ran (``count_steps``)."""
    ties = sum(len(p["ties"]) for p in proofs)
    return (f"{len(proofs)} token checks passed"
            + (f" ({ties} rows differ only at float32 near-ties)" if ties else ", every one identical")
            + "; decode steps run (eager step, forced stops): "
            + ", ".join(f"{LOOP_LABELS[name]} {n}" for name, n in calls.items()))


def budget_reading(said, step_costs, new="interleaved", old="sync") -> str:
    """The figure's budget in words, CUDA-graph step, ``old`` loop against ``new``: first the GPU's
    work and the wall clock (the first sentence of ``said``, ``budget.sentence``'s), then the GPU's idle per step
    of the two and of every other CUDA-graph loop, and who sets the pace by lesson 00's rule,
    named only (06 spells it out). Empty without GPU numbers."""
    label = lambda n: f"{REGIME_LABELS['compiled']}, {LOOP_LABELS[n]}"  # noqa: E731
    data = step_costs.set_index("method")
    if not said or "The GPU's idle time" not in said:
        return said.split(" The floor is")[0]
    head = said.split(" The GPU's idle time")[0]
    idle = lambda n: budget.ms_or_us(data.at[label(n), "idle_ms"], budget.printed_idle(data.loc[label(n)]))  # noqa: E731
    b = data.loc[label(new)]
    share = 100 * budget.printed_idle(b) / round(b["wall_ms"], 2)
    rest = [f"{idle(n)} with {THE[n]}" for n in LOOP_LABELS if n not in (new, old)
            and label(n) in data.index and not math.isnan(data.at[label(n), "gpu_ms"])]
    return (f"{head} The GPU's idle went from {idle(old)} to {idle(new)} per step, {share:.0f}% of "
            f"the {b['wall_ms']:.2f} ms step" + (f" (against {stats.listed(rest)})" if rest else "")
            + f". By lesson 00's rule, which lesson 06 spells out, {budget.pace(share, why=False)}.")


def figure_batches(params) -> str:
    """The footer's batch sizes for the budget figure: the left panel's one batch, and the
    right panel's sweep where it has more than one size."""
    sizes = [int(b) for b in (params.batch_sizes or [])]
    if len(sizes) < 2:
        return str(params.batch_size)
    return f"{params.batch_size} (left), {', '.join(str(b) for b in sizes)} (right)"


def plot(fig_axes, table, step_costs, params):
    """Left: the time budget of one step at ``batch_size`` (the CUDA-graph loops only where
    they ran: ``eager_line`` reads the eager step); right: with the CUDA-graph step, each
    loop's time per step above no check's (µs, from the medians) against batch size: the
    per-step sync's line is the check's cost, a late loop's what it leaves of it."""
    ax_budget, ax_batch = fig_axes
    graph = step_costs["method"].str.startswith(REGIME_LABELS["compiled"])
    # the eager step's 11 ms bars would squeeze the CUDA-graph loops' (eager_line reads it)
    shown = step_costs[graph] if graph.any() else step_costs
    budget.plot(ax_budget, shown, title=f"One step at batch {params.batch_size}")
    compiled = table[(table["regime"] == "compiled") & (table["status"] == harness.OK)]
    if compiled.empty:
        ax_batch.text(0.5, 0.5, "no CUDA-graph step on a CPU run", ha="center", va="center",
                      transform=ax_batch.transAxes, color="#555555")
        ax_batch.set_axis_off()
        return
    free = compiled[compiled["method"] == "no_check"].set_index("batch_size")["ms_per_step"]
    ax_batch.axhline(0, color=plotting.PALETTE[3], linestyle="--", linewidth=1.2,
                     label="no check (zero)")
    above = {}  # µs per step above no check's, by loop
    for i, (name, part) in enumerate(compiled.groupby("method", sort=False)):
        if name == "no_check":
            continue
        part = part.sort_values("batch_size")
        above[name] = 1e3 * (part["ms_per_step"].round(3).to_numpy()  # as the table prints them
                             - free.round(3).reindex(part["batch_size"]).to_numpy())
        ax_batch.plot(part["batch_size"], above[name], marker="o", color=plotting.PALETTE[i],
                      label=LOOP_LABELS.get(name, name), zorder=3,
                      linestyle="-" if part["batch_size"].nunique() > 1 else "none")
        for x, y in zip(part["batch_size"], above[name]):  # round 37: each point's µs beside it
            if y == y:
                ax_batch.annotate(f"{y:.0f}" if name == "sync" else f"{y:+.0f}", (x, y),
                                  xytext=(6, -12 if name == "event" else 6),
                                  textcoords="offset points", fontsize=8, color=plotting.PALETTE[i])
    late = _symlog(ax_batch, above)
    sizes = sorted(compiled["batch_size"].unique())
    if len(sizes) > 1:
        ax_batch.set_xscale("log", base=2)  # batch sizes 1, 32, 128: spaced by their doublings
    ax_batch.set_xticks(sizes, [str(b) for b in sizes])
    ax_batch.minorticks_off()
    ax_batch.set(xlabel="batch size" + (" (log scale)" if len(sizes) > 1 else ""),
                 ylabel="µs per step more than no check" + (" (symlog)" if late else ""))
    ax_batch.set_title("CUDA-graph step: time per step above no check's", loc="left")
    if len(sizes) == 1:  # no sweep: the article's batch claim is not checked
        ax_batch.text(0.5, 0.55, f"one batch size ({sizes[0]}) in this preset:\nthe sweep over "
                      "batch sizes, and the article's\nclaim about the smallest batch, are not "
                      "checked here", ha="center", va="center", transform=ax_batch.transAxes,
                      fontsize=9, color="#555555")
    ax_batch.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9, frameon=False)


def _symlog(ax, above) -> bool:
    """Round 37: the late loops' few µs above no check were flattened onto its zero line beside
    the per-step sync's hundreds. The axis is linear up to a round value over the late loops'
    largest (10, 20, 50, 100, ...), logarithmic beyond it, with plain tick labels. False (the axis
    left linear) without late loops or where the per-step sync lies within that range."""
    late = [abs(v) for n, vals in above.items() if n != "sync" for v in vals if v == v]
    top = max([v for v in above.get("sync", []) if v == v] + late + [0.0])
    steps = [m * 10 ** e for e in range(1, 6) for m in (1, 2, 5)]
    linear = next((v for v in steps if v >= max(late + [0.0])), None)
    if not late or linear is None or top <= 2 * linear:
        return False
    ax.set_yscale("symlog", linthresh=linear)
    below = any(v < 0 for n, vals in above.items() if n != "sync" for v in vals)
    ticks = [-linear] * below + [0, linear] + [v for v in steps if linear < v <= 1.2 * top]
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
    ax.set_ylim(-linear if below else -linear / 4, 1.4 * top)
    return True


def _regime_batches(table, summary_frame, regime):
    """One regime's summary rows by batch size, its table rows and its batch sizes; None with
    fewer than two batch sizes."""
    part = summary_frame[summary_frame["regime"] == regime].sort_values("batch_size")
    if part["batch_size"].nunique() < 2:
        return None
    return part, table[table["regime"] == regime], part["batch_size"].astype(int).to_list()


def _smallest_batch_gains(table, summary_frame, regime):
    """Two streams' speedup over the per-step sync at each batch size of ``regime`` (the rounds'
    estimate; the medians' ratio without rounds), the medians' ratio, the batch sizes, the
    smallest batch's gain against each larger batch's (``stats.row_growth``, as notebook 08's
    claim judges it) and the claim's verdict from those: "supported" where it is larger than
    every larger batch's, "not supported" where smaller than any, else "can't tell on this
    machine". None with fewer than two batch sizes."""
    if not (found := _regime_batches(table, summary_frame, regime)):
        return None
    part, rows, batches = found
    rounds = [stats.row_speedup(rows, "interleaved", "sync", batch_size=b).estimate for b in batches]
    ms = rows[rows["status"] == harness.OK].pivot_table(index="batch_size", columns="method",
                                                         values="ms_per_step")
    medians = [float(ms.loc[b, "sync"] / ms.loc[b, "interleaved"]) for b in batches]  # unrounded
    gains = [g if g == g else m for g, m in zip(rounds, medians)]
    growth = [stats.row_growth(rows, "interleaved", "sync", b, batches[0], by="batch_size")
              for b in batches[1:]]
    words = [stats.verdict(r) for r in growth]
    said = ("not supported" if stats.SLOWER in words else
            "supported" if all(w == stats.FASTER for w in words) else "can't tell on this machine")
    return gains, medians, batches, growth, said


def article_claim_line(table, summary_frame, judge=True, regime="compiled") -> str:
    """The article's claim (interleaving gains most at the smallest batch) against what was
    measured: two streams' speedup over the per-step sync at each batch size of ``regime`` (the
    rounds' estimate, and the medians' ratios where one is more than ``stats.MEDIANS_APART``
    from it), then the smallest batch's speedup against each larger batch's
    (``stats.row_growth``: "larger", "smaller" or "can't tell apart", with its range), and the
    verdict of ``_smallest_batch_gains``. With one batch size, that the claim is not checked;
    empty without the regime or on a smoke run."""
    if not judge:
        return ""
    if not (found := _smallest_batch_gains(table, summary_frame, regime)):
        sizes = sorted(int(b) for b in summary_frame.loc[summary_frame["regime"] == regime,
                                                         "batch_size"].unique())
        return ("The article claims interleaving gains most at the smallest batch: this preset "
                f"times the {REGIME_LABELS[regime]} step at one batch size ({sizes[0]}), so the "
                "claim is not checked here." if len(sizes) == 1 else "")
    gains, medians, batches, growth, said = found
    against = [f"against batch {b}'s: " + (
        stats.plain(r).replace(f" {stats.FASTER} (", " larger (").replace(f" {stats.SLOWER} (", " smaller (")
        if r.n >= stats.MIN_TRIALS else "too few rounds to judge") for r, b in zip(growth, batches[1:])]
    by_medians = (" (by the medians: " + stats.listed([f"{m:.2f}x" for m in medians]) + ")"
                  if any(stats.medians_apart(m, g) for m, g in zip(medians, gains)) else "")
    first = stats.row_speedup(table[table["regime"] == regime], "interleaved", "sync",
                              batch_size=batches[0])
    each = [f"{g:.2f}x at batch {b}" for g, b in zip(gains, batches)]
    if stats.verdict(first) == stats.FASTER:
        each[0] = f"{stats.plain(first)} at batch {batches[0]}"  # the claim's point: its range
    return ("The article claims interleaving gains most at the smallest batch. Two streams' "
            f"speedup over the per-step sync ({REGIME_LABELS[regime]} step): "
            + stats.listed(each)
            + by_medians + f". Batch {batches[0]}'s speedup " + "; ".join(against)
            + f". Whether batch {batches[0]} gains most: "
            + {"supported": "yes", "not supported": "no"}.get(said, said) + ".")


def shares_line(summary_frame, batch, judge=True, regime="compiled") -> str:
    """The two shares a late read's speedup grows with, at one point of ``regime``: the check's
    cost as a share of the step without it, and the share of that cost each late loop wins
    back (from the summary's medians, as the table prints them). Where the rounds do not
    resolve the check's cost, that there is nothing to win back. Empty on a smoke run or
    without the point."""
    rows = summary_frame[(summary_frame["regime"] == regime)
                         & (summary_frame["batch_size"] == batch)]
    if not judge or rows.empty:
        return ""
    row = rows.iloc[0]
    head = f"On this run, with the {REGIME_LABELS[regime]} step at batch {batch}"
    if not bool(row.get("check_resolved", True)):
        return (f"{head}, the rounds can't tell the check's cost apart, so a late read has nothing "
                "to win back.")
    part = lambda v: ALL if whole_share(v) else "none of it" if v <= 0 else f"{v:.0f}% of it"  # noqa: E731
    won = {n: part(row[f"{n}_recovered_pct"]) for n in ("interleaved", "event")
           if not math.isnan(row[f"{n}_recovered_pct"])}
    verb = {"interleaved": "two streams win back", "event": "the event loop wins back"}
    back = stats.listed([f"{verb[n]} {w}" for n, w in won.items()])
    return (f"{head}, the check costs {row['check_cost_us']:.0f} µs per step, "
            f"{row['check_cost_us'] / (10 * row['no_check']):.0f}% of the {row['no_check']:.2f} ms "
            "step without it" + (f"; {back}" if won else "") + ".")


def where_line(table, summary_frame, judge=True, regime="compiled", profiled=None) -> str:
    """Where the late read pays, over the batch sizes of ``regime`` whose check's cost the rounds
    resolve: the batch where two streams' speedup over the per-step sync is largest (the rounds'
    estimate, ``stats.short``), and each other batch's speedup in words against it (round 35:
    "smaller" or "can't be told apart", ``stats.row_growth``; no range). Then the share of the step
    the check takes, only as the reason a batch might gain most: the batch where that share is
    largest, and whether the late loops win back less of the cost there than anywhere else. Any
    batch where a late loop's median fell below no check's; where the late loops leave most of
    the cost at a batch other than the ``profiled`` one (over a tenth), that the lesson does not
    measure why. Round 37: no speedups (``article_claim_line`` prints them), and a share won
    back ranks lowest only where it lies more than ``ABOUT_SAME_PCT`` points below every other
    batch's. Empty with fewer than two resolved batch sizes or on a smoke run."""
    if not judge:
        return ""
    rows = summary_frame[(summary_frame["regime"] == regime)
                         & summary_frame["check_resolved"].astype(bool)].set_index("batch_size")
    late = [n for n in ("interleaved", "event") if n in rows and rows[n].notna().all()]
    if len(rows) < 2 or not late:
        return ""
    part = table[table["regime"] == regime]
    loop, batches = late[0], sorted(int(b) for b in rows.index)
    gain = {b: stats.row_speedup(part, loop, "sync", batch_size=b) for b in batches}
    top = max(batches, key=lambda b: gain[b].estimate if gain[b].estimate == gain[b].estimate else 0)
    if stats.verdict(gain[top]) != stats.FASTER:
        text = (f"Where it pays: at no batch size can the rounds tell {LOOP_LABELS[loop]} apart "
                "from the per-step sync.")
    else:
        against = {stats.SLOWER: ("is smaller", "are smaller"), stats.FASTER: ("is larger", "are larger")}
        grouped = {}  # one verb per reading: "batch 32's and batch 128's are smaller"
        for b in batches:  # round 37: no speedups, the article's claim line gives them
            if b != top:
                word = stats.verdict(stats.row_growth(part, loop, "sync", top, b, by="batch_size"))
                grouped.setdefault(word, []).append(f"batch {b}'s")
        others = [stats.listed(said) + " " + (against[word][len(said) > 1] if word in against
                                              else "can't be told apart from it")
                  for word, said in grouped.items()]
        gains = {"interleaved": "two streams gain", "event": "the event loop gains"}[loop]
        text = (f"Where it pays: {gains} most over the per-step sync at batch {top}; "
                + stats.listed(others) + ".")
    share = {int(b): r["check_cost_us"] / (10 * r["no_check"]) for b, r in rows.iterrows()}
    won = {int(b): [min(r[f"{n}_recovered_pct"], 100.0) for n in late] for b, r in rows.iterrows()}
    most = max(share, key=share.get)
    # per loop (round 29: "it wins back the smallest share" held for two streams only); round 37:
    # only more than ABOUT_SAME_PCT points below every other batch's (not 96% against 97%)
    smallest = [n for i, n in enumerate(late)
                if all(won[b][i] - won[most][i] > ABOUT_SAME_PCT for b in won if b != most)]
    verb = {"interleaved": "two streams win", "event": "the event loop wins"}
    who = ("the late loops win" if len(smallest) == len(late) > 1 else
           verb[smallest[0]] if smallest else "")
    cost = (f"({rows.at[most, 'check_cost_us']:.0f} µs, {share[most]:.0f}% of the "
            f"{rows.at[most, 'no_check']:.2f} ms step without it)")
    text += (f" The check takes the largest share of the step at batch {most} {cost}, so a late "
             f"read {'can' if most == top else 'could'} gain most there") + (
        f", {'though' if most == top else 'but'} {who} back least of it there" if who else "") + "."
    said = {}  # signed: a late median below no check's is said, not hidden; once per reading
    for b, r in rows.iterrows():
        if below := _below_free(table, regime, int(b), late,
                                [1e3 * (r[n] - r["no_check"]) for n in late]):
            said.setdefault(below, []).append(str(int(b)))
    text += "".join(f" At {_batches(b)}, {below}." for below, b in said.items())
    least = min(won, key=lambda b: min(won[b]))  # where a late read leaves most of the cost
    alone = all(min(won[b]) - min(won[least]) > ABOUT_SAME_PCT for b in won if b != least)
    if least != most and alone:
        kept = [100 - w for w in won[least]]
        text += (f" The late loops win back least at batch {least}: they leave "
                 + (f"{min(kept):.0f}%" if round(min(kept)) == round(max(kept))
                    else f"{min(kept):.0f}–{max(kept):.0f}%") + " of the check's cost there.")
    if profiled is not None and least != profiled and min(won[least]) < 90 and alone:
        text += (f" Profiled at batch {profiled} only, this lesson does not measure where batch "
                 f"{least}'s time above no check goes (set `batch_size = {least}` to profile it).")
    return text


def _below_free(table, regime, batch, late, left) -> str:
    """Where a late loop's median fell below no check's at one point: whether its rounds tell it
    apart from no check (a loop doing more work than no check can only beat it by the runs'
    variation, or by a real effect the lesson does not measure)."""
    below = [n for n, v in zip(late, left) if round(v) < 0]
    if not below:
        return ""
    part = table[(table["regime"] == regime) & (table["batch_size"] == batch)]
    said = []
    for n in below:
        ratio = stats.row_speedup(part, n, "no_check")
        word = stats.verdict(ratio)  # NOISE too with fewer than MIN_TRIALS rounds
        said.append(f"{LOOP_LABELS[n]} ran " + (
            "faster than no check by the medians, but its runs can't tell the two apart"
            if word == stats.NOISE else f"{stats.plain(ratio)} than no check, which this lesson "
            "does not explain"))
    return "; ".join(said)


def eager_line(summary_frame, judge=True, table=None) -> str:
    """The eager step's row in one line: where its rounds tell the check's cost apart, that cost
    and its share of the step (no range: the answer's ranges are the CUDA-graph step's);
    else each loop's range of rounds (ms per step, from ``table``) and that the eager step is too
    spread (round 30: plainly, against the check's cost with the CUDA-graph step at that batch,
    where the widest spread exceeds it).
    Then that the figure leaves the eager step out. Empty without an eager row or on a smoke run."""
    rows = summary_frame[summary_frame["regime"] == "eager"]
    if not judge or rows.empty:
        return ""
    row = rows.iloc[0]
    batch = int(row["batch_size"])
    if bool(row.get("check_resolved", True)):
        # the share says the speedup; its range would be the lesson's sixth (round 35)
        said = (f"the check costs {row['check_cost_us']:.0f} µs per step ({row['sync']:.2f} "
                f"against {row['no_check']:.2f} ms), "
                f"{row['check_cost_us'] / (10 * row['no_check']):.0f}% of the step without it")
        return (f"With the eager step at batch {batch}, {said}; the figure leaves the eager step out.")
    spread = {m: _rounds_ms(table, "eager", batch, m) for m in ("sync", "no_check")}
    if not all(spread.values()):
        return ""
    ranges = (f"{min(spread['sync']):.2f} to {max(spread['sync']):.2f} ms per step with the per-step "
              f"sync, {min(spread['no_check']):.2f} to {max(spread['no_check']):.2f} with no check")
    graph = summary_frame[(summary_frame["regime"] == "compiled")
                          & (summary_frame["batch_size"] == batch)]
    # ms, from the ends as printed (round 31: 5.77 - 4.77 reads 1.00, not the unrounded 0.99)
    widest = max(round(max(v), 2) - round(min(v), 2) for v in spread.values())
    cost = (None if graph.empty or not bool(graph.iloc[0].get("check_resolved", True))
            else float(graph.iloc[0]["check_cost_us"]))  # in the table and the answer above
    why = (f"each loop's rounds spread over up to {widest:.2f} ms, more than the check costs "
           "with the CUDA-graph step, so they cannot show a cost of that size"
           if cost is not None and 1e3 * widest > cost else
           "too spread to tell the two loops apart")
    return (f"With the eager step at batch {batch}, the rounds ran {ranges}: {why}. "
            "The figure leaves it out.")


def _rounds_ms(table, regime, batch, method) -> list:
    """One loop's timed rounds at one point, ms per decode step; [] without them."""
    if table is None:
        return []
    part = table[(table["regime"] == regime) & (table["batch_size"] == batch)
                 & (table["status"] == harness.OK)]
    if part.empty or method not in set(part["method"]):
        return []
    n = float(part.loc[part["method"] == method, "seq_len"].iloc[0])
    return [1e3 * t / n for t in stats.method_trials(part, method)]


def lesson06_line(table, batch) -> str:
    """The check's cost with the CUDA-graph step here against lesson 06's, where 06 ran earlier
    in this same run (the runner's run id in both records) at the same batch and length: both
    costs and both loops' ms per step, from the two tables' medians. Empty otherwise (an
    interactive run, another batch or length, or no cost here or there)."""
    record = results.run_dir() / "outputs" / "06_eos_sync.json"
    path = results.run_dir() / "data" / "06_eos_sync_regimes.csv"
    run_id = os.environ.get(results.RUN_ID_ENV)
    if not run_id or not record.exists() or not path.exists():
        return ""
    if json.loads(record.read_text()).get("run_id") != run_id:
        return ""
    return against_06(table, pd.read_csv(path), batch)


def against_06(table, cost06, batch) -> str:
    """``lesson06_line``'s sentence from 07's ``table`` and 06's cost table ``cost06``."""
    ok = cost06[cost06["status"] == harness.OK].set_index("method")
    names = {"sync": "CUDA graph, check every step", "no_check": "CUDA graph, no check"}
    here = table[(table["regime"] == "compiled") & (table["batch_size"] == batch)
                 & (table["status"] == harness.OK)].set_index("method")
    if not set(names.values()) <= set(ok.index) or not set(names) <= set(here.index):
        return ""
    n = int(ok.at[names["sync"], "seq_len"])
    if int(ok.at[names["sync"], "batch_size"]) != batch or int(here.at["sync", "seq_len"]) != n:
        return ""
    there = {m: 1e3 * ok.at[names[m], "median_s"] / n for m in names}
    now = {m: round(float(here.at[m, "ms_per_step"]), 3) for m in names}  # as the table prints them
    cost = {k: 1e3 * (v["sync"] - v["no_check"]) for k, v in (("06", there), ("07", now))}
    if not all(c > 0 for c in cost.values()):
        return ""
    return (f"The same two CUDA-graph loops, at batch {batch} and {n} tokens: lesson 06, earlier in "
            f"this run, timed the check at {cost['06']:.0f} µs per step ({there['no_check']:.2f} ms "
            f"without it, {there['sync']:.2f} ms with it); this lesson's own runs time it at {cost['07']:.0f} "
            f"µs ({now['no_check']:.2f} and {now['sync']:.2f} ms). Each lesson times its own rounds; "
            "the host's speed moves between them (lesson 00).")


CALLED = {"interleaved": "two streams", "event": "one stream and an event"}  # in sentences


def _late_verdicts(part, judge=True):
    """Each late loop's verdict against the per-step sync at one point (``stats.plain``, from
    the rounds) and whether it is told apart as faster; the resolved loops first."""
    ms = part.set_index("method")["ms_per_step"]
    out = {}
    for name in ("interleaved", "event"):
        ratio = stats.row_speedup(part, name, "sync")
        out[name] = (stats.plain(ratio, judge, medians=ms["sync"] / ms[name], every=True),
                     judge and stats.verdict(ratio) == stats.FASTER)
    return dict(sorted(out.items(), key=lambda kv: not kv[1][1]))


def answer_line(row, part, judge=True) -> str:
    """The lesson's answer ("In one line") at one point of the CUDA-graph step: each late loop's
    verdict against the per-step sync (from the rounds), the loops told apart first, and the
    share of the check's cost won back (from the medians) only where told apart; the check's
    cost per step once, after the first share. Where both are told apart and the table's medians
    read otherwise than the rounds (a medians' note, or the two loops ranked the other way), the
    verdicts come without notes and ``_two_readings`` says which reading is the answer and why
    the medians can differ, with both medians' ratios and the shares."""
    verdicts = _late_verdicts(part, judge)
    head = (f"In one line: with the CUDA-graph step at batch {int(row['batch_size'])}, reading the "
            "stop flag one step late, against the per-step sync: ")
    if judge and (why := _two_readings(row, part, verdicts)):
        return head + why
    parts = [f"{CALLED[name]}, {said}" + (f", and it {recovered_line(row, name, judge, cost=i == 0)}"
                                          if known else "")
             for i, (name, (said, known)) in enumerate(verdicts.items())]
    return head + "; ".join(parts) + "."


def _two_readings(row, part, verdicts) -> str:
    """Where both late loops are told apart as faster than the per-step sync but the table's
    medians read otherwise than the rounds (``stats.plain`` would add a medians' note to either,
    or the printed ratios rank the two loops the other way; round 29 read "1.32x faster
    (1.29–1.35; the table's medians: 1.36x)" as the lesson contradicting itself): the two
    verdicts without notes, that the rounds' reading is the answer, why the medians can differ,
    both medians' ratios and the shares won back (which follow the medians). No new range.
    Empty where the two readings agree."""
    late = ("interleaved", "event")
    if not all(verdicts[n][1] for n in late):
        return ""
    ms = part.set_index("method")["ms_per_step"]
    ratios = {n: stats.row_speedup(part, n, "sync") for n in late}
    medians = {n: ms["sync"] / ms[n] for n in late}
    said = {n: stats.plain(ratios[n]) for n in late}
    est = {n: round(ratios[n].estimate, 2) for n in late}
    by_ms = {n: round(medians[n], 2) for n in late}
    other = (est["interleaved"] - est["event"]) * (by_ms["interleaved"] - by_ms["event"]) < 0
    noted = any(stats.plain(ratios[n], medians=medians[n]) != said[n] for n in late)
    if not (other or noted):
        return ""
    pct = {n: row[f"{n}_recovered_pct"] for n in late}
    won = {n: ALL if whole_share(p) else "none of it" if p <= 0 else f"{p:.0f}%"
           for n, p in pct.items()}
    back = (f"both win back {won['event']}" if won["interleaved"] == won["event"] else
            f"two streams win back {won['interleaved']} and the event {won['event']}")
    return (f"two streams, {said['interleaved']}; one stream and an event, {said['event']}. "
            "These speedups, the lesson's answer, compare the loops round by round; the table's "
            "medians take each loop's middle time on its own, not always from the same round, so "
            "they can differ: two streams "
            f"{medians['interleaved']:.2f}x, the event {medians['event']:.2f}x"
            + (", ranking the two the other way" if other else "")
            + f"; of the check's {row['check_cost_us']:.0f} µs per step, {back}.")


ABOUT_SAME_PCT = 5  # at several batches, readings all within this: "about the same"
PRACTICAL_PCT = 2  # a difference told apart but under this is "about the same", never "faster"


def stream_event_line(table, judge=True, regime="compiled") -> str:
    """Whether the late read needs a second stream, read at every batch size of ``regime``: the
    event loop against two streams from the rounds, "1.01x faster (1.00-1.02)" or "can't tell
    apart on this machine (...)" (``stats.plain``, with the table's medians where they disagree),
    under a head from the verdicts; at several batches, where some are told apart and every
    estimate is within ``ABOUT_SAME_PCT``, that the two come out about the same (round 33:
    "depends on the batch" for 1.04x faster and 1.01x slower). Without rounds to judge, the method
    alone."""
    how = "one stream and an event queue step i before waiting for step i-1, as two streams do"
    rows = table[(table["regime"] == regime) & (table["status"] == harness.OK)]
    batches = sorted(int(b) for b in rows["batch_size"].unique())
    ratios, words, said = {}, {}, {}
    for b in batches if judge else []:
        part = rows[rows["batch_size"] == b]
        ratios[b] = ratio = stats.row_speedup(part, "event", "interleaved")
        if ratio.n < stats.MIN_TRIALS:
            return ""
        ms = part.set_index("method")["ms_per_step"]
        words[b] = stats.verdict(ratio)
        said[b] = stats.plain(ratio, medians=ms["interleaved"] / ms["event"])
        if words[b] != stats.NOISE and _apart_pct(ratio) < PRACTICAL_PCT:  # round 35
            words[b] = ABOUT_SAME
            said[b] = (f"{ABOUT_SAME}, {_apart_pct(ratio):.1f}% apart "
                       + stats.bracket(ratio, medians=ms["interleaved"] / ms["event"]))
    if not words:
        return f"The late read: {how} (the two are not timed against each other here)."
    kinds = set(words.values())
    head = ("The second stream buys nothing measurable" if kinds <= {stats.NOISE, ABOUT_SAME} else
            "The second stream buys nothing" if stats.SLOWER not in kinds else
            "The second stream buys time" if stats.FASTER not in kinds else
            "The second stream's worth depends on the batch")
    if len(batches) == 1:
        return (f"{head}. With the {REGIME_LABELS[regime]} step at batch {batches[0]}, one stream "
                f"and an event against two streams: {said[batches[0]]}.")
    # round 29: at several batches the verdicts in words, no range (the full copy of 6e28961
    # printed three ranges here, eight in the lesson; a lesson prints five); round 32: where the
    # event ran faster, that the second stream costs time there, in words
    apart = {b: _apart_pct(ratios[b]) / 100 for b in batches}
    if kinds != {stats.NOISE} and 100 * max(apart.values()) <= ABOUT_SAME_PCT:  # round 33
        return (f"With the {REGIME_LABELS[regime]} step, one stream and an event come out about the "
                f"same as two streams at every batch (within "
                f"{math.ceil(round(100 * max(apart.values()), 1))}%).")
    faster = [str(b) for b in batches if words[b] == stats.FASTER]
    if faster and stats.SLOWER not in kinds:
        head += (f", and at {_batches(faster)} it costs time: one stream and an event ran faster "
                 "there")
    return (f"{head}. With the {REGIME_LABELS[regime]} step, one stream and an event against two "
            "streams: " + "; ".join(f"at batch {b}, " + (ABOUT_SAME if words[b] == ABOUT_SAME else
                                                         stats.short(ratios[b])) for b in batches) + ".")


ABOUT_SAME = "about the same"


def _apart_pct(ratio) -> float:
    """How far apart two loops' times are, in percent of the faster: 1.003x either way is 0.3."""
    return 100 * (max(ratio.estimate, 1 / ratio.estimate) - 1)


def _batches(sizes) -> str:
    return ("batches " if len(sizes) > 1 else "batch ") + stats.listed([str(b) for b in sizes])


def recovered_line(row, name, judge=True, cost=False) -> str:
    """"recovers about 93% of the check's cost" (a rough share, from the medians) for one loop in a ``summary`` row, or that there is
    nothing to win back (the per-step sync is not told apart from no check at all); with
    ``cost``, the check's cost per step after the share; no claim on a
    run that cannot judge (a smoke run)."""
    if not judge:
        return "is not judged (smoke run: not a measurement)"
    pct = row[f"{name}_recovered_pct"]
    if math.isnan(pct):
        return (f"has nothing to win back: the check's own cost ({row['check_cost_us']:+.0f} µs "
                "per step) is below this machine's resolution")
    if pct <= 0:  # the late loop ran no faster than the per-step sync
        return (f"recovers none of the check's cost ({row['check_cost_us']:.0f} µs per step): it "
                f"ran {1e3 * (row[name] - row['sync']):.0f} µs per step slower than the per-step sync")
    cost_us = f" ({row['check_cost_us']:.0f} µs per step)" if cost else ""
    if whole_share(pct):  # as the table reads it: more than the check costs is noise
        return f"recovers all of the check's cost{cost_us}"
    return f"recovers about {pct:.0f}% of the check's cost{cost_us}"


PROFILED_LONGER = 1.02  # a profiled step this much over another (or the timed one) reads as longer
WAITED_US = 50  # a late loop's median profiled gap from this on: the GPU waited for something
OWN = {"sync": "the per-step sync's", "interleaved": "the two-stream loop's",
       "event": "the event loop's"}  # "<loop's> host step"
THE = {"sync": "the per-step sync", "interleaved": "two streams", "event": "the event loop",
       "no_check": "no check"}


def profile_line(gaps, timed_us=None, rounds=None) -> str:
    """The profiled CUDA-graph steps in words (``gaps``: a row per loop, medians over the steps of
    ``gap_before_us``, and ``cpu_us``, ``cpu_wait_us``, ``busy_us`` where known): each loop's GPU
    gap before a step, in µs only (round 37: "93% of it" read as a share won back). Then what the
    timeline shows where a late loop leaves a gap (from ``WAITED_US``) and its host works longer
    per step (CPU time less its waits) than the GPU: its profiled host step against the GPU's
    work and, where it is longer than the other late loop's, that one's, so that it costs more
    host work, which the profiler magnifies; then its step timed without the profiler
    (``timed_us``, by loop) against no check's. Else, where the per-step sync's profiled step ran
    over ``PROFILED_LONGER`` times its timed one, that. ``rounds``: the timed table's rows at the
    profiled point, for ``left_line``."""
    gap = gaps["gap_before_us"]
    late = [n for n in ("interleaved", "event") if n in gaps.index]
    if not late or "sync" not in gaps.index or not gap["sync"] > 0:
        return ""
    text = ("Profiled, the GPU's idle before a step (the median over the profiled steps): "
            + stats.listed([f"{gap[n]:.0f} µs with {THE[n]}" for n in ("sync", *late)]) + ".")
    known = {"cpu_us", "busy_us"} <= set(gaps.columns)
    host = {n: gaps.at[n, "cpu_us"] for n in gaps.index} if known else {}
    own = {n: host[n] - (gaps.at[n, "cpu_wait_us"] if "cpu_wait_us" in gaps else 0) for n in host}
    waited = [n for n in late if known and gap[n] >= WAITED_US and own[n] > gaps.at[n, "busy_us"]]
    if waited:
        busy = max(gaps.at[n, "busy_us"] for n in waited)
        slowest = min(host[n] for n in waited)
        other = [o for o in late if o not in waited and slowest > PROFILED_LONGER * host[o]]
        text += (" The timeline shows why: under the profiler " + stats.listed(
            [f"{OWN[n]} host step takes {host[n]:.0f} µs" if i == 0 else f"{OWN[n]} {host[n]:.0f} µs"
             for i, n in enumerate(waited)]) + f", longer than the GPU's work per step ({busy:.0f} "
                 "µs), so the GPU waits for the host"
                 + (f"; {OWN[other[0]]} takes {host[other[0]]:.0f} µs. {CALLED[waited[0]].capitalize()} "
                    f"cost more host work per step than {CALLED[other[0]]}, and the profiler "
                    "magnifies it" if other else "") + ".")
        if timed_us is not None and {*waited, "no_check"} <= set(timed_us.index):
            text += (" Timed, without the profiler, " + stats.listed(
                [f"{THE[n]} ran {timed_us[n]:.0f} µs per step" if i == 0 else f"{THE[n]} {timed_us[n]:.0f}"
                 for i, n in enumerate(waited)]) + f" against no check's {timed_us['no_check']:.0f} µs: "
                     "the timed table's win-back is the measure.")
    elif (known and timed_us is not None and "sync" in timed_us  # round 31: not 1695 against 1694
          and host["sync"] > PROFILED_LONGER * timed_us["sync"]):
        text += (" Profiled steps run longer than timed ones (the profiler's own host work: the "
                 f"per-step sync's {host['sync']:.0f} µs against {timed_us['sync']:.0f} timed), so "
                 "the timed table's win-back is the measure.")
    return text + left_line(gaps, timed_us, late, rounds)


def left_line(gaps, timed_us, late, rounds=None) -> str:
    """What the timed table leaves the ``late`` loops above no check at the profiled batch (µs
    per step, from ``timed_us``), where it is more than their profiled gaps: said plainly, and
    that this lesson does not measure where it goes; or, where the ``rounds`` (the timed rows at
    that point) tell neither late loop apart from no check, that their runs vary more than that.
    Empty otherwise."""
    if timed_us is None or "no_check" not in timed_us or not set(late) <= set(timed_us.index):
        return ""
    ms = lambda n: round(timed_us[n] / 1e3, 3)  # noqa: E731  as the table prints it
    left = [1e3 * (ms(n) - ms("no_check")) for n in late]
    if not min(left) > max(gaps.at[n, "gap_before_us"] for n in late):
        return ""
    span = (f"{min(left):.0f}" if round(min(left)) == round(max(left))
            else f"{min(left):.0f}–{max(left):.0f}")
    head = f" Timed, the late loops still run {span} µs per step above no check here"
    if rounds is not None and all(_noise(rounds, n, "no_check") for n in late):
        return head + ", less than their runs vary: set against no check, neither is told apart."
    return head + "; the profile does not show where that time goes."


def _noise(part, candidate, baseline) -> bool:
    """Whether the rounds of one point can't tell ``candidate`` apart from ``baseline`` (or are
    too few to judge)."""
    ratio = stats.row_speedup(part, candidate, baseline)
    return stats.verdict(ratio) == stats.NOISE  # too few rounds read as NOISE too
