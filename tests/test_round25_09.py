"""Round-25 review of lesson 09, read on the real GPU tables of run 7aa1901 (full and workshop,
copied to tests/data) and the earlier frozen runs: the takeaway no longer states how the host
copy's call moves under load (21.48 against 21.40 ms, "can't tell apart"); the headline's number
drawn in the figure beside the medians' lines; the copies' growth said to be not measured; the
sync counts one row per method and batch size, a column per length."""
import json
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from helpers import postprocess

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
NAME = "09_host_sync_token_processing"
RUNS = ["7aa1901", "7aa1901-workshop", "3deacb3", "3deacb3-workshop", "f4bf2b7",
        "f4bf2b7-workshop", "6bba703-workshop", "ba37cc3", "8973374", "90c3788", "eb4fe0c"]


def _read(tag, syncs=False):
    path = DATA / f"{NAME}{'_syncs' if syncs else ''}-{tag}.csv"
    if not path.exists():
        if syncs:
            return None
        pytest.skip(f"{path} is not in this checkout")
    return pd.read_csv(path)


def test_published_run_reads_as_its_numbers():
    table, syncs = _read("7aa1901"), _read("7aa1901", syncs=True)
    wide = postprocess.speedups(table)
    assert ("its copies take 0.017 and 1.68 ms; "
            "the rest, its host work over the rows, goes from 8.69 to 19.72 ms.") in \
        postprocess.length_line(wide, 256, table=table)
    assert postprocess.headline_line(table, True, 256, 2048) == (
        "Alone, batch 256, completions of 2048, the host copy against per-row syncs: 3.06x faster "
        "(2.67–3.35; the table's medians: 3.28x).")
    view = postprocess.sync_table(syncs)
    assert list(view.columns) == ["method", "batch_size", "syncs, every length",
                                  "syncs per row"]  # round 36: the equal columns as one
    assert len(view) == 6 and list(view["method"][:2]) == ["per row", "on host"]
    assert list(view["syncs, every length"]) == [64, 4, 256, 4, 1024, 4]
    fig = postprocess.plot(table, [16, 64, 256], [128, 2048])
    (bar,) = fig.axes[1].containers
    x, y = bar.lines[0].get_data()
    assert 256 < x[0] < 300 and round(float(y[0]), 2) == 3.06
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert labels == ["length 128", "length 2048", "1: no speedup",
                      "headline 3.06x, with range"]


@pytest.mark.parametrize("tag", RUNS)
def test_every_run_draws_the_number_its_headline_names(tag):
    table, syncs = _read(tag), _read(tag, syncs=True)
    b, n = int(table["batch_size"].max()), int(table["seq_len"].max())
    head = postprocess.headline_line(table, True, b, n)
    fig = postprocess.plot(table, sorted(table["batch_size"].unique()),
                           sorted(table["seq_len"].unique()))
    ratio = postprocess.transfer_speedup(table, "alone", batch_size=b, seq_len=n)
    if "black diamond" in head:  # named only where it is drawn, at the number quoted
        (bar,) = fig.axes[1].containers
        assert f"{float(bar.lines[0].get_data()[1][0]):.2f}x" in head
    if fig.axes[1].containers:
        assert f"{ratio.estimate:.2f}x" in head
    if syncs is not None:
        view = postprocess.sync_table(syncs)
        assert len(view) == 2 * syncs["batch_size"].nunique()
        if syncs["seq_len"].nunique() > 1:  # round 36: one column where the lengths agree
            assert "syncs, every length" in view
        else:
            assert f"syncs, length {syncs['seq_len'].iloc[0]}" in view
        assert (view["syncs per row"][view["method"] == "per row"] == 4.0).all()
    wide = postprocess.speedups(table)
    line = postprocess.length_line(wide, b, table=table)
    assert line == "" or "its copies take " in line


def test_notebook_states_no_finding_in_its_takeaways():
    cells = json.loads((ROOT / "notebooks" / f"{NAME}.ipynb").read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "can lengthen under the" not in prose and "time changed under it" in prose
    assert "display(postprocess.sync_table(syncs))" in code
    assert "black diamond is\nthe number the headline quotes" in prose
