"""Round 23's mends of notebooks 10 and 11, read on real H100 tables: the published run
(f4bf2b7, frozen in tests/data), the earlier full runs and round 22's workshop copy (tests/data), and
the workshop tables of f4bf2b7 (frozen in tests/data)."""
import json
import math

import pandas as pd
import pytest

from helpers.course import budget, floor, stats, summary

from test_lessons_10_11_readings import DATA, EAGER, GRAPH, LABELS, MOST, REPO, rungs_table

TENS = ["ba37cc3", "8973374", "90c3788", "eb4fe0c"]
ELEVENS = ["ba37cc3", "8973374", "90c3788", "eb4fe0c", "6bba703-workshop"]


def ten(run):
    return pd.read_csv(DATA / f"10_cuda_graph_step-{'f4bf2b7' if run == 'published' else run}.csv")


def eleven(run):
    if run != "published":
        return rungs_table(run)  # the earlier runs' rung tables, relabelled as 11 names them now
    table = pd.read_csv(DATA / "11_toward_the_floor-f4bf2b7.csv")
    table["method"] = table["method"].replace(LABELS)
    return table


def tens():
    yield from TENS + ["published"]


def pairs_10(table):
    return [(w, GRAPH, o) for w, o in [("the same step in a graph", EAGER), ("against naive", "naive"),
                                       ("against generate() static", "generate() static")]
            if o in set(table["method"])]


def check_note(table, pairs, n):
    """Each ratio line carries no medians' note; the one note names exactly the comparisons
    whose medians' ratio prints otherwise, with that ratio."""
    note = floor.rounds_note(table, pairs, True, seq_len=n)
    assert note.startswith("The ratios above are the interleaved rounds' (notebook 00)")
    for label, new, old in pairs:
        line = floor.rounds_ratio(table, new, old, True, seq_len=n)
        cand, base = stats._row_trials(table, new, old, "wall", {"seq_len": n})
        medians, ratio = stats.medians_ratio(cand, base), stats.row_speedup(table, new, old, seq_len=n)
        said = floor._as_said(medians)
        outside = stats.medians_outside(table, new, old, True, seq_len=n)
        assert ("the table's medians" in line) == (outside is not None)  # round 25: on its line
        if said != floor._as_said(ratio.estimate) and outside is None:
            assert f"{said} ({floor._rung(label)})" in note
        elif outside is not None:  # round 30: named where the note says why, its ratio not again
            assert f"{said} ({floor._rung(label)})" not in note
            assert floor._rung(label) in note.partition("even outside the range (")[2].partition(")")[0]
        else:
            assert f"({floor._rung(label)})" not in note
    return note


@pytest.mark.parametrize("run", list(tens()))
def test_10_says_once_how_the_medians_differ(run):
    table = ten(run)
    note = check_note(table, pairs_10(table), 100)
    if run == "published":  # the review's 5.47x and 10.16x, named once
        assert "5.47x faster (the same step in a graph)" in note and "10.16x faster (against naive)" in note


@pytest.mark.parametrize("run", ELEVENS + ["published"])
def test_11_says_once_how_the_medians_differ(run):
    table = eleven(run)
    rungs = list(table["method"])
    note = check_note(table, [(b, b, a) for a, b in zip(rungs, rungs[1:])], int(table["seq_len"].max()))
    if run == "published":
        assert "1.49x faster (rung 2)" in note  # the review's 1.53x against 1.49x


def test_the_workshop_tables_read_the_same_way():
    table = pd.read_csv(DATA / "10_cuda_graph_step-f4bf2b7-workshop.csv")
    check_note(table, pairs_10(table), int(table["seq_len"].max()))
    assert floor.per_launch_line(table, GRAPH, GRAPH, 50, 1, True) == ""  # graph_steps [1]
    table = pd.read_csv(DATA / "11_toward_the_floor-f4bf2b7-workshop.csv")
    rungs = list(table["method"])
    check_note(table, [(b, b, a) for a, b in zip(rungs, rungs[1:])], int(table["seq_len"].max()))


def test_the_note_says_so_where_the_medians_agree():
    table = eleven("eb4fe0c")
    rungs = list(table["method"])
    assert floor.rounds_note(table, [(b, b, a) for a, b in zip(rungs, rungs[1:])], True,
                             seq_len=100).endswith("give the same ratios to two decimals.")
    assert floor.rounds_note(table, [], False, seq_len=100) == ""  # smoke run
    assert floor.rounds_note(table, [], True, seq_len=100) == ""  # no ratio read: no claim


@pytest.mark.parametrize("run", list(tens()))
def test_4_per_launch_is_read_per_decode_step_once(run):
    """Round 24: read over whole runs, as the table and the figure (test_round24_10_11)."""
    table = ten(run)
    line = floor.per_launch_line(table, MOST, GRAPH, 100, 4, True)
    # round 33: per decode step first, as 11 reads rung 6; only a slower step is left unexplained
    assert line.startswith("Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): ")  # round 36
    slower = "slower (" in line
    assert slower == line.endswith("why a step is slower at 4 per launch, this lesson does not measure.")
    if run == "published":
        assert "are 1.04x slower at 4 per launch" not in line  # round 33: per step, slower too
    assert floor.per_launch_line(table, MOST, GRAPH, 100, 4, False) == ""


def test_11_opens_with_notebook_10s_step_against_rungs_1_and_6():
    table = eleven("published")
    at = table.set_index("method")
    line = floor.against_tenth(at.loc["6 · + 10 steps/replay", "per_step_ms"],
                               at.loc["1 · bucketed step (eager ops)", "per_step_ms"],
                               ten("published").set_index("method").loc[GRAPH, "per_step_s"] * 1e3,
                               "6 · + 10 steps/replay")
    assert line == ("Notebook 10's step ('graph, decode_step, 1/launch') takes 1.423 ms per step in "
                    "this run; the ladder starts at rung 1, 1.620 ms, 1.14x slower than 10's step, "
                    "and ends at '6 · + 10 steps/replay', 0.481 ms, 2.96x faster than 10's step (the "
                    "two tables' medians: the lessons time in separate rounds, so no range).")
    # round 27b: the second line (wall clock and GPU work against 10's) needs both GPU works
    assert "1.20x faster than 10's step" in floor.against_tenth(0.5, 1.0, 1.2, "x")  # either way
    assert "no time of it" in floor.against_tenth(0.48, 1.62, math.nan, "x")


def budget_11(run):
    table = eleven(run)
    floor_ms = (table["per_step_ms"] / table["floor_ratio"]).iloc[0]
    return budget.per_step(table, list(table["method"]), floor=floor_ms,
                           seq_len=int(table["seq_len"].max()))


@pytest.mark.parametrize("run", ELEVENS + ["published"])
def test_what_the_prompts_graph_saved_is_read_plainly(run):
    b = budget_11(run)
    n = int(eleven(run)["seq_len"].max())
    graphed = ("4 · + PDL and prefetch", "5 · + prompt in a graph")
    for eager in [(14.2, 2.0), (19.1, 2.0), (8.4, 2.0)]:  # the times 10 and 11 printed
        line = floor.graph_prompt_line(b, eager, n, graphed)
        rows = b.set_index("method")
        before, after = (rows.loc[m, "wall_ms"] for m in graphed)
        assert line.startswith("Replaying the prompt from a graph (rung 4 to rung 5) took ")
        assert f"({before:.3f} -> {after:.3f} ms, the table's medians)" in line
        # round 28: the idle time is no ceiling; a larger drop is left unexplained, plainly
        assert "can take away" not in line and "no larger" not in line
        assert line.endswith(("this lesson does not measure.", "still runs).",
                              ": the drop matches it."))  # round 33: a rest of a few µs
    if run == "published":  # the review's 0.15 ms, now against the 0.12 ms of idle
        assert "took 0.151 ms off each step" in floor.graph_prompt_line(b, (14.2, 2.0), 100, graphed)
    assert floor.graph_prompt_line(b, (14.2, 2.0), n, (graphed[1], graphed[0])) == ""
    assert floor.graph_prompt_line(b, (math.nan, 2.0), n, graphed) == ""


def test_the_gap_above_the_floor_names_no_unmeasured_cause():
    b = pd.DataFrame({"method": ["g"], "gpu_ms": [1.16], "floor_ms": [0.2197]})
    line = floor.gpu_gap_line(b, "g")
    assert "cache buffer" not in line and "TF32" not in line and "not measure" in line


def cells(stem):
    return json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]


def text(stem, kind):
    return "\n".join("".join(c["source"]) for c in cells(stem) if c["cell_type"] == kind)


def test_the_lessons_text_carries_the_mends():
    prose10, code10 = text("10_cuda_graph_step", "markdown"), text("10_cuda_graph_step", "code")
    assert "08's ladder" not in prose10 and "`[None]`" not in prose10  # round 26: bucket-free
    assert "say_ratio" not in code10 and "rounds_note" not in code10  # round 31: cut from 10
    prose11, code11 = text("11_toward_the_floor", "markdown"), text("11_toward_the_floor", "code")
    assert "not checked here" not in prose11 and "tests/test_gpu.py" in prose11
    assert "PDL waits in it" not in code11 and "kernels + PDL waits" in code11
    assert "summary.WIDE" in code11 and "against_tenth" in code11 and "tenth_line" not in code11
    # the answer first: 10's step against rungs 1 and 6 is the first line What it means prints
    meaning = next(i for i, c in enumerate(cells("11_toward_the_floor"))
                   if "".join(c["source"]).startswith("## What it means"))
    first = "".join(cells("11_toward_the_floor")[meaning + 1]["source"])
    assert first.index("floor.against_tenth") < first.index('print(f"')


def test_the_gemm_table_is_one_block_when_wide():
    view = pd.DataFrame({"part": ["QKV", "LM head"],
                         "kernel": ["tk.qkv_attention (its GEMM)", "tk.lm_head_argmax"],
                         "shape": ["32x768 @ 768x2304", "32x768 @ 768x50257"],
                         "calls per step": [12, 1], "µs per step": [65.8, 56.4],
                         "GB/s (weight, input, output)": [1362.0, 2741.0]}).set_index("part")
    with pd.option_context(*summary.WIDE):  # as notebook 11 displays it
        said = repr(view)
    assert "\\" not in said and "..." not in said and len(said.splitlines()) == 4
