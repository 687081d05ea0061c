"""Round 21's mends of lessons 04 and 05, read on real GPU tables: the published run's CSVs
(figures/data/) and three earlier full runs' (frozen in tests/data/ as NAME-COMMIT.csv).

04: each step's operations are counted (the host's likely extra work, not stated as fact); the
floor's ratio divides the numbers the budget sentence prints; the 400-token times are printed
once (the budget sentence), the host line gives only each length's extra host time.
05: the compile cost a fresh process pays (this process's first graph) and the runs that repay
it; the share of the eager idle removed is named apart from the budget's idle share."""
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers.course import budget, stats  # noqa: E402
from helpers.course import compiled as c05  # noqa: E402
from helpers.course import static_cache as c04  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RUNS = ["8973374", "90c3788", "eb4fe0c"]  # the 09:46, 06:54 and 05:14 full runs of 2026-11-27


def tables(name):
    """The published table, then each earlier run's."""
    out = []
    path = REPO / "figures" / "data" / f"{name}.csv"
    if path.exists():
        out.append(("published", pd.read_csv(path)))
    for commit in RUNS:
        frozen = REPO / "tests" / "data" / f"{name}-{commit}.csv"
        if frozen.exists():
            out.append((commit, pd.read_csv(frozen)))
    if not out:
        pytest.skip(f"no {name}.csv")
    return out


# --- 04 ------------------------------------------------------------------------------------------

def test_04_each_step_s_operations_are_counted(tiny):
    model, prompt, _ = tiny
    inputs = c04.attention_inputs(model, prompt, "cpu")
    ops = inputs["ops per step"]
    assert ops["static"] > ops["dynamic"] > 0  # the in-place writes and the mask: more host work
    assert c04.ops_phrase(inputs) == (
        f"the static cache's decode step dispatches {ops['static']} PyTorch operations against "
        f"the dynamic cache's {ops['dynamic']}")
    assert c04.ops_phrase(None) == ""
    with c04.OpCount() as counted:
        model(prompt[:, :1])
    assert counted.count > 0


@pytest.mark.parametrize("run", range(4))
def test_04_printed_numbers_come_from_printed_numbers(run):
    found = tables("04_static_cache")
    if run >= len(found):
        pytest.skip("no such run's table")
    name, table = found[run]
    table = table[table["method"].isin(c04.EAGER)]
    lens = sorted(table["seq_len"].unique().tolist())
    point = c04.drawn_length(table, lens, True)
    floor = 0.33853  # round 21's published floor (the figure's 0.339, the sentence's 0.34)
    steps = budget.per_step(table, c04.METHODS, seq_len=point, floor=floor).round(2)
    said = budget.sentence(steps, c04.STATIC, c04.DYNAMIC)
    wall = re.search(r"wall clock went from [\d.]+ to ([\d.]+) ms", said).group(1)
    shown_floor, times = re.search(r"The floor is ([\d.]+) ms: this step takes ([\d.]+)x", said).groups()
    assert times == f"{float(wall) / float(shown_floor):.3g}", (name, said)
    # the host line: the extra host time per step only, each the difference of the idle times a
    # reader gets from the table (wall minus GPU per step, each to 0.01 ms); the drawn length's
    # the budget sentence's
    host = c04.host_line(table, lens)
    for extra, n in re.findall(r"([\d.]+) ms (?:more|less) at (\d+) tokens", host):
        n = int(n)
        each = budget.per_step(table, c04.METHODS, seq_len=n).set_index("method")
        idle = {m: round(each.at[m, "wall_ms"], 2) - round(each.at[m, "gpu_ms"], 2) for m in c04.EAGER}
        assert extra == f"{abs(idle[c04.STATIC] - idle[c04.DYNAMIC]):.2f}", (name, host)
        if n == point:
            assert f"went from {idle[c04.DYNAMIC]:.2f} ms to {idle[c04.STATIC]:.2f} ms" in said
    assert not re.search(r"\d against \d", host), host  # no pair of idle times repeated
    # the summary: no time per step (the budget sentence's), the medians' gap where it is named
    inputs = pd.DataFrame({"ops per step": [459, 551]}, index=["dynamic", "static"])
    line = c04.summary_line(table, steps, lens, True, point, inputs)
    assert " ms" not in line, line
    for n, pct in re.findall(r"(\d+) tokens \(the table's medians: (\d+)% apart", line):
        rows = table[table["seq_len"] == int(n)].set_index("method")["median_s"]
        shown = {m: round(1e3 * rows[m], 1) for m in c04.EAGER}  # as the table prints them
        ratio = max(shown[c04.STATIC] / shown[c04.DYNAMIC], shown[c04.DYNAMIC] / shown[c04.STATIC])
        assert pct == f"{ratio - 1:.0%}"[:-1], (name, line)
    assert line.endswith("dispatches 551 PyTorch operations against the dynamic cache's 459.")
    # the whiskers are in the legend
    fig, ax = plt.subplots()
    budget.plot(ax, steps)
    c04.plot_runs_range(ax, table, point)
    assert "whiskers: fastest to slowest run" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


# --- 05 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("run", range(4))
def test_05_a_fresh_process_pays_the_first_graph(run):
    found = tables("05_torch_compile")
    if run >= len(found):
        pytest.skip("no such run's table")
    name, table = found[run]
    compile_table = c05.compilation(table)
    said = c05.repay_line(compile_table, table)
    first = table[table["mode"] != "eager"].iloc[0]
    cost = first["check_first_call_s"] - first["median_s"]  # the full preset checked its tokens
    fresh = next(line for line in said.splitlines() if line.startswith("A fresh process"))
    assert f"here the first, {first['mode']}'s float32 check graph, took {cost:.1f} s" in fresh
    later = [g - m for _, r in table[table["mode"] != "eager"].iterrows()
             for g, m in ((r["check_first_call_s"], r["median_s"]), (r["first_call_s"], r["median_s"]))][1:]
    assert ("more than later graphs" in fresh) == (cost > max(later)), fresh
    # each count: the printed cost over the gain read off the table's medians (ms, 0.1)
    eager = round(1e3 * table.loc[table["mode"] == "eager", "median_s"].iloc[0], 1)
    assert re.search(r"repaid after \d+ runs of 100 tokens \(default\) and \d+ "
                     r"\(reduce-overhead\)\.$", fresh), fresh
    for count, mode in re.findall(r"(\d+)(?: runs of 100 tokens)? \(([\w-]+)\)", fresh):
        ms = round(1e3 * table.loc[table["mode"] == mode, "median_s"].iloc[0], 1)
        assert int(count) == math.ceil(round(cost, 1) / ((eager - ms) / 1e3)), (name, fresh)
    # the summary: against the loop it compiles, with both compile costs; no times per step
    methods = list(table["method"])
    line = c05.summary_line(table, compile_table, methods, 100, True)
    assert line.startswith(f"In one line: at 100 tokens, {methods[-1]} against the eager loop it "
                           "compiles (the static cache's): "
                           + stats.say(table, methods[-1], c05.EAGER, True, seq_len=100))
    assert line.endswith(f"this process's first graph, about what a fresh process pays, {cost:.1f} s.")
    assert " ms" not in line
    assert c05.summary_line(table, compile_table, methods, 100, False) == ""
    # the two shares named apart: the budget's of a loop's own step, the idle line's of eager's
    steps = budget.per_step(table, methods, seq_len=100, floor=0.2194)
    idle = c05.idle_line(steps, methods)
    assert re.findall(r"removing \d+% of the eager step's [\d.]+ ms of idle", idle)
    assert "% of eager's" not in idle


def test_05_fresh_line_without_a_check_graph():
    table = pd.DataFrame([
        {"method": c05.EAGER, "seq_len": 50, "status": "ok", "mode": "eager", "median_s": 0.4,
         "first_call_s": float("nan"), "check_first_call_s": float("nan"), "compile_s": 0.0,
         "graphs_compiled": 0},
        {"method": c05.name("reduce-overhead"), "seq_len": 50, "status": "ok",
         "mode": "reduce-overhead", "median_s": 0.1, "first_call_s": 12.1,
         "check_first_call_s": float("nan"), "compile_s": 12.0, "graphs_compiled": 1}])
    said = c05.repay_line(c05.compilation(table), table)
    assert "Reduce-overhead's timed graph was this process's first: about what a fresh process " \
        "pays." in said
    assert "float32 check" not in said
    line = c05.summary_line(table, c05.compilation(table), [c05.EAGER, c05.name("reduce-overhead")],
                            50, True)
    assert "first graph" not in line  # its timed graph was the first: one cost, said once
