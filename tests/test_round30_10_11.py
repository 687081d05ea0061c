"""Round 30's review of lessons 10 (full) and 11 (workshop), checked on every frozen GPU table."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import floor, stats
from tests.test_round28_10_11 import per_launch10

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
GRAPH, MOST = "graph, decode_step, 1/launch", "graph, decode_step, 4/launch"
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv")
                 if "3 · Triton kernels" in set(pd.read_csv(p)["method"]))  # numbered rungs
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")


def cells(stem):
    return ["".join(c["source"]) for c in
            json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]]


def test_11s_plot_prose_promises_no_pdl_saving():
    """(1) The workshop copy: "PDL can save more than rung 3's idle" beside "can't tell apart"."""
    plot = next(c for c in cells("11_toward_the_floor") if c.startswith("## Plot"))
    flat = " ".join(plot.split())
    assert "save" not in flat
    # round 31: the launch is said in the intro and above; the gain is PDL's and prefetch's together
    assert "a kernel's wait counts as busy time" in flat
    assert "What it means gives what PDL and prefetch bought together" in flat


@pytest.mark.parametrize("name", ELEVENS)
def test_11s_takeaway_names_the_largest_gain_after_the_triton_kernels(name):
    """(2) Computed: the rung after rung 3 with the largest clear gain, and whether it is host work."""
    table = pd.read_csv(DATA / name)
    rungs, n = list(table["method"]), int(table["seq_len"].max())
    triton = "3 · Triton kernels"
    host = [r for r in rungs if r.split(" · ")[0] in ("5", "6")]
    line = floor.largest_after_line(table, rungs, triton, host, True, seq_len=n)
    later = rungs[rungs.index(triton):]
    gains = {new: stats.row_speedup(table, new, old, seq_len=n) for old, new in zip(later, later[1:])}
    faster = {m: r for m, r in gains.items() if stats.verdict(r) == stats.FASTER}
    assert line.startswith("After rung 3 (Triton kernels), ")
    if not faster:
        assert line.endswith("no rung is faster than the one before it in this run.")
        return
    best = max(faster, key=lambda m: faster[m].estimate)
    assert f"rung {best.split(' · ')[0]}'s" in line and f"{stats.short(faster[best])} than" in line
    assert line.endswith("host work, not a kernel." if best in host else "a change on the GPU side.")
    assert not RANGE.search(line)  # no range added: the rung's own line above has it
    # the same words as that rung's line in What it means
    assert floor.rounds_ratio(table, best, later[later.index(best) - 1], True,
                              seq_len=n).startswith(stats.short(faster[best]))
    if name == "11_toward_the_floor-74b9f45-workshop.csv":  # the review's copy
        assert line == ("After rung 3 (Triton kernels), the largest gain is rung 5's (prompt in a "
                        "graph), 1.55x faster than the rung before: host work, not a kernel.")
    assert floor.largest_after_line(table, rungs, triton, host, False, seq_len=n) == ""  # smoke


def test_11_prints_the_largest_gain_in_its_takeaways():
    code = cells("11_toward_the_floor")
    takeaway = next(c for c in code if c.startswith('print("In one line: "'))
    assert "floor.largest_after_line(table, list(RUNGS), TRITON, (PROMPT, FAST), judge, seq_len=n)" \
        in takeaway


def test_11_labels_10s_time_with_its_preset_sizes():
    """(3) The workshop copy's 1.333 ms (batch 16, 50 tokens) read as the full preset's 1.335."""
    line = floor.against_tenth(0.443, 1.477, 1.333, "6 · + 10 steps/replay", (1.11, 1.04), (16, 50))
    assert line.startswith("Notebook 10's step ('graph, decode_step, 1/launch') takes 1.333 ms per "
                           "step in notebook 10's run of this preset (batch 16, 50 new tokens); ")
    assert "in this run" not in line
    code = "\n".join(cells("11_toward_the_floor"))
    assert "(start_gpu, tenth_gpu), (P.batch_size, n)))" in code
    # this_run_ms reads 10's row at the same batch and tokens, so the label is true
    assert "batch_size=P.batch_size,\n                                      seq_len=n)" in code


def pairs10(table):
    return [(w, GRAPH, o) for w, o in [("the same step in a graph", "decode_step, eager"),
            ("against naive", "naive"), ("against generate() static", "generate() static")]
            if o in set(table["method"])]


@pytest.mark.parametrize("name", TENS)
def test_10s_note_names_the_pairs_whose_medians_lie_outside_their_range(name):
    """(4) "1.82x faster (1.70–1.97; the table's medians: 1.69x)" and a note that never named it."""
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    pairs = pairs10(table)
    note = floor.rounds_note(table, pairs, True, seq_len=n)
    outside = [w for w, new, old in pairs
               if stats.medians_outside(table, new, old, True, seq_len=n) is not None]
    for w, new, old in pairs:  # the pair's own line shows its medians exactly when it is named
        line = floor.rounds_ratio(table, new, old, True, seq_len=n)
        assert ("the table's medians" in line) == (w in outside)
    if outside:
        assert f"The two can differ, even outside the range ({stats.listed(outside)}), because" in note
    else:
        assert "even outside" not in note
    assert not RANGE.search(note)
    if name == "10_cuda_graph_step-74b9f45.csv":
        assert "even outside the range (against generate() static)" in note
        assert "here generate() static's took 216 to 309 ms." in note


@pytest.mark.parametrize("name", TENS)
def test_10s_per_launch_line_is_two_short_sentences_with_one_range(name):
    """(5) Two verdicts, a range and a step count in one sentence: now one verdict a sentence
    (round 33: the per-step one first; whole runs in words only where they read otherwise)."""
    if (read := per_launch10(name)) is None:  # the workshop preset: graph_steps [1]
        return
    table, n, line = read
    first, dot, second = line.partition(". A whole run")
    assert first.startswith("Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4)")
    assert len(RANGE.findall(first)) == 1 and not RANGE.search(second)
    assert line.endswith(".") and len(second) < 120
    per = floor.per_step_ratio(stats.row_speedup(table, MOST, GRAPH, seq_len=n), n, 4)[1]
    assert f"(time at 1 ÷ at 4): {stats.plain(per)}" in first
    if name == "10_cuda_graph_step-74b9f45.csv":  # the review's line
        assert line == ("Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): "
                        "can't tell apart on this machine (0.97–1.01).")
