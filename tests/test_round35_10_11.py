"""Round 35 (review of 2f157b6's full copies, lessons 10 and 11): 10 says its "x faster" lines
are the rounds' and its `×` columns the medians'; 11's rung-5 line says its graph replays only
what was timed alone; 11's intro no longer claims one change per rung; the bf16 share divides
the printed times; "span" is defined where it first appears, split-K only after it is explained."""
import json

import pandas as pd
import pytest

from helpers import bench
from helpers.course import budget, floor, kernels
from test_lessons_10_11_readings import DATA, GRAPH, REPO
from test_round33_10_11 import prompt_graph_case

PDL, PROMPT = "4 · + PDL and prefetch", "5 · + prompt in a graph"
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv"))
BF16 = sorted(p.name for p in DATA.glob("11_toward_the_floor_bf16-*.csv"))


def cells(stem):
    return ["".join(c["source"]) for c in
            json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]]


@pytest.mark.parametrize("name", TENS)
def test_10s_x_columns_are_the_medians_and_its_lines_the_rounds(name):
    """(1) 6.25 in the table beside "6.40x faster": the heading says which is which."""
    heading = next(c for c in cells("10_cuda_graph_step") if c.startswith("## What it means"))
    flat = " ".join(heading.split())
    assert "from the interleaved rounds" in flat and "`×` columns divide its medians" in flat
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    view = bench.ladder_view(table).set_index("method")
    at = table[table["seq_len"] == n].set_index("method")
    for old, column in [("naive", "× naive"), ("generate() static", "× generate() static")]:
        if column in view.columns and old in at.index and GRAPH in at.index:
            medians = at.loc[old, "median_s"] / at.loc[GRAPH, "median_s"]
            assert view.loc[GRAPH, column] == round(medians, 2)
            assert "x faster" in floor.rounds_ratio(table, GRAPH, old, True, seq_len=n)
    if name == "10_cuda_graph_step-2f157b6.csv":  # the review's pair
        assert view.loc[GRAPH, "× naive"] == 6.25
        assert floor.rounds_ratio(table, GRAPH, "naive", True, seq_len=n).startswith("6.40x faster")


@pytest.mark.parametrize("name", ELEVENS)
@pytest.mark.parametrize("eager", [(12.9, 1.9), (14.7, 1.9), (17.5, 1.9)])
def test_11s_prompt_graph_line_says_the_graph_replays_only_the_timed_prefill(name, eager):
    """(2) The code: FastDecoder's graph captures `prefill`, the function prefill_cost times."""
    case = prompt_graph_case(name, eager)
    if case is None:
        return
    line, saved, idle = case
    said = ("That graph replays only what was timed alone (the prefill: the prompt's forward, the "
            "cache copies, the first token); where the rest of the drop comes from, this lesson "
            "does not measure.")
    assert line.endswith(said) == (saved - idle > floor.CLOSE_US)
    assert "In the code" not in line and "only in its class" not in line
    if name == "11_toward_the_floor-2f157b6.csv" and eager == (12.9, 1.9):  # the review's line
        assert "took 0.166 ms off each step (0.626 -> 0.460 ms" in line
        assert "37 µs more than the eager prompt's whole time per step timed alone (0.129 ms" in line


def test_what_11s_prefill_graph_replays_is_what_prefill_cost_times():
    code = "\n".join(cells("11_toward_the_floor"))
    assert "capture_graph(lambda: prefill(self.model, self.state, prompt, self.eos, stops))" in code
    assert "RUNGS[PROMPT] = lambda m, length: FastDecoder(m, P.batch_size, length, eos, 1)" in code
    assert "floor.prefill_cost(decoders[PDL], prompt, P.device, P.repeats)" in code


def test_11s_intro_no_longer_says_each_rung_changes_one_thing():
    """(3) Rung 3 replaces every kernel at once."""
    flat = " ".join(cells("11_toward_the_floor")[0].split())
    assert "changes one thing" not in flat
    # round 37: said once, in the list (the intro's paragraph now says why rung 1, plainly)
    assert "rung 3: this lesson's Triton kernels, every part of the step at once" in flat


@pytest.mark.parametrize("name", BF16)
def test_11s_bf16_share_divides_the_printed_times(name):
    """(4) 0.331 / 0.451 printed as 74%: the share now comes from the printed values."""
    run = name.split("bf16-")[1][:-len(".csv")]
    row = pd.read_csv(DATA / name).iloc[0]
    rungs = pd.read_csv(DATA / f"11_toward_the_floor-{run}.csv")
    last = rungs[rungs["method"].str.contains("steps/replay")].iloc[0]
    fast = last["median_s"] / last["seq_len"] * 1e3
    line = kernels.bf16_line(row, fast).splitlines()[1]
    faster = round(fast, 3) / round(row["per_step_ms"], 3)  # round 37: a ratio, not a second %
    assert line.startswith(f"Half the bytes made the step {faster:.2f}x faster, from {fast:.3f} ms "
                           f"(float32) to {row['per_step_ms']:.3f} ms; ")
    if run == "2f157b6":
        assert "1.36x faster, from 0.451 ms (float32) to 0.331 ms" in line


def test_11_defines_span_at_first_use_and_split_k_after_it_is_explained():
    """(5) "span" defined where it first appears; the split-K row kernels named only under the
    GEMM table, after split-K is explained."""
    code = cells("11_toward_the_floor")
    first = next(i for i, c in enumerate(code) if "span" in c)
    assert "from its first kernel's start to its last one's end" in " ".join(code[first].split())
    explained = next(i for i, c in enumerate(code) if "(split-K)" in c)
    assert not any("split-K row kernels" in c for c in code[:explained])
