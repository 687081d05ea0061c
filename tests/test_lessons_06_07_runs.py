"""The sentences notebooks 06 and 07 print, read from the tables of five real H100 runs
(tests/data/NN_*-<commit>.csv: the published 12:29 full run of ba37cc3, the 09:46, 06:54 and
05:14 full runs, and the 13:41 workshop run of 6bba703 that round 22's students read): each must
say only what its own rounds tell. 06 states no cost where its rounds can't tell the two loops
apart, says in words what its runs show where they are too few for a range, and names who sets a
step's pace only by lesson 00's rule; 07's closing line agrees with its claim line, and a preset
with one batch size says the claim is not checked."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, profiling, stats

DATA = Path(__file__).resolve().parent / "data"
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
WORKSHOP = "6bba703-workshop"
FULL = ["ba37cc3", "8973374", "90c3788", "eb4fe0c"]
RUNS = FULL + [WORKSHOP]


def table(name, run):
    return pd.read_csv(DATA / f"{name}-{run}.csv")


def early_stop(run):
    """06's early-stop table with the tokens per row each loop ran (the full runs' CSVs predate
    the column: 80, the longest row, with the check)."""
    t = table("06_eos_sync", run)
    if "tokens" not in t:
        t["tokens"] = [80 if m == eos_sync.CHECK else c for m, c in zip(t["method"], t["seq_len"])]
    return t[t["status"] == "ok"]


def cost_parts(run):
    cost = table("06_eos_sync_regimes", run)
    steps = budget.per_step(cost, seq_len=int(cost["seq_len"].iloc[0]))
    return cost, steps, eos_sync.unresolved(cost)


def rounds(cost, method):
    return eos_sync.per_step_rounds(cost, method)


@pytest.mark.parametrize("run", RUNS)
def test_06_cost_is_stated_only_where_the_rounds_tell(run):
    cost, steps, unclear = cost_parts(run)
    wall = steps.set_index("method")["wall_ms"]
    line = eos_sync.cost_line(steps, cost, unclear)
    assert line.startswith("With the eager step") and "\n" in line  # a line per step
    for regime in ("eager", "CUDA graph"):
        check, free = wall[f"{regime}, {eos_sync.CHECK}"], wall[f"{regime}, {eos_sync.FREE}"]
        ratio = stats.row_speedup(cost, f"{regime}, {eos_sync.FREE}", f"{regime}, {eos_sync.CHECK}")
        c, f = rounds(cost, f"{regime}, {eos_sync.CHECK}"), rounds(cost, f"{regime}, {eos_sync.FREE}")
        if regime in unclear:
            assert stats.verdict(ratio) != stats.FASTER
            assert f"With the {regime} step the check costs" not in line
            if max(c) < min(f):  # a clean separation is said as such, never called noise
                assert (f"With the {regime} step the loop with the check was faster in every one "
                        f"of its {len(c)} rounds ({min(c):.2f} to {max(c):.2f} ms per step with the "
                        f"check, {min(f):.2f} to {max(f):.2f} without it)") in line
                assert "this course does not explain why the loop without the check ran slower" in line
            elif len(c) >= stats.MIN_TRIALS:
                assert (f"With the {regime} step, how many times faster the loop without the check ran: "
                        "can't tell apart on this machine (") in line
                assert f"its rounds overlap ({min(c):.2f} to {max(c):.2f} ms per step" in line
        else:
            assert stats.verdict(ratio) == stats.FASTER
            assert (f"With the {regime} step the check costs {1e3 * (check - free):.0f} µs per "
                    f"step, {100 * (check - free) / free:.0f}% of the {free:.2f} ms step") in line
    assert "noise" not in line and "too few to judge" not in line and "0.79x" not in line
    assert ("Notebook 07 times the same two CUDA-graph loops again." in line) == ("CUDA graph" in unclear)
    # the budget's reading: a number added only where the rounds tell, and the pace by 00's rule
    view = profiling.check_cost(steps, unclear)
    reading = eos_sync.budget_line(view)
    assert ("the check adds" in reading) == ("CUDA graph" not in unclear)
    assert ("the rounds decide (below)" in reading) == ("CUDA graph" in unclear)
    row = view.loc[f"CUDA graph, {eos_sync.FREE}"]
    share = 100 * row["GPU idle ms"] / row["wall ms"]
    assert reading.endswith(f" Without the check the GPU idles {share:.0f}% of this step: "
                            f"{budget.pace(share, why=False)} (lesson 00's rule).")


def test_06_no_pace_is_typed_in_the_lesson():
    """Who sets a step's pace comes from budget.pace on the run's numbers, never from prose: the
    workshop's CUDA-graph step idles 35% without the check (both share the pace), the full
    runs' 12-14% (the GPU sets it)."""
    nb = json.loads((NOTEBOOKS / "06_eos_sync.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for typed in ("bottleneck", "sets the pace", "host-bound", "GPU-bound", "need not wait",
                  "host's noise"):
        assert typed not in prose, typed
    paces = {}
    for run in RUNS:
        _, steps, unclear = cost_parts(run)
        paces[run] = eos_sync.budget_line(profiling.check_cost(steps, unclear)).rsplit(": ", 1)[1]
    assert paces[WORKSHOP] == "host and GPU share the pace (lesson 00's rule)."
    assert all(paces[r] == "the GPU sets the pace (lesson 00's rule)." for r in FULL)


def test_06_workshop_run_reads_as_the_student_should():
    """The copy round 22 read: the eager loop with the check faster in every round (said, not
    called noise), the CUDA graph's cost 652 µs, and early stopping faster in every run."""
    cost, steps, unclear = cost_parts(WORKSHOP)
    assert unclear == ["eager"]
    line = eos_sync.cost_line(steps, cost, unclear)
    assert line == (
        "With the eager step the loop with the check was faster in every one of its 3 rounds (6.88 "
        "to 7.19 ms per step with the check, 8.37 to 9.73 without it), its GPU work about the same "
        "(1.19 against 1.19 ms): no cost shows, and this course does not explain why the loop "
        "without the check ran slower. The "
        "figure leaves the eager step out.\n"
        "With the CUDA graph step the check costs 652 µs per step, 46% of the 1.43 ms step "
        "without it, which runs 1.44x faster (1.41–1.47; the table's medians: 1.46x).")
    ok = early_stop(WORKSHOP)
    assert eos_sync.stop_speedup(ok, 80) == (
        "timed, every run that stopped early beat every run to the cap (320.5 ms at the slowest, "
        "against 586.5 ms at the fastest): 2.49x faster, averaged round by round (the table's "
        "medians: 2.66x); 3 runs give no range (it takes 5)")
    # identical work at both caps, 333.0 against 224.1 ms: said, with the runs' separation
    assert eos_sync.speedup_why(ok) == (
        "Without a range, this run cannot say whether the speedup differs from the token ratio "
        "(2.50). The loop with the check ran the same 32 tokens (its longest row) at caps 50 and 80, yet its median "
        "run took 333.0 ms at cap 50 and 224.1 ms at cap 80 (runs 321.9 to 383.0 against 224.1 to "
        "320.5 ms, no overlap), 1.49x apart: identical work, so times in this table move by about "
        "that much from one point to another.")


def test_06_published_run_reads_as_the_student_should():
    """The published full run: both costs unresolved, the CUDA graph's by one slow round of the
    no-check loop (1.89 ms per step against about 1.27); the eager medians the other way, said
    as overlapping rounds, not as noise."""
    cost, steps, unclear = cost_parts("ba37cc3")
    assert unclear == ["CUDA graph", "eager"]
    line = eos_sync.cost_line(steps, cost, unclear)
    assert ("With the CUDA graph step, how many times faster the loop without the check ran: "
            "can't tell apart on this machine (0.9998–1.2945); its rounds overlap (1.52 to 1.72 ms "
            "per step with the check, 1.26 to 1.89 without it).") in line
    assert "so this run cannot say what the check costs" not in line  # round 28c: the verdict once
    assert "weighs most" not in line and "pays more" not in line
    assert eos_sync.stop_speedup(early_stop("ba37cc3"), 200) == (
        "timed against running to the cap, 2.23x faster (2.10–2.36; the table's medians: 2.35x)")


def test_06_few_runs_say_what_they_show():
    """Fewer runs than a range takes: every run faster (either way) said in words, else that the
    runs overlap and why a verdict takes 5; a cost seen in every one of too few rounds is no
    number."""
    ok = early_stop(WORKSHOP)
    at = ok.set_index(["method", "seq_len"])
    flipped = ok.copy()
    flipped.loc[flipped["method"] == eos_sync.FREE, "trials_wall_ms"] = "100.0 110.0 120.0"
    flipped.loc[flipped["method"] == eos_sync.FREE, "median_s"] = 0.110
    assert eos_sync.stop_speedup(flipped, 80).startswith(
        "timed, every run to the cap beat every run that stopped early (120.0 ms at the slowest, "
        "against 224.1 ms at the fastest): ")
    mixed = ok.copy()
    mixed.loc[mixed["method"] == eos_sync.FREE, "trials_wall_ms"] = "300.0 600.0 700.0"
    said = eos_sync.stop_speedup(mixed, 80)
    assert said.startswith("timed against running to the cap, ") and "but the runs overlap (224.1 " \
        "ms to 320.5 ms stopping early, 300.0 ms to 700.0 ms to the cap): 3 runs are too few" in said
    assert said.endswith("3 runs are too few to tell them apart, since with fewer than 5 one odd "
                         "run sways the figure")
    assert at.loc[(eos_sync.CHECK, 80), "repeats"] == 3
    # the cost table: a cost in every one of 3 rounds, and 3 overlapping rounds
    cost, steps, _ = cost_parts(WORKSHOP)
    slow = cost.copy()
    slow.loc[slow["method"] == f"eager, {eos_sync.CHECK}", "trials_wall_ms"] = "500.0 510.0 520.0"
    slow.loc[slow["method"] == f"eager, {eos_sync.CHECK}", "median_s"] = 0.510
    note = eos_sync.unclear_note(slow, budget.per_step(slow, seq_len=50), "eager")
    assert note == ("With the eager step the loop without the check was faster in every one of "
                    "its 3 rounds (10.00 to 10.40 ms per step with the check, 8.37 to 9.73 without "
                    "it); by the table's medians the check costs 1.616 ms per step, 19% of the "
                    "8.58 ms step without it. The table reads \"can't tell\" all the same: 3 rounds "
                    "give no range (it takes 5).")
    slow.loc[slow["method"] == f"eager, {eos_sync.CHECK}", "trials_wall_ms"] = "400.0 450.0 500.0"
    note = eos_sync.unclear_note(slow, budget.per_step(slow, seq_len=50), "eager")
    assert note.startswith("With the eager step the two loops' 3 rounds overlap (8.00 to 10.00 ms "
                           "per step with the check, 8.37 to 9.73 without it): too few")


@pytest.mark.parametrize("run", RUNS)
def test_06_speedup_against_the_token_ratio(run):
    ok = early_stop(run)
    caps = sorted(ok["seq_len"].unique())
    low, cap = caps[0], caps[-1]
    at = ok.set_index(["method", "seq_len"])
    tokens = {m: int(at.loc[(m, cap), "tokens"]) for m in (eos_sync.CHECK, eos_sync.FREE)}
    token_ratio = tokens[eos_sync.FREE] / tokens[eos_sync.CHECK]
    ratio = stats.row_speedup(ok, eos_sync.CHECK, eos_sync.FREE, seq_len=cap)
    why = eos_sync.speedup_why(ok)
    runs = min(len(stats.method_trials(ok, m, seq_len=cap)) for m in (eos_sync.CHECK, eos_sync.FREE))
    said = (f"The token ratio ({token_ratio:.2f}) lies "
            + ("above" if ratio.high < token_ratio else "below" if ratio.low > token_ratio
               else "inside"))
    assert (said in why) == (runs >= stats.MIN_TRIALS)
    assert ("Without a range, this run cannot say" in why) == (0 < runs < stats.MIN_TRIALS)
    assert "because" not in why  # no cause the lesson does not measure
    same = {c: 1e3 * at.loc[(eos_sync.CHECK, c), "median_s"] for c in (low, cap)}
    drift = stats.medians_apart(same[low], same[cap])
    assert ("apart: identical work, " in why) == drift  # round 31: or only the top cap read
    if drift:
        assert f"its median run took {same[low]:.1f} ms at cap {low} and {same[cap]:.1f} ms" in why


@pytest.mark.parametrize("run", RUNS)
def test_06_profiled_gap_beside_the_timed_budget(run):
    cost, steps, unclear = cost_parts(run)
    gaps = table("06_eos_sync_gaps", run).groupby("method")[
        ["gap_before_us", "cpu_wait_us", "cpu_us"]].median().round(1)
    line = eos_sync.gap_line(gaps, steps, unclear)
    wall = steps.set_index("method")["wall_ms"]
    timed = {m: 1e3 * wall[f"CUDA graph, {m}"] for m in (eos_sync.CHECK, eos_sync.FREE)}
    for m, said in ((eos_sync.CHECK, "before each step with the check, after the CPU's wait"),
                    (eos_sync.FREE, "without it")):
        assert f"{gaps.at[m, 'gap_before_us']:.0f} µs {said}" in line
    if "CUDA graph" not in unclear:  # round 37: the timed cost only beside why the gap differs
        cost_us = timed[eos_sync.CHECK] - timed[eos_sync.FREE]
        assert f"{cost_us:.0f} µs per step" not in line
        assert (f"timed cost ({cost_us:.0f} µs)" in line) == ("because the host's step" in line)


def claim_word(line):
    return line.rsplit(": ", 1)[1].rstrip(".")


def test_07_one_batch_size_says_the_claim_is_not_checked():
    """The workshop copy: one batch size (16) and no eager step. The claim line says the claim is
    not checked, the closing line reads the two shares instead of repeating the stream line, the
    plan names what this preset times, and the sweep panel says it is not a sweep."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from types import SimpleNamespace

    t = table("07_stream_interleaving", WORKSHOP)
    summary = late_check.summary(t)
    assert late_check.article_claim_line(t, summary) == (
        "The article claims interleaving gains most at the smallest batch: this preset times the "
        "CUDA graph step at one batch size (16), so the claim is not checked here.")
    assert late_check.article_claim_line(t, summary, judge=False) == ""
    row = summary.iloc[0]
    closing = late_check.shares_line(summary, 16)
    assert closing == (
        "On this run, with the CUDA graph step at batch 16, the check costs 620 µs per step, 47% of "
        "the 1.33 ms step without it; two streams win back 93% of it and the event loop wins back "
        "97% of it.")
    assert f"{row['check_cost_us'] / (10 * row['no_check']):.0f}%" == "47%"
    assert closing != late_check.stream_event_line(t)
    assert late_check.shares_line(summary, 16, judge=False) == ""
    points = sorted({(r, int(b)) for r, b in zip(t["regime"], t["batch_size"])})
    assert late_check.plan_line(points) == (
        "Timed here: the CUDA-graph step at batch 16, all four loops; the eager step is not timed "
        "in this run.")
    full = late_check.plan_line([("compiled", 1), ("compiled", 32), ("compiled", 128), ("eager", 32)])
    assert full == ("Timed here: the CUDA-graph step at batches 1, 32 and 128, all four loops; the "
                    "eager step at batch 32, the per-step sync and no check only.")
    steps = budget.per_step(t.assign(method=t["method"].map(late_check.LOOP_LABELS)), seq_len=50)
    fig, axes = plt.subplots(ncols=2)
    late_check.plot(axes, t, steps, SimpleNamespace(batch_size=16))
    texts = " ".join(x.get_text() for x in axes[1].texts)
    assert "one batch size (16) in this preset" in texts and "not" in texts
    assert axes[1].get_xscale() == "linear" and "log" not in axes[1].get_xlabel()
    plt.close(fig)
    # the full runs: three batch sizes, a log axis and no note
    t = table("07_stream_interleaving", "ba37cc3")
    fig, axes = plt.subplots(ncols=2)
    late_check.plot(axes, t, steps, SimpleNamespace(batch_size=32))
    assert axes[1].get_xscale() == "log"
    assert not any("one batch size" in x.get_text() for x in axes[1].texts)  # round 37: µs labels
    plt.close(fig)


def test_07_prose_follows_the_preset():
    """No promise in 07's prose that a preset may not keep: the eager step's timing and the
    article's batch claim are said by printed lines; no pace typed; the lanes named."""
    nb = json.loads((NOTEBOOKS / "07_stream_interleaving.ipynb").read_text())
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for promise in ("(checked here)", "the eager step is timed only", "where the host sets the pace",
                    "The line below reads both", "why it differs between batch sizes",
                    "compare notebook 06's profile", "GPU stream"):
        assert promise not in prose, promise
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "late_check.plan_line(points)" in code and "late_check.shares_line(" in code
