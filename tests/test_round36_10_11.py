"""Round 36 (review of 2f157b6's full copies, lessons 10 and 11): 10's 4-per-launch line is two
short sentences; 10 names `GraphDecoder` as the class it builds and says what `launch`'s
`prompt_len` is for (notebook 11's bucketed subclass reads it); 11's rung-building plumbing
(`build`, the `tk.PDL` toggle, `quiet_compile`) lives in `floor.rung_builder`, `RUNGS` stays in
view."""
import inspect
import json
import re

import pandas as pd
import pytest

from helpers import graphs, triton_kernels as tk
from helpers.course import floor, stats
from test_lessons_10_11_readings import DATA, GRAPH, REPO
from test_round33_10_11 import per_launch_case

MOST = "graph, decode_step, 4/launch"
TENS = sorted(p.name for p in DATA.glob("10_cuda_graph_step-*.csv"))
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")


def cells(stem):
    return ["".join(c["source"]) for c in
            json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]]


@pytest.mark.parametrize("name", TENS)
def test_10s_per_launch_line_is_two_short_sentences(name):
    """(2) The per-step verdict, then a whole run with its extra steps, only where it reads
    otherwise; one range."""
    if (case := per_launch_case(name)) is None:  # the workshop preset: graph_steps [1]
        return
    line, ratio, steps, per, n = case
    first, _, second = line.partition(". A whole run is ")
    assert first.startswith(f"Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): "
                            f"{stats.plain(per)}")
    assert len(RANGE.findall(line)) == 1 and not RANGE.search(second)
    differs = stats.verdict(ratio) != stats.verdict(per)
    assert bool(second) == differs
    if differs:
        whole = "no faster" if stats.verdict(ratio) == stats.NOISE else stats.short(ratio)
        assert second == f"{whole} at 4 per launch, because it does {steps} steps, not {n - 1}."
    if name == "10_cuda_graph_step-2f157b6.csv":  # the review's line
        assert line == ("Per decode step, 4 steps per launch against 1 (time at 1 ÷ at 4): can't "
                        "tell apart on this machine (0.996–1.002). A whole run is 1.01x slower at "
                        "4 per launch, because it does 100 steps, not 99.")


def test_10_names_its_class_and_why_launch_takes_prompt_len():
    """(3) `prompt_len` is not unused: BucketedGraphDecoder.launch (notebook 11's rung 1) reads
    it, and the profiler's replays pass it; so it stays, and the prose says what it is for."""
    flat = " ".join(" ".join(cells("10_cuda_graph_step")).split())
    assert "`GraphDecoder` is the class this lesson builds" in flat and "is the lesson." not in flat
    # round 37: the reader saw both arguments ignored; the prose now says so
    assert "(ignoring its arguments, which notebook 11's subclass reads)" in flat
    assert "prompt_len" in inspect.getsource(graphs.BucketedGraphDecoder.launch).split('"""')[-1]
    assert list(inspect.signature(graphs.GraphDecoder.launch).parameters) == ["self", "launch", "prompt_len"]


def test_11_builds_its_rungs_through_the_helper():
    """(1) No `build` plumbing in the lesson; the six decoders stay in view as `RUNGS`."""
    code = "\n".join(cells("11_toward_the_floor"))
    assert "def build(" not in code and "tk.PDL =" not in code and "quiet_compile" not in code
    assert "build = floor.rung_builder(RUNGS, WITH_PDL)" in code
    assert code.count("RUNGS[") >= 5 and "WITH_PDL = {PDL, PROMPT, FAST}" in code


def test_rung_builder_turns_pdl_on_only_for_its_rungs_and_back_after():
    seen = {}

    def rung(name):
        def make(model, length):
            seen[name] = tk.PDL
            if name == "boom":
                raise RuntimeError(name)
            return (name, model, length)
        return make

    build = floor.rung_builder({k: rung(k) for k in ("off", "on", "boom")}, {"on", "boom"})
    assert build("off", "m", 7) == ("off", "m", 7) and seen["off"] is False and tk.PDL is None
    assert build("on", "m", 7) == ("on", "m", 7) and seen["on"] is None and tk.PDL is None
    with pytest.raises(RuntimeError):
        build("boom", "m", 7)
    assert tk.PDL is None
