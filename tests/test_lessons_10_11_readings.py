"""What notebooks 10 and 11 print from their tables, read from real H100 runs (tests/data: the
published 12:29 run ba37cc3, the 09:46, 06:54 and 05:14 runs, and round 22's workshop copy of 6bba703): the compact kernel table, the
reason more steps per launch cannot help, rung 6's extra step, the PDL legend, and the rung
numbers the text uses appearing in the labels the reader sees."""
import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers import bench  # noqa: E402
from helpers.course import budget, floor, kernels, stats, summary  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
RUNS = ["ba37cc3", "8973374", "90c3788", "eb4fe0c"]
GRAPH, MOST, EAGER = "graph, decode_step, 1/launch", "graph, decode_step, 4/launch", "decode_step, eager"
# the rung labels of those runs, as notebook 11 now names them
LABELS = {"bucketed step, graph (eager ops)": "1 · bucketed step (eager ops)",
          "10: bucketed step, graph (eager ops)": "1 · bucketed step (eager ops)",
          "bucketed step compiled by Inductor, graph": "2 · bucketed step (Inductor)",
          "11: Triton kernels, 1/launch": "3 · Triton kernels",
          "11: + PDL and prefetch": "4 · + PDL and prefetch",
          "11: + PDL, reads asked early": "4 · + PDL and prefetch",
          "11: + prompt in a graph": "5 · + prompt in a graph",
          "11: + 10 steps/replay": "6 · + 10 steps/replay"}


def tenth(run):
    table = pd.read_csv(DATA / f"10_cuda_graph_step-{run}.csv")
    g = table[table["method"] == GRAPH].iloc[0]
    return table, g["per_step_s"] * 1e3 / g["floor_ratio"]


def eleventh_tables(run):
    side = pd.read_csv(DATA / f"11_toward_the_floor_parts-{run}.csv").set_index("part")
    return {LABELS[c]: pd.DataFrame({"part": side.index, "us": side[c].values,
                                     "floor_us": side["floor µs"].values})
            for c in side.columns if c != "floor µs"}


@pytest.mark.parametrize("run", RUNS)
def test_11s_parts_table_is_one_compact_block_with_its_legend(run):
    tables = eleventh_tables(run)
    view = floor.parts_view(tables)
    assert list(view.columns) == ["rung 1", "rung 2", "rung 3", "floor"]
    text = repr(view)  # as the executed copy's text shows it, pandas' default width
    assert "\\" not in text and max(len(line) for line in text.splitlines()) <= 80
    legend = floor.parts_legend(tables)
    assert legend.startswith("µs per step of each part (rung 1: bucketed step (eager ops); "
                             "rung 2: bucketed step (Inductor); rung 3: Triton kernels; floor: ")
    # the same numbers as the saved (full-name) table
    full = floor.parts_side_by_side(tables)
    assert (view.to_numpy() == full.to_numpy()).all()


@pytest.mark.parametrize("run", RUNS)
def test_10s_ladder_shows_in_one_block(run):
    table, _ = tenth(run)
    with pd.option_context(*summary.WIDE):
        text = repr(bench.ladder_view(table))
    assert "\\" not in text and len(text.splitlines()) == len(table) + 1


@pytest.mark.parametrize("run", RUNS)
def test_10_says_why_more_steps_per_launch_cannot_help_where_the_gpu_sets_the_pace(run):
    table, floor_ms = tenth(run)
    b = budget.per_step(table, ["naive", "generate() static", EAGER, GRAPH, MOST],
                        floor=floor_ms, seq_len=100)
    assert stats.verdict(stats.row_speedup(table, MOST, GRAPH, seq_len=100)) != stats.FASTER
    line = floor.launch_pace_line(b, GRAPH, 4)
    reading = budget.sentence(b, GRAPH, EAGER)
    # the floor as the figure labels it (three digits), the ratio the step's unrounded time over
    # it, as the tables divide (round 24: 6.09x printed beside the table's 6.10)
    shown, times = re.search(r"The floor is ([\d.]+) ms: this step takes ([\d.]+)x", reading).groups()
    assert shown == f"{floor_ms:.3g}"
    wall = b.set_index("method").loc[GRAPH, "wall_ms"]
    assert times == f"{wall / float(shown):.3g}"
    share = re.search(r"\((\d+)% of [\d.]+ ms: ", reading).group(1)
    assert "the GPU sets the pace" in reading  # every run: the line follows that reading
    # round 28: a bound, not "cannot help" beside 11's rung 6 (PDL: the bound does not carry over)
    assert line.startswith(f"what more per launch can gain: at 1 per launch the GPU is idle "
                           f"only {share}% of the step (")
    assert line.endswith("so fewer replays can remove at most that idle time (in notebook 11, PDL's "
                         "waits count as busy time, so there this bound does not hold).")


def test_launch_pace_line_is_silent_where_the_host_has_a_share_of_the_pace():
    b = pd.DataFrame({"method": ["g"], "wall_ms": [1.0], "gpu_ms": [0.7], "idle_ms": [0.3],
                      "floor_ms": [0.2]})
    assert floor.launch_pace_line(b, "g", 4) == ""  # 30% idle: host and GPU share the pace
    fast = b.assign(gpu_ms=[0.9], idle_ms=[0.1])
    assert "only 10% of the step" in floor.launch_pace_line(fast, "g", 4)
    assert floor.launch_pace_line(fast, "g", 1) == ""  # nothing to compare
    assert floor.launch_pace_line(fast.assign(gpu_ms=[math.nan]), "g", 4) == ""
    assert floor.launch_pace_line(fast, "absent", 4) == ""


@pytest.mark.parametrize("run", RUNS)
def test_11s_rung_6_is_read_per_decode_step_as_10_reads_4_per_launch(run):
    table = pd.read_csv(DATA / f"11_toward_the_floor_rungs-{run}.csv")
    table["method"] = table["method"].map(LABELS)
    new, old = "6 · + 10 steps/replay", "5 · + prompt in a graph"
    ratio = stats.row_speedup(table, new, old, seq_len=100)
    note = floor.extra_steps_note(ratio, 100, 10, "replay")
    assert note.startswith("; per decode step (a run at 10 per replay does 100 steps, not 99): ")
    per_step = stats.Ratio(ratio.estimate * 100 / 99, ratio.low * 100 / 99,
                           ratio.high * 100 / 99, ratio.n, ratio.level)
    assert note.endswith(stats.plain(per_step))
    assert stats.verdict(per_step) == stats.FASTER  # each of these runs: faster either way


def test_the_pdl_legend_says_busy_not_work():
    fig, ax = plt.subplots()
    b = pd.DataFrame({"method": ["3 · Triton kernels", "4 · + PDL and prefetch"],
                      "wall_ms": [0.66, 0.58], "gpu_ms": [0.52, 0.48], "idle_ms": [0.14, 0.10],
                      "floor_ms": [0.219, 0.219]})
    budget.plot(ax, b)
    floor.pdl_legend(ax)
    said = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "GPU busy: kernel time (PDL rungs: waits too)" in said
    assert not any(t.startswith("GPU work") for t in said)
    plt.close(fig)


def test_the_prompt_line_names_its_gpu_work_and_host_time():
    # the published run: 10 printed 8.4 ms (64 µs of each step idle: GPU work 2.0 ms), 11 the
    # same forward at 12.7 ms (0.11 ms idle): the GPU's part agrees, the rest is host time
    b = pd.DataFrame({"method": ["g"], "wall_ms": [1.36], "gpu_ms": [1.16], "floor_ms": [0.219]})
    assert "8.4 ms timed alone (its GPU work 2.0 ms, the rest host time)" in \
        floor.prompt_line(b, (8.4, 2.0), 100)
    assert "(its GPU work 1.0 ms, the rest host time)" in floor.prompt_line(b, (1.0, 1.2), 100)


def notebook(stem):
    return json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]


def test_11s_rung_numbers_in_the_text_are_in_the_labels():
    cells = notebook("11_toward_the_floor")
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    labelled = set(re.findall(r'"(\d) · ', code))
    assert labelled == {"1", "2", "3", "4", "5", "6"}  # 6: f"6 · + {P.steps_per_launch} ..."
    said = "\n".join("".join(c["source"]) for c in cells)
    assert set(re.findall(r"\b[Rr]ungs? (\d)\b", said)) <= labelled


def test_10_leans_on_11_little():
    cells = notebook("10_cuda_graph_step")
    prose = [c for c in cells if c["cell_type"] == "markdown"
             and "course-further-reading" not in c.get("metadata", {}).get("tags", [])]
    text = "\n".join("".join(c["source"]) for c in prose)
    assert len(re.findall(r"notebook 11", text)) <= 1  # the bucket arguments' one sentence
    assert "notebook 11" not in floor.gpu_gap_line(  # round 29: 10 stands on its own
        pd.DataFrame({"method": ["g"], "gpu_ms": [1.16], "floor_ms": [0.219]}), "g")


# ------------------------------------------------------------------ round 22: the workshop copies
WORKSHOP = "6bba703-workshop"  # the 13:41 workshop run of 6bba703, the copy round 22 read


def rungs_table(run):
    table = pd.read_csv(DATA / f"11_toward_the_floor_rungs-{run}.csv")
    table["method"] = table["method"].replace(LABELS)  # the workshop run has today's labels
    return table


def prose_of(stem):
    return "\n".join("".join(c["source"]) for c in notebook(stem) if c["cell_type"] == "markdown")


@pytest.mark.parametrize("preset", ["full", "workshop", "smoke"])
def test_10_prints_what_its_preset_times_and_leaves_out(preset):
    from helpers.course.presets import preset_values
    p = preset_values("10", preset)
    line = floor.graph_scope_line(p["graph_steps"], p["peers"])
    steps = sorted(p["graph_steps"])
    assert line.startswith(f"this preset times the step eagerly and at {stats.listed(steps)} step")
    assert ("more steps per launch are not measured here" in line) == (steps == [1])
    assert ("generate() static is left out (peers [])" in line) == (not p["peers"])
    assert ("with generate() static beside it" in line) == ("generate() static" in p["peers"])


def test_10s_prose_reads_true_in_every_preset_and_its_proof_covers_the_timed_eager_step():
    text = prose_of("10_cuda_graph_step")
    for said in ("batch 32", "At batch", "whether 4 steps per launch beat 1", "(full preset)",
                 "every variant proven"):
        assert said not in text, said
    cells = notebook("10_cuda_graph_step")
    proof = next("".join(c["source"]) for c in cells if "check_same_tokens(" in "".join(c["source"]))
    assert "EAGER" in proof and "for name, options in builds.items()" in proof
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "builds = " not in code.replace(proof, "")  # Measure times the variants the proof checked


def test_the_proofs_print_one_line():
    same = {"identical": True, "rows": 16, "rows_equal": 16, "ties": [], "shapes": ((16, 66), (16, 66))}
    rungs = {name: [same, same] for name in ("1 · bucketed step (eager ops)", "3 · Triton kernels",
                                             "4 · + PDL and prefetch", "5 · + prompt in a graph",
                                             "6 · + 10 steps/replay")}
    assert floor.proof_line(rungs) == (
        "identical to the naive loop, with and without forced stops (16 rows, 66 tokens each, "
        "prompt included): rungs 1, 3, 4, 5 and 6")
    tenth = floor.proof_line({"decode_step, eager": [same, same],
                              "graph, decode_step, 1/launch": [same, same]})
    assert tenth.endswith(": \u201cdecode_step, eager\u201d and \u201cgraph, decode_step, 1/launch\u201d")
    tie = dict(same, identical=False, rows_equal=15, ties=[{"row": 3, "position": 20, "fp64_gap": 3e-6}])
    two = floor.proof_line({"1 · a": [same, same], "3 · b": [same, tie]}).splitlines()
    assert two == ["identical to the naive loop, with and without forced stops (16 rows, 66 tokens "
                   "each, prompt included): rung 1",
                   "3 · b: 15/16 rows identical to the naive loop; the others diverge at float32 "
                   "near-ties (largest float64 gap 3e-06)"]


@pytest.mark.parametrize("run", RUNS + [WORKSHOP])
def test_11s_closing_line_starts_from_its_own_rung_1_and_names_each_rungs_gain(run):
    table = rungs_table(run)
    n, rungs = int(table["seq_len"].iloc[0]), list(table["method"])
    at = table.set_index("method")
    line = floor.ladder_line(table, rungs, True, seq_len=n)
    assert line.startswith(f"\u201c1 · bucketed step (eager ops)\u201d takes "
                           f"{at.loc[rungs[0], 'per_step_ms']:.3f} ms per step, "
                           f"{at.loc[rungs[0], 'floor_ratio']:.2f}x the floor; ")
    # round 28: each rung's gain is printed just above it; the line gives the ladder's whole gain
    ratio = stats.row_speedup(table, rungs[-1], rungs[0], seq_len=n)
    medians = at.loc[rungs[0], "per_step_ms"] / at.loc[rungs[-1], "per_step_ms"]
    assert line.endswith(f"rung 6 takes {at.loc[rungs[-1], 'per_step_ms']:.3f} ms per step, "
                         f"{at.loc[rungs[-1], 'floor_ratio']:.2f}x the floor; against rung 1: "
                         f"{stats.plain(ratio, medians=medians)}.")
    assert "notebook 10" not in line
    few = table.assign(trials_wall_ms=table["trials_wall_ms"].str.split().str[:3].str.join(" "))
    assert "too few to judge)" in floor.ladder_line(few, rungs, True, seq_len=n)
    assert floor.ladder_line(table, rungs, False, seq_len=n).endswith("(smoke run).")
    nan = table.assign(floor_ratio=math.nan)  # a judged smoke run on a CPU: no floor
    assert "nan" not in floor.ladder_line(nan, rungs, True, seq_len=n)


@pytest.mark.parametrize("preset", ["full", "workshop", "smoke"])
def test_11_says_why_rung_1_is_inductors_step_only_where_rung_2_runs(preset):
    from helpers.course.presets import preset_values
    p = preset_values("11", preset)
    line = floor.rungs_scope_line(p["inductor_reference"], p["bf16"])
    assert "written for it" not in line  # round 34: the intro says what rung 2 does, once
    assert ("leaves out rung 2" in line) == (not p["inductor_reference"])
    assert ("the bf16 rung (bf16 False)" in line) == (not p["bf16"])
    text = prose_of("11_toward_the_floor")
    assert "written for Inductor" not in text and "M = 32" not in text


def test_11s_bf16_line_reads_the_published_row():
    row = pd.read_csv(REPO / "figures" / "data" / "11_toward_the_floor_bf16.csv").iloc[0]
    fast = pd.read_csv(DATA / "11_toward_the_floor_rungs-ba37cc3.csv")["per_step_ms"].iloc[-1]
    first, second = kernels.bf16_line(row, fast).splitlines()
    ms, low = round(row["per_step_ms"], 3), round(row["floor_ms"], 3)
    assert first.startswith(f"bf16 rung (timed in its own rounds, not interleaved with the float32 "
                            f"rungs): {ms:.3f} ms per step, {ms / low:.1f}x its own floor of {low:.3f} ms; ")
    assert f"{row['agreement']:.0%} of generated tokens agree with float32 (the rows that differ first differ" in first
    assert second == kernels.bf16_bytes_line(row["per_step_ms"], fast)
    same = row.copy()
    same["agreement"] = 1.0
    assert "(a row that differs" not in kernels.bf16_line(same, fast)


def test_11s_bf16_rung_runs_and_its_row_feeds_the_line(tiny):
    """The bf16 rung runs on a GPU only; its helper runs here on the CPU (the PyTorch references of
    the kernels, no floor), so the path the full preset takes is exercised before a GPU run."""
    import copy

    import torch

    from helpers.course.presets import resolve_params
    from helpers.fast_step import FastDecoder
    model, prompt, eos = tiny
    params = resolve_params("11", "smoke", device="cpu", batch_size=prompt.shape[0],
                            prompt_len=prompt.shape[1], repeats=3)
    model16 = copy.deepcopy(model).to(torch.bfloat16)
    row = kernels.bf16_rung(lambda m: FastDecoder(m, prompt.shape[0], prompt.shape[1] + 6, eos, 3),
                            model, model16, prompt, 6, params, name="bf16: rung 6")
    assert row["method"] == "bf16: rung 6" and row["per_step_ms"] > 0 and 0 <= row["agreement"] <= 1
    assert math.isnan(row["floor_ms"])  # no GPU: no copy bandwidth
    assert kernels.bf16_line(row, 1.0).startswith("bf16 rung (timed in its own rounds")
