"""Round 28b's review of lesson 11 (workshop run 2518203), checked against every frozen table."""
import inspect
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers import fast_step, triton_kernels
from helpers.course import budget, floor, kernels
from helpers.course.presets import preset_values
from helpers.graphs import GraphDecoder, GraphSetup

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
PDL, PROMPT = "4 · + PDL and prefetch", "5 · + prompt in a graph"
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv"))
EAGERS = [(13.6, 1.5), (10.4, 2.0), (9.1, 2.0), (12.7, 2.5), (30.0, 2.0)]  # 2518203's first


def cells():
    nb = json.loads((REPO / "notebooks" / "11_toward_the_floor.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"]]


@pytest.mark.parametrize("name", ELEVENS)
@pytest.mark.parametrize("eager", EAGERS)
def test_the_prompts_graph_line_subtracts_its_printed_numbers_and_names_a_drop_over_the_whole(
        name, eager):
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    b = budget.per_step(table, list(table["method"]), floor=0.2, seq_len=n)
    line = floor.graph_prompt_line(b, eager, n, (PDL, PROMPT))
    if PROMPT not in set(table["method"]):
        assert line == ""
        return
    rows = b.set_index("method")
    before, after = (round(rows.loc[m, "wall_ms"], 3) for m in (PDL, PROMPT))
    saved = round((before - after) * 1e3)  # µs, from the medians as the line prints them
    whole, idle = round(eager[0] * 1e3 / n), round((eager[0] - eager[1]) * 1e3 / n)
    said = floor._us_as_said
    assert f"took {said(saved)} off each step ({before:.3f} -> {after:.3f} ms, the table's medians)" \
        in line
    assert (f"{saved - whole} µs more than the eager prompt's whole time per step timed alone "
            f"({said(whole)}, its GPU work included) and {saved - idle} µs more than its GPU-idle "
            f"part ({said(idle)}: host time a graph replaces)." in line) == (saved > whole)
    if idle + floor.CLOSE_US < saved <= whole:
        assert (f", {saved - idle} µs more than the eager prompt's GPU-idle time per step timed "
                f"alone ({said(idle)}: host time a graph replaces).") in line
    if idle < saved <= idle + floor.CLOSE_US:  # round 33: a few µs over: the drop matches
        assert line.endswith(f"{saved - idle} µs more than the eager prompt's GPU-idle time per "
                             f"step timed alone ({said(idle)}: host time a graph replaces): the "
                             "drop matches it.")
    elif saved > idle:  # only what differs in the code; the cause is left open
        assert (" That graph replays only what was timed alone (the prefill: the prompt's "
                "forward, the cache copies, the first token); where the rest of the drop comes "
                "from, this lesson does not measure.") in line  # round 35
    else:
        assert line.endswith(f"is {said(idle)} (host time a graph replaces; its GPU work still runs).")
    if name == "11_toward_the_floor-2518203-workshop.csv" and eager == (13.6, 1.5):  # the review
        assert "took 0.316 ms off each step (0.769 -> 0.453 ms" in line
        assert "44 µs more than the eager prompt's whole time per step timed alone (0.272 ms" in line
        assert "74 µs more than its GPU-idle part (0.242 ms" in line and "80 µs" not in line


def test_rung_5_differs_from_rung_4_only_in_fastdecoders_prefill():
    code = "\n".join(cells())
    assert "RUNGS[TRITON] = lambda m, length: GraphDecoder(m, P.batch_size, length, eos, " \
           "step=fast_decode_step)" in code
    assert "RUNGS[PDL] = RUNGS[TRITON]" in code
    assert "RUNGS[PROMPT] = lambda m, length: FastDecoder(m, P.batch_size, length, eos, 1)" in code
    assert "WITH_PDL = {PDL, PROMPT, FAST}" in code
    own = {k for k, v in vars(fast_step.FastDecoder).items() if inspect.isfunction(v)}
    assert own == {"__init__", "prefill"}  # __init__ passes the same step, and k = 1 as rung 4's
    assert inspect.signature(GraphSetup.__init__).parameters["steps_per_graph"].default == 1
    assert fast_step.FastDecoder.__mro__[1] is GraphDecoder


@pytest.mark.parametrize("preset", ["full", "workshop", "smoke"])
def test_which_rung_follows_rung_1_is_said_for_every_preset(preset):
    p = preset_values("11", preset)
    line = floor.rungs_scope_line(p["inductor_reference"], p["bf16"])
    assert ("rung 3 follows rung 1: the preset leaves out rung 2" in line) == \
        (not p["inductor_reference"])
    assert ("runs rungs 1 to 6" in line) == bool(p["inductor_reference"])
    intro = cells()[0]
    assert "the ladder starts here for it" not in intro
    assert ("rung 2 has Inductor fuse them where the preset sets\n`inductor_reference`; otherwise "
            "rung 3 follows rung 1.") in intro


def test_the_summary_names_no_unmeasured_cause():
    summary = next(c for c in cells() if "## Summary and takeaways" in c)
    assert "likely latency" not in summary
    # round 33: the GEMM table's own reading, printed below it, replaced the hypothesis
    assert "last line below says how much of the copy bandwidth" in summary


def test_split_k_row_kernels_are_counted_as_element_wise_and_the_lesson_says_so():
    # one block of the Triton step, in launch order, as the profiler names its kernels
    names = ["embed_kernel", "skinny_gemm_kernel", "decode_attention_kernel",
             "skinny_gemm_kernel", "rows_reduce_kernel", "skinny_gemm_kernel",
             "skinny_gemm_kernel", "rows_reduce_kernel", "skinny_gemm_kernel", "finish_step_kernel"]
    for kernel in set(names):
        assert hasattr(triton_kernels, kernel) or triton_kernels.triton is None
    labels = kernels.label_parts(names, 1)
    assert labels == ["element-wise", "QKV", "attention", "attention out", "element-wise",
                      "MLP up", "MLP down", "element-wise", kernels.LM_HEAD, "element-wise"]
    intro = next(c for c in cells() if c.startswith("## Where the starting step spends its time"))
    # round 35: said where split-K is explained, under the GEMM table, not before it
    assert "element-wise (every other kernel)" in intro and "split-K" not in intro
    assert "row kernels after attention out and MLP down" in kernels.gemm_rows_note()
    assert "count under element-wise" in kernels.gemm_rows_note()
