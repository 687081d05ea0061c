"""What notebooks 10 and 11 print from their tables, read from real H100 runs (tests/data: the
published 12:29 run ba37cc3 and the 09:46, 06:54 and 05:14 runs): the compact kernel table, the
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
from helpers.course import budget, floor, stats, summary  # noqa: E402

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
    # the floor as the figure labels it (three digits), the ratio a division of printed values
    shown, times = re.search(r"The floor is ([\d.]+) ms: this step takes ([\d.]+)x", reading).groups()
    assert shown == f"{floor_ms:.3g}"
    wall = re.search(r"wall clock went from [\d.]+ to ([\d.]+) ms", reading).group(1)
    assert times == f"{float(wall) / float(shown):.3g}"
    share = re.search(r"\((\d+)% of [\d.]+ ms: ", reading).group(1)
    assert "the GPU sets the pace" in reading  # every run: the line follows that reading
    assert line.startswith(f"why more per launch cannot help: at 1 per launch the GPU is idle "
                           f"only {share}% of the step, so the GPU sets the pace;")
    assert line.endswith("4 per launch saves host time the GPU does not wait for.")


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
    assert "notebook 11" not in floor.gpu_gap_line(
        pd.DataFrame({"method": ["g"], "gpu_ms": [1.16], "floor_ms": [0.219]}), "g")
