"""Round 24's mends of 06 and 07, read on every real table (full runs and both workshop runs):
06 states how far apart the eager step's two tables ran, from their runs; 07 says where the late
read pays as the check's share of the step and the share won back, answers the second-stream
question directly, gives batch 1's speedup a range, and keeps its plumbing in helpers."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, eos_sync, late_check, stats

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RUNS = {"published": DATA / "{}-3deacb3.csv",  # the run round 24's students read
        "ws24": DATA / "{}-3deacb3-workshop.csv", "ws23": DATA / "{}-f4bf2b7-workshop.csv",
        **{r: DATA / ("{}-" + r + ".csv") for r in
           ("f4bf2b7", "ba37cc3", "8973374", "90c3788", "eb4fe0c", "6bba703-workshop")}}


def load(run, name):
    path = Path(str(RUNS[run]).format(name))
    if not path.exists():
        pytest.skip(f"{path} not here")
    return pd.read_csv(path)


def early_stop(run):
    t = load(run, "06_eos_sync")
    if "tokens" not in t:
        t["tokens"] = [80 if m == eos_sync.CHECK else c for m, c in zip(t["method"], t["seq_len"])]
    return t[t["status"] == "ok"]








@pytest.mark.parametrize("run", list(RUNS))
def test_07_where_it_pays_gives_both_shares(run):
    t = load(run, "07_stream_interleaving")
    summary = late_check.summary(t)
    line = late_check.where_line(t, summary)
    graph = summary[(summary["regime"] == "compiled") & summary["check_resolved"].astype(bool)]
    if len(graph) < 2:
        assert line == ""
        return
    # round 34: the largest share only (the table above gives every batch)
    r = graph.loc[(graph["check_cost_us"] / graph["no_check"]).idxmax()]
    assert (f"at batch {int(r['batch_size'])} ({r['check_cost_us']:.0f} µs, "
            f"{r['check_cost_us'] / (10 * r['no_check']):.0f}% of the {r['no_check']:.2f} ms "
            "step without it)") in line
    assert "still idles" not in line and "per step above no check" not in line


@pytest.mark.parametrize("run", list(RUNS))
def test_07_second_stream_answered_directly_and_batch_one_ranged(run):
    t = load(run, "07_stream_interleaving")
    line = late_check.stream_event_line(t)
    assert line.startswith(("The second stream", "With the CUDA graph step, one stream and an "
                            "event come out about the same as two streams at every batch"))  # round 33
    claim = late_check.article_claim_line(t, late_check.summary(t))
    rows = t[t["regime"] == "compiled"]
    if rows["batch_size"].nunique() > 1:
        first = stats.row_speedup(rows, "interleaved", "sync", batch_size=int(rows["batch_size"].min()))
        if stats.verdict(first) == stats.FASTER:
            assert f"{stats.plain(first)} at batch {int(rows['batch_size'].min())}" in claim


@pytest.mark.parametrize("run", list(RUNS))
def test_07_budget_reading_names_the_pace_by_name_only(run):
    t = load(run, "07_stream_interleaving")
    b = int(t[t["regime"] == "compiled"]["batch_size"].min() if run.startswith(("ws", "6bba"))
            else 32)
    part = t[t["batch_size"] == b]
    labelled = part.assign(method=part["regime"].map(late_check.REGIME_LABELS) + ", "
                           + part["method"].map(lambda m: late_check.LOOP_LABELS.get(m, m)))
    steps = budget.per_step(labelled, floor=0.1)
    said = budget.sentence(steps, "CUDA graph, two streams", "CUDA graph, per-step sync")
    line = late_check.budget_reading(said, steps)
    assert line.startswith(said.split(" The GPU's idle time")[0])
    assert "The floor is" not in line and "idles at most" not in line
    assert "By lesson 00's rule, which lesson 06 spells out," in line


def test_07_notebook_keeps_plumbing_in_helpers():
    nb = json.loads((ROOT / "notebooks" / "07_stream_interleaving.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert ".split(" not in code and "removesuffix" not in code and "StepRanges" not in code
    assert "late_check.count_steps(" in code and "late_check.proof_line(" in code
