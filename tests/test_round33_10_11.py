"""Round 33's mends of lessons 10 and 11 (review of the full H200 run 4448ee4), checked on every
frozen GPU table where a printed line could read differently from run to run."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, floor, kernels, stats

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
PARTS = sorted(p.name for p in DATA.glob("11_toward_the_floor_parts-*.csv"))
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv"))
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")
GRAPH, MOST = "graph, decode_step, 1/launch", "graph, decode_step, 4/launch"
PDL, PROMPT = "4 · + PDL and prefetch", "5 · + prompt in a graph"
# GPT-2 small at batch 32 (both GPU presets): K, N, calls per step of each weight GEMM
SHAPES = {"QKV": (768, 2304, 12), "attention out": (768, 768, 12), "MLP up": (768, 3072, 12),
          "MLP down": (3072, 768, 12), "LM head": (768, 50257, 1)}
BATCH = 32


def cells(stem):
    return json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]


def triton_table(name):
    """The Triton rung's GEMM rows of a frozen parts table as ``kernel_table`` gives them (part,
    us, GBps on the bytes ``gemm_bytes`` counts; the fused LM head writes no logits), and the copy
    bandwidth its floor column divides by (bytes/s)."""
    parts = pd.read_csv(DATA / name).set_index("part")
    column = next(c for c in parts.columns if "Triton" in c)
    rows = []
    for part, (k, n, calls) in SHAPES.items():
        moved = calls * (k * n + BATCH * k + (BATCH * n if part != "LM head" else 0)) * 4
        us = float(parts.loc[part, column])
        rows.append({"part": part, "us": us, "GBps": moved / us / 1e3})
    k, n, calls = SHAPES["QKV"]
    bandwidth = calls * k * n * 4 / (float(parts.loc["QKV", "floor µs"]) * 1e-6)
    return pd.DataFrame(rows), bandwidth


@pytest.mark.parametrize("name", PARTS)
def test_11s_gemm_line_reads_the_table_against_the_copy_bandwidth(name):
    """(1) The Summary's "this lesson does not measure" gave way to the GEMM table's own reading."""
    table, bandwidth = triton_table(name)
    line = kernels.gemm_bandwidth_line(table, bandwidth)
    layers = table[table["part"] != "LM head"]["GBps"]
    head = float(table.set_index("part").loc["LM head", "GBps"])
    copy = bandwidth / 1e9
    assert f"copy bandwidth of {copy:.0f} GB/s" in line
    assert f"reach {round(layers.min())} to {round(layers.max())} GB/s" in line
    assert f"the LM head (one large kernel) {round(head)} GB/s, {round(head) / copy:.0%}" in line
    # every frozen run: the layer GEMMs below 60% of the copy bandwidth, the LM head above 80%
    assert line.endswith(": the small GEMMs reach a fraction of the bandwidth, the large one "
                         "nearly all of it.")
    assert not RANGE.search(line) and "does not measure" not in line
    if name == "11_toward_the_floor_parts-4448ee4.csv":  # the review's numbers
        assert "reach 763 to 1467 GB/s, 18% to 35% of it" in line and "3678 GB/s, 89%" in line


def test_11s_gemm_line_says_nothing_judged_without_a_table_or_bandwidth():
    table, bandwidth = triton_table("11_toward_the_floor_parts-4448ee4.csv")
    assert kernels.gemm_bandwidth_line(table, float("nan")) == ""  # a CPU run
    assert kernels.gemm_bandwidth_line(table[table["part"] != "LM head"], bandwidth) == ""
    near = table.assign(GBps=0.9 * bandwidth / 1e9)
    assert kernels.gemm_bandwidth_line(near, bandwidth).endswith(": the large one comes near the bandwidth.")
    far = table.assign(GBps=0.3 * bandwidth / 1e9)
    assert kernels.gemm_bandwidth_line(far, bandwidth).endswith(
        ": neither the small GEMMs nor the large one comes near the bandwidth.")
    middle = table.assign(GBps=0.7 * bandwidth / 1e9)  # neither a fraction nor near: no reading
    assert kernels.gemm_bandwidth_line(middle, bandwidth).endswith("%.")


def test_11s_summary_drops_the_hedge_and_prints_the_gemm_line_only_when_judged():
    text = {"".join(c["source"]).split("\n")[0]: "".join(c["source"]) for c in cells("11_toward_the_floor")}
    summary = text["## Summary and takeaways"]
    assert "does not measure" not in summary and "hypothesis" not in summary
    closing = next(s for s in text.values() if s.startswith('print("In one line: "'))
    assert "if judge and TRITON in tables:" in closing
    assert "kernels.gemm_bandwidth_line(tables[TRITON], bandwidth)" in closing
    assert "(interleaved runs, not medians)" in text["## What it means"]  # (2)


def per_launch_case(name):
    """10's 4-per-launch line on a frozen table with its whole-run ratio, the steps, the
    per-step ratio and the run's length; None on a workshop table (graph_steps [1])."""
    table = pd.read_csv(DATA / name)
    if MOST not in set(table["method"]):
        return None
    n = int(table["seq_len"].max())
    ratio = stats.row_speedup(table, MOST, GRAPH, seq_len=n)
    return (floor.per_launch_line(table, MOST, GRAPH, n, 4, True), ratio,
            *floor.per_step_ratio(ratio, n, 4), n)


@pytest.mark.parametrize("name", TENS)
def test_10s_per_launch_line_leads_with_the_per_step_verdict(name):
    """(3) One verdict, the per-step one; whole runs said in words only where they read otherwise."""
    if (case := per_launch_case(name)) is None:
        return
    line, ratio, steps, per, n = case
    assert line.startswith(f"Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): "
                           f"{stats.plain(per)}")  # round 36: two short sentences
    assert len(RANGE.findall(line)) == 1 and line.count("can't tell apart on this machine") <= 1
    differs = stats.verdict(ratio) != stats.verdict(per)
    assert (f". A whole run is " in line) == differs == (f"does {steps} steps, not {n - 1}." in line)
    assert line.endswith("this lesson does not measure.") == (stats.verdict(per) == stats.SLOWER)
    if name == "10_cuda_graph_step-4448ee4.csv":  # the review's line
        assert line == ("Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): can't "
                        "tell apart on this machine (0.999–1.005). A whole run is 1.01x slower at "
                        "4 per launch, because it does 100 steps, not 99.")
    if name == "10_cuda_graph_step-5274887.csv":  # faster per step, no faster per run
        assert line.endswith("is no faster at 4 per launch, because it does 100 steps, not 99.")


def prompt_graph_case(name, eager):
    """11's prompt-graph line on a frozen table with an eager prompt time (ms, GPU ms), with the
    µs per step the graph saved and the eager prompt's idle µs per step, as printed; None where
    the table has no rung 5."""
    table = pd.read_csv(DATA / name)
    if PROMPT not in set(table["method"]):
        return None
    n = int(table["seq_len"].max())
    b = budget.per_step(table, list(table["method"]), floor=0.157, seq_len=n)
    line = floor.graph_prompt_line(b, eager, n, (PDL, PROMPT))
    rows = b.set_index("method")
    saved = round((round(rows.loc[PDL, "wall_ms"], 3) - round(rows.loc[PROMPT, "wall_ms"], 3)) * 1e3)
    idle = round((round(eager[0], 1) - round(eager[1], 1)) * 1e3 / n)
    return line, saved, idle


@pytest.mark.parametrize("name", ELEVENS)
@pytest.mark.parametrize("eager", [(17.5, 1.9), (11.8, 1.9), (10.4, 2.0)])
def test_11s_prompt_graph_line_hedges_only_a_rest_of_more_than_a_few_us(name, eager):
    """(5) 2 µs left over sent the reader looking for a missing effect: now the drop matches."""
    case = prompt_graph_case(name, eager)
    if case is None:
        return
    line, saved, idle = case
    rest = saved - idle
    assert line.endswith("this lesson does not measure.") == (rest > floor.CLOSE_US)
    assert line.endswith(": the drop matches it.") == (0 < rest <= floor.CLOSE_US)
    if name == "11_toward_the_floor-4448ee4.csv" and eager == (17.5, 1.9):  # the review's line
        assert line.endswith("took 0.158 ms off each step (0.616 -> 0.458 ms, the table's medians), "
                             "2 µs more than the eager prompt's GPU-idle time per step timed alone "
                             "(0.156 ms: host time a graph replaces): the drop matches it.")
