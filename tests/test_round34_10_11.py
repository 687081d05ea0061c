"""Round 34 (review of 4448ee4's full copies, lessons 10 and 11): proportion. 11's Setup no longer
repeats the intro's rung 2; its profiled-step line is broken into short lines; its intro's hedge
on rung 1 is cut; 10's closing line says where more steps per launch bought nothing, computed."""
import json

import pandas as pd
import pytest

from helpers.course import floor, kernels, stats
from helpers.course.presets import preset_values
from test_lessons_10_11_readings import DATA, GRAPH, LABELS, MOST, REPO

START = "1 · bucketed step (eager ops)"
PARTS = sorted(p.name for p in DATA.glob("11_toward_the_floor_parts-*.csv"))
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))


def cells(stem):
    return ["".join(c["source"]) for c in
            json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]]


@pytest.mark.parametrize("preset", ["full", "workshop", "smoke"])
def test_11s_setup_line_does_not_repeat_the_intros_rung_2(preset):
    p = preset_values("11", preset)
    line = floor.rungs_scope_line(p["inductor_reference"], p["bf16"])
    assert "\n" not in line and "Inductor, which generates" not in line
    assert "rung 2 has Inductor fuse them" in " ".join(cells("11_toward_the_floor")[0].split())


@pytest.mark.parametrize("name", PARTS)
def test_11s_profiled_step_lines_are_short_and_keep_the_numbers(name):
    side = pd.read_csv(DATA / name).set_index("part").rename(columns=LABELS)
    if START not in side.columns:
        return
    qkv = 12 * 768 * 2304 * 4  # the QKV weights' bytes, float32: the floor's bandwidth
    bandwidth = qkv / (side.loc["QKV", "floor µs"] * 1e-6)
    step = pd.Series({"kernels": 275.0, "us": side.loc["step (span)", START],
                      "floor_us": side.loc["step (span)", "floor µs"]})
    run = DATA / name.replace("_parts", "")
    floors = [step["floor_us"] / 1e3]  # the same floor: no third line
    t = pd.read_csv(run) if run.exists() else pd.DataFrame()
    if {"per_step_ms", "floor_ratio"} <= set(t.columns):
        floors.append(float((t["per_step_ms"] / t["floor_ratio"]).iloc[0]))  # Measure's floor
    for floor_ms in floors:
        text = kernels.profiled_step_lines(step, floor_ms, bandwidth)
        lines = text.splitlines()
        assert all(len(line.split()) <= 25 for line in lines), text
        assert f"275 kernels, {step['us']:.0f} µs per step" in lines[0]
        assert f"floor {step['floor_us']:.0f} µs" in lines[1]
        assert f"{bandwidth / 1e9:.0f} GB/s, the copy bandwidth every floor divides by" in lines[1]
        differ = f"{step['floor_us']:.0f}" != f"{floor_ms * 1e3:.0f}"
        assert (len(lines) == 3) == differ
        if differ:
            assert f"Measure's {floor_ms:.3f} ms floor adds" in lines[2]


def test_the_4448ee4_profiled_step_reads_as_the_review_quoted():
    step = pd.Series({"kernels": 275.0, "us": 1591.8, "floor_us": 156.3})
    assert kernels.profiled_step_lines(step, 0.15706, 4151e9) == (
        "rung 1's decode replays (no prompt), profiled: 275 kernels, 1592 µs per step\n"
        "  floor 156 µs: the GEMMs' weights and the filled keys and values at 4151 GB/s, the copy "
        "bandwidth every floor divides by\n"
        "  (Measure's 0.157 ms floor adds the biases, layer norms and position table)")


def test_11s_intro_has_no_hedge_on_rung_1():
    intro = " ".join(cells("11_toward_the_floor")[0].split())
    assert "may well be slower" not in intro
    assert "The first line under What it means compares the two." in intro


@pytest.mark.parametrize("name", TENS)
def test_10s_closing_clause_follows_the_per_step_verdict(name):
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    if MOST not in set(table["method"]):  # the workshop preset: graph_steps [1]
        assert floor.per_launch_clause(table, GRAPH, GRAPH, n, 1, True) == ""
        return
    clause = floor.per_launch_clause(table, MOST, GRAPH, n, 4, True)
    said = floor.per_launch_line(table, MOST, GRAPH, n, 4, True)
    per = said.split("): ", 1)[1]  # the per-step verdict, as the line above prints it
    if per.startswith("can't tell apart on this machine"):
        assert clause == "; 4 steps per launch bought nothing per step here"
    elif "slower" in per.split("(")[0]:
        assert clause == "; 4 steps per launch ran slower per step here"
    else:
        assert "faster" in per.split("(")[0] and clause == ""
    assert floor.per_launch_clause(table, MOST, GRAPH, n, 4, False) == ""  # smoke: nothing


def test_10s_closing_line_reads_4448ee4_and_the_summary_has_no_method_bullet():
    table = pd.read_csv(DATA / "10_cuda_graph_step-4448ee4.csv")
    assert floor.per_launch_clause(table, MOST, GRAPH, 100, 4, True) == \
        "; 4 steps per launch bought nothing per step here"
    ten = cells("10_cuda_graph_step")
    closing = next(c for c in ten if c.startswith('print("In one line: "'))
    assert "floor.per_launch_clause(table, MOST, GRAPH, n, k, judge)" in closing
    summary = next(c for c in ten if c.startswith("## Summary and takeaways"))
    assert "graph's own gain" not in summary
    few = table.assign(trials_wall_ms=table["trials_wall_ms"].str.split().str[:3].str.join(" "))
    assert floor.per_launch_clause(few, MOST, GRAPH, 100, 4, True) == ""  # too few to judge
    assert stats.MIN_TRIALS > 3
