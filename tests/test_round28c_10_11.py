"""Round 28c (proportion): cuts in lessons 10 and 11 keep every fact, on every frozen table."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import floor
from tests.test_round28_10_11 import launch_pace10

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
GRAPH = "graph, decode_step, 1/launch"
PDL, PROMPT = "4 · + PDL and prefetch", "5 · + prompt in a graph"
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv"))


def code(stem):
    cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
    return ["".join(c["source"]) for c in cells]


@pytest.mark.parametrize("name", TENS)
@pytest.mark.parametrize("eager", [(12.0, 2.0), (11.1, 1.5)])
def test_10s_per_launch_bound_keeps_its_numbers_once_shorter(name, eager):
    line, idle, prompt = launch_pace10(name, eager, 0.2)
    if not line:
        return
    assert f"({idle:.2f} ms)" in line and f"; {prompt:.2f} ms of that idle time is the eager prompt's, " \
        "run once per run, so " in line
    assert line.count("at any number per launch") == 1 and "(timed alone)" not in line


def test_10s_one_line_gives_the_answer_without_the_ms_printed_above_it():
    one = next(c for c in code("10_cuda_graph_step") if 'print("In one line: "' in c)
    # round 37: the floor as the GPU's own work's multiple (gpu_floor_clause), not the step's
    assert "floor.rounds_ratio(table, best, EAGER" in one and "floor.gpu_floor_clause(b, best)" in one
    assert "ms per step" not in one  # printed by What it means' first line and the budget


@pytest.mark.parametrize("name", ELEVENS)
def test_11s_cut_line_holds_no_fact_the_table_and_closing_line_lack(name):
    cells = code("11_toward_the_floor")
    assert not any("before the host-side" in c for c in cells)
    assert any('print("In one line: " + floor.ladder_line(' in c for c in cells)
    table = pd.read_csv(DATA / name)
    if "per_step_ms" not in table:  # an old table, before the ladder's columns
        return
    rungs = list(table["method"])
    line = floor.ladder_line(table, rungs, True, seq_len=int(table["seq_len"].max()))
    last = table.set_index("method").loc[rungs[-1]]
    assert f"{last['per_step_ms']:.3f} ms per step, {last['floor_ratio']:.2f}x the floor" in line
    if PDL in set(rungs):  # rung 4's time: in the table and in the prompt's graph line
        assert any('table[["method", "per_step_ms", "floor_ratio"' in c for c in cells)
