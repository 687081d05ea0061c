"""Round 28's review of lessons 10 and 11, checked against every frozen GPU table."""
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, floor, kernels, stats
from tests.test_round24_10_11 import _whole

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
GRAPH, MOST = "graph, decode_step, 1/launch", "graph, decode_step, 4/launch"
PDL, PROMPT = "4 · + PDL and prefetch", "5 · + prompt in a graph"
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv"))
PARTS = sorted(p.name for p in DATA.glob("11_toward_the_floor_parts-*.csv"))
EAGERS = [(12.0, 2.0), (10.4, 2.0), (9.2, 2.0), (30.0, 2.0)]  # 10's and 11's printed prompts, and more


def source(stem):
    cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    return ["".join(c["source"]) for c in cells]


def per_launch10(name):
    """10's 4-per-launch line on one frozen table: (table, new tokens, line), or None for the
    workshop preset (graph_steps [1])."""
    table = pd.read_csv(DATA / name)
    if MOST not in set(table["method"]):
        return None
    n = int(table["seq_len"].max())
    return table, n, floor.per_launch_line(table, MOST, GRAPH, n, 4, True)


@pytest.mark.parametrize("name", TENS)
def test_10s_4_per_launch_is_read_per_decode_step_and_only_a_slower_step_is_unexplained(name):
    if (read := per_launch10(name)) is None:
        return
    table, n, line = read
    ratio = stats.row_speedup(table, MOST, GRAPH, seq_len=n)
    steps, per = floor.per_step_ratio(ratio, n, 4)
    # round 33: per decode step first; whole runs in words only where they read otherwise
    assert f"Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): {stats.plain(per)}" in line
    differs = stats.verdict(ratio) != stats.verdict(per)  # round 36: the steps said where they explain
    assert (f"A whole run is " in line) == differs == (f"does {steps} steps, not {n - 1}" in line)
    assert "why it is slower" not in line  # the review: the cause named, then disowned
    assert line.endswith("this lesson does not measure.") == (stats.verdict(per) == stats.SLOWER)
    if name == "10_cuda_graph_step-898ea06.csv":  # the review's line: per step, can't tell apart
        assert "can't tell apart on this machine (0.986–1.004). A whole run" in line
        assert line.endswith("is 1.02x slower at 4 per launch, because it does 100 steps, not 99.")


def launch_pace10(name, eager, floor_ms):
    """10's per-launch bound on one frozen table: the line, the idle time per step as printed and
    the eager prompt's share of it, as the line should state them."""
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    b = budget.per_step(table, [GRAPH], floor=floor_ms, seq_len=n)
    row = b.set_index("method").loc[GRAPH]
    return (floor.launch_pace_line(b, GRAPH, 4, eager, n), budget.printed_idle(row),
            round((eager[0] - eager[1]) / n, 2))


@pytest.mark.parametrize("name", TENS)
@pytest.mark.parametrize("eager", EAGERS)
def test_10s_per_launch_bound_is_the_idle_time_less_the_prompts_and_says_11_differs(name, eager):
    if MOST not in set(pd.read_csv(DATA / name)["method"]):
        return
    line, idle, prompt = launch_pace10(name, eager, 0.219)
    if not line:
        return
    assert f"({idle:.2f} ms)" in line and f"; {prompt:.2f} ms of that idle time is the eager prompt's" in line
    rest = round(idle - prompt, 2)
    assert (f"at most the other {rest:.2f} ms" in line) == (rest > 0)
    assert "cannot help" not in line
    assert line.endswith("(in notebook 11, PDL's waits count as busy time, so there this bound "
                         "does not hold).")
    if name == "10_cuda_graph_step-898ea06.csv" and eager == (12.0, 2.0):  # the review's numbers
        assert "idle only 15% of the step (0.21 ms)" in line and "the other 0.11 ms" in line


@pytest.mark.parametrize("name", ELEVENS)
@pytest.mark.parametrize("eager", EAGERS)
def test_11s_graphed_prompt_line_never_calls_the_idle_time_a_ceiling(name, eager):
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    b = budget.per_step(table, list(table["method"]), floor=0.219, seq_len=n)
    line = floor.graph_prompt_line(b, eager, n, (PDL, PROMPT))
    if not line:  # an old table without these rungs
        assert PROMPT not in set(table["method"])
        return
    rows = b.set_index("method")
    # round 28b: in µs from the printed medians and prompt times, so the numbers subtract
    said = round((round(rows.loc[PDL, "wall_ms"], 3) - round(rows.loc[PROMPT, "wall_ms"], 3)) * 1e3)
    bound = round((eager[0] - eager[1]) * 1e3 / n)
    assert "can take away" not in line and "need not match" not in line
    if said > bound + floor.CLOSE_US:  # larger: by how much, and that it is not measured
        assert f"{said - bound} µs more than" in line and "GPU-idle" in line
        assert line.endswith("where the rest of the drop comes from, this lesson does not measure.")
    elif said > bound:  # round 33: a few µs over: the drop matches
        assert line.endswith(": the drop matches it.")
    else:
        assert line.endswith("(host time a graph replaces; its GPU work still runs).")
    if name == "11_toward_the_floor-898ea06.csv" and eager == (10.4, 2.0):  # the review's numbers
        assert "took 0.121 ms off each step" in line and "37 µs more" in line and "(84 µs:" in line


@pytest.mark.parametrize("name", PARTS)
def test_11s_ranking_of_parts_leaves_no_part_out_unsaid(name):
    side = pd.read_csv(DATA / name)
    low = next(c for c in side.columns if c.startswith("floor"))
    for rung in [c for c in side.columns[1:] if c != low]:
        table = pd.DataFrame({"part": side["part"], "us": side[rung], "floor_us": side[low],
                              "kernels": 1}).dropna()
        said = kernels.gaps_ranked(table)
        for part in table["part"]:
            if part in ("step (span)",) or part in kernels.BLOCK_GEMMS:
                continue
            assert part in said, (rung, part)
        if name == "11_toward_the_floor_parts-898ea06.csv" and rung.startswith("1 "):
            assert said.endswith("; the rest (LM head, copies) 59 µs together")


def test_11s_programs_line_sets_24_programs_beside_the_sms():
    assert kernels.programs_line(768, 132) == (
        "this GPU has 132 SMs (streaming multiprocessors, each running programs); a GEMM with "
        "N = 768 at 32 columns per program runs 24 programs, 96 with split-K in 4")
    code = source("11_toward_the_floor")
    assert any("kernels.programs_line(model.config.n_embd" in c for c in code)
    assert any("the line below counts them beside the GPU's SMs" in c for c in code)  # round 32: inline


def test_11_says_what_rung_1_is_against_10s_step_and_closing_lines_do_not_repeat():
    eleven, ten = source("11_toward_the_floor"), source("10_cuda_graph_step")
    assert "The first line under What it means compares the two" in eleven[0]  # round 34: no hedge
    assert "otherwise rung 3 follows rung 1" in eleven[0]  # round 28b, kept in round 29
    one = next(c for c in ten if 'print("In one line: "' in c)
    assert "naive loop;" not in one and "GPU's work" not in one  # printed in the cell above
    table = pd.read_csv(DATA / "11_toward_the_floor-898ea06.csv")
    line = floor.ladder_line(table, list(table["method"]), True, seq_len=100)
    assert line == ("\u201c1 · bucketed step (eager ops)\u201d takes 1.620 ms per step, 7.39x the "
                    "floor; rung 6 takes 0.482 ms per step, 2.20x the floor; against rung 1: 3.35x "
                    "faster (3.26–3.42).")
    assert not math.isnan(table["floor_ratio"].iloc[0])
