"""Round 24 of mends, lessons 00 and 01, checked on every real GPU table (full and workshop
presets): 00 names the rounds whose A / B lay farthest from 1 and reads the interval below and
above its estimate (``intro.reach``), and gives the table's medians without a direction word
beside "can't tell apart" (``intro.with_estimate``); 01's reason (``intro.growth_why``) states
the measured numbers in labelled lines instead of "about as N" and "stayed about the same".
The published 3deacb3 tables (full, and the workshop preset's) are frozen in tests/data, because
``figures/data`` changes with every publication."""
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, intro, stats
from tests.test_round23_00_01 import FULL_01, WS_00, WS_01, _table

DATA = Path(__file__).parent / "data"

ZERO = {"3deacb3": lambda: pd.read_csv(DATA / "00_setup-3deacb3.csv"),
        "3deacb3-workshop": lambda: pd.read_csv(DATA / "00_setup-3deacb3-workshop.csv"),
        "f4bf2b7-workshop": lambda: _table(WS_00),
        **{name: (lambda name=name: pd.read_csv(DATA / f"00_setup-{name}.csv"))
           for name in ("f4bf2b7", "ba37cc3", "8973374", "90c3788", "eb4fe0c", "6bba703-workshop")}}

ONE = {"3deacb3": lambda: pd.read_csv(DATA / "01_naive_generation-3deacb3.csv"),
       "3deacb3-workshop": lambda: pd.read_csv(DATA / "01_naive_generation-3deacb3-workshop.csv"),
       "f4bf2b7": lambda: _table(FULL_01), "f4bf2b7-workshop": lambda: _table(WS_01),
       **{name: (lambda name=name: pd.read_csv(DATA / f"01_naive_generation-{name}.csv"))
          for name in ("1c698c0", "65eabbe", "90c3788", "90c3788-published", "6bba703-workshop")}}


def _zero(table):
    n = int(table.set_index("method").loc["loop A", "seq_len"])
    return n, intro.rounds(table, "loop A", "loop B"), stats.row_speedup(table, "loop B", "loop A",
                                                                         seq_len=n)


def test_published_00_names_its_early_rounds_and_reads_the_interval_both_ways():
    """The twenty-fourth review's worst remark on 00: B ran about 20% slower in rounds 1 and 2 (in
    both orders) and faster in rounds 3 to 8, and no line said so; "about 9% either side" stood
    for 8% below and 7% above; "the table's medians: 1.01x faster" read as a second verdict."""
    table = ZERO["3deacb3"]()
    n, by_round, ratio = _zero(table)
    assert intro.reach(ratio, True, by_round).split("\n") == [
        "Round ratios A / B farthest from 1: rounds 1 (0.81x) and 2 (0.80x), B the slower in "
        "both, its two runs back to back; the other 6 rounds lay between 1.01x and 1.06x. So in a "
        "later lesson, one round as far from 1 as 0.80x is no evidence alone: a verdict reads all "
        "8 rounds.",  # round 34
        "Round 1, the first after "
        "the warm-up, took 262.7 ms (A) and 324.3 ms (B), against medians of 229.0 and 226.3 ms.",
        "The loop that ran first took longer in 4 of the 8 rounds, about half: this run shows no "
        "cost of running first."]  # round 37  # round 36  # round 32: no repeated ratios
    said = intro.with_estimate(stats.say(table, "loop B", "loop A", True, seq_len=n), ratio)
    assert said == "0.97x, can't tell apart on this machine (0.89–1.04; the table's medians: 1.01x)"
    ws = ZERO["3deacb3-workshop"]()
    _, ws_rounds, ws_ratio = _zero(ws)
    assert intro.reach(ws_ratio, True, ws_rounds).startswith(
        "Round ratios A / B farthest from 1: rounds 3 (1.59x) and 5 (0.78x); the other 3 rounds "
        "lay between 0.92x and 1.03x. So in a later lesson, one round as far from 1 as 1.59x is "
        "no evidence alone: a verdict reads all 5 rounds.")  # round 34


@pytest.mark.parametrize("name", sorted(ZERO))
def test_reach_names_the_farthest_rounds_on_every_real_table(name):
    table = ZERO[name]()
    n, by_round, ratio = _zero(table)
    lines = intro.reach(ratio, True, by_round).split("\n")  # round 28: order line
    first, second = lines[0], lines[-1]  # round 28c: round 1 and "told apart" on lines of their own
    # round 29: the interval's reach is cut, so "told apart" (where printed) comes last
    # round 32: the order count joins the first line; round 34: on its own line again
    assert len(lines) == 2 + ("Round 1, the first" in lines[1]) + \
        ("told the identical" in lines[-1])
    r = by_round["A / B"]
    far = sorted(abs(r.map(math.log)).nlargest(2).index)
    named = " and ".join(f"{int(by_round.loc[i, 'round'])} ({r[i]:.2f}x)" for i in far)
    assert f"rounds {named}" in first
    assert ", the first two" not in first  # round 32: the Round 1 line follows where it applies
    same_side = all(r[far] < 1) or all(r[far] > 1)
    assert ("the slower in both" in first) == same_side, (name, first)
    if same_side:
        assert f"{'B' if r[far[0]] < 1 else 'A'} the slower in both" in first
    rest = r.drop(far)
    assert f"the other {len(r) - 2} rounds lay between {rest.min():.2f}x and {rest.max():.2f}x" in first
    assert "either side" not in second and "cancels" not in first + second
    assert "% below to" not in second
    # the interval printed by the verdict, divided by the printed estimate, gives the same sizes
    said = intro.with_estimate(stats.say(table, "loop B", "loop A", True, seq_len=n), ratio)
    if said.startswith(f"{ratio.estimate:.2f}x, can't tell"):
        assert not re.search(r"medians: [\d.]+x[^)]*(faster|slower)", said), said
        lo, hi = (float(x) for x in re.search(r"\(([\d.]+)–([\d.]+)", said).groups())
        assert lo <= 1 <= hi


def test_notebook_00_mends():
    nb = json.load(open("notebooks/00_setup.ipynb"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    text = " ".join(" ".join("".join(c["source"]) for c in nb["cells"]
                             if c["cell_type"] == "markdown").split())
    # the printed parts of the step add up (the review: 1.4 + 4.4 printed beside 5.7)
    assert "wall, work = round(s[\"wall_ms\"], 3), round(s[\"gpu_ms\"], 3)" in code  # round 26: as the table
    assert "idles {wall - work:.3f}" in code
    # round 28c: the prose no longer previews what "What it means" prints
    assert "names the rounds that lay farthest from 1" not in text
    assert "no later lesson reads it" not in text  # round 36: cut
    assert "A speedup of 1.02 means" not in text and "1 time in 20" not in text


def _steps(table):
    ns = sorted(int(n) for n in table["seq_len"])
    return ns, pd.concat([budget.per_step(table, labels={"naive": f"{n} tokens"}, seq_len=n)
                          for n in ns], ignore_index=True)


def test_published_01_states_the_measured_idle_time():
    """The twenty-fourth review's worst remark on 01: "The idle time grew 1.55x (324 -> 502 ms),
    about as N: per step it stayed about the same, about 2.8 ms" beside 3.24, 2.51 and 2.64 ms;
    six ratios in one paragraph; the explanation built on the medians' 2.74x, not the answer's."""
    table = ONE["3deacb3"]()
    assert intro.growth_why(table, 16).split("\n") == [
        "Why: the lines below split the median run into the GPU's work and its idle time; "
        "from 100 to 200 tokens the median run went from 889 to 2440 ms (2.74x).",  # round 29: the medians in the answer
        "The answer's 2.63x above reads every round instead: keep that one.",  # round 33
        "- Work: 565 -> 1938 ms (3.43x). Step t works on 16 + t positions (the prompt's included): "
        "3.53x as many in all, not 4x.",
        "- Idle: 324 -> 502 ms (1.55x) while N grew 2x; per step 3.24, 2.51 and 2.64 ms at 100, 200 "
        "and 300 tokens, 36%, 21% and 16% of the step: it did not move one way as the length grew.",
        "- Pace, by lesson 00's rule on these shares: host and GPU share the pace at 100 and 200 "
        "tokens; the GPU sets the pace at 300 tokens.",  # round 28
        "- Below N²: the idle time weighs more here: it took the median run from the work's 3.43x "
        "to 2.74x; the prompt term took the work from 4x to 3.53x.",  # round 37
        "- Sum: the median run grew less than the work's 3.43x: the work's and the idle "
        "time's growths weighted by their shares of the 100-token run, 0.64 × 3.43 + 0.36 × 1.55 "
        "= 2.75 ≈ 2.74."]  # round 35: the printed terms give 2.75, the medians 2.74
    assert intro.takeaway(table) == (
        "In one line: doubling the length from 100 to 200 tokens multiplied the time by 2.63x, less "
        "than the 4x of pure N² growth; split on the table's medians, the GPU work grew 3.43x and the "
        "idle time 1.55x.")  # round 28c


@pytest.mark.parametrize("name", sorted(ONE))
def test_growth_why_states_numbers_that_add_up_on_every_real_table(name):
    table = ONE[name]()
    said, one = intro.growth_why(table, 16), intro.takeaway(table)
    for phrase in ("about as N", "about the same", "less than N", "more than N", "stayed", "only"):
        assert phrase not in said and phrase not in one, (name, phrase)
    lines = said.split("\n")
    assert lines[0].startswith("Why: the lines below split the median run")
    head = lines[:next(i for i, x in enumerate(lines) if x.startswith("- Work: "))]
    lines = [lines[0]] + lines[len(head):]  # round 28c: the rounds' ratios on lines of their own
    assert lines[1].startswith("- Work: ") and lines[2].startswith("- Idle: ")
    t0, t1, grew = re.search(r"median run went from (\d+) to (\d+) ms \(([\d.]+)x\)", lines[0]).groups()
    w0, w1, wg = re.search(r"(\d+) -> (\d+) ms \(([\d.]+)x\)", lines[1]).groups()
    i0, i1, ig = re.search(r"(\d+) -> (\d+) ms \(([\d.]+)x\) while N grew 2x", lines[2]).groups()
    assert (int(t0), int(t1)) == (int(w0) + int(i0), int(w1) + int(i1)), (name, said)
    assert (grew, wg, ig) == (f"{int(t1) / int(t0):.2f}", f"{int(w1) / int(w0):.2f}",
                              f"{int(i1) / int(i0):.2f}")
    if ig != wg:  # the sum line says which way, from the same two printed ratios
        way = "less" if float(ig) < float(wg) else "more"
        assert f"- Sum: the median run grew {way} than the work's {wg}x" in said
    # the idle time per step, shortest and longest length: round 37, from the unrounded median and
    # work (budget.sentence's difference of rounded values is not printed in 01: budget_line cuts it)
    ns, step = _steps(table)
    per = re.search(r"per step ([\d.]+)(?:, [\d.]+)* and ([\d.]+) ms at", lines[2]).groups()
    ok = table[table["status"] == "ok"].sort_values("seq_len")
    want = [f"{1e3 * (t - g) / n:.2f}" for t, g, n in zip(ok["median_s"], ok["gpu_busy_s"], ok["seq_len"])]
    assert (per[0], per[1]) == (want[0], want[-1]), (name, per, want)
    assert f"split on the table's medians, the GPU work grew {wg}x and the idle time {ig}x." in one
    rounds = intro.doubling(table).split("by ")[1].split("x")[0]
    # round 29: the medians' ratio is named once, in the answer's parenthesis, not on two more lines
    assert "The answer above" not in said and (len(head) == 1 or (  # round 33: the answer's own line
        len(head) == 2 and head[1].startswith("The answer's "))), (name, head)
    assert "the table's medians" not in intro.doubling(table)  # round 32: named once, in the Why head


def test_notebook_01_mends():
    nb = json.load(open("notebooks/01_naive_generation.ipynb"))
    text = " ".join(" ".join("".join(c["source"]) for c in nb["cells"]
                             if c["cell_type"] == "markdown").split())
    assert "grows about as *N*" not in text and "stays near the same per step" not in text
    assert "The Sum line only accounts for" not in text  # round 27's; 28c: the Sum line says it
    assert "The workshop preset" not in text
