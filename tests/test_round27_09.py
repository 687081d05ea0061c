"""Round-27 review of lesson 09, read on the real GPU tables in tests/data (full and workshop
runs): one plain number for what a sync costs (the time saved per sync removed), no bounds; the
headline names the number it quotes once; causes not measured said so; the copies' memory named;
syncs per row as numbers; the diamond's number in the legend; no split output in cell 11."""
import json

import pytest

from helpers import postprocess

from tests.test_round26_09 import NAME, ROOT, RUNS, _read  # the same tables, read the same way


def test_published_run_reads_as_its_numbers():
    table, syncs = _read("9bd8862"), _read("9bd8862", syncs=True)
    wide = postprocess.speedups(table)
    assert postprocess.sync_cost_line(wide, syncs, 256, 2048) == (
        "Saved per sync removed at batch 256, completions of 2048: about 51 µs = (70.53 - 18.70 "
        "ms) / (1024 - 4 syncs), the loop's small kernels and indexing included; a saving at this "
        "size, not a fixed cost of a sync: 32 to 53 µs over the 6 points timed alone.")
    assert postprocess.headline_line(table, True, 256, 2048) == (
        "Alone, batch 256, completions of 2048, the host copy against per-row syncs: 3.64x faster "
        "(3.33–3.90; the table's medians: 3.77x).")
    assert postprocess.one_line(table, 256, 2048, syncs, wide).endswith(
        "3.64x faster (3.33–3.90); it saved about 51 µs per sync removed at this size, "
        "32 to 53 µs over the 6 points timed alone.")
    assert postprocess.loaded_sync_line(wide, syncs, 256, 2048, table) == (
        "Under this side load the same sum gives about 270 µs per sync removed, against 51 µs "
        "alone: most likely the loop's small kernels wait behind the load's matmuls at every "
        "sync (not measured here).")
    said = postprocess.call_sentence(postprocess.call_budget(table, 256, 2048), 4.0)
    assert ("1.55 ms its copies and the rest, about 17 ms, the host's: indexing the rows, building "
            "the lists and its side of the copies, not timed apart.") in said
    assert ("0.59 and 5.01 MB take 0.017 and 1.55 ms, the GPU's side of pageable copies (exercise 2 uses "
            "pinned)") in postprocess.length_line(wide, 256, table=table, prompt_len=128)
    assert list(postprocess.sync_table(syncs)["syncs per row"]) == [4, 0.25, 4, 0.06, 4, 0.02]


@pytest.mark.parametrize("tag", RUNS)
def test_every_run_states_one_cost_per_sync_and_no_unmeasured_cause(tag):
    table, syncs = _read(tag), _read(tag, syncs=True)
    wide = postprocess.speedups(table)
    b, n = int(table["batch_size"].max()), int(table["seq_len"].max())
    head = postprocess.headline_line(table, True, b, n)
    assert "summed up another way" not in head and head.count("black diamond") <= 1
    fig = postprocess.plot(table, sorted(table["batch_size"].unique()),
                           sorted(table["seq_len"].unique()))
    ratio = postprocess.transfer_speedup(table, "alone", batch_size=b, seq_len=n)
    labels = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any(label.startswith(f"headline {ratio.estimate:.2f}x") for label in labels)
    said = postprocess.call_sentence(postprocess.call_budget(table, b, n), 4.0)
    assert "own work of indexing" not in said and "not timed apart." in said
    if syncs is None:
        return
    cost = postprocess.sync_cost(wide, syncs) * 1e6
    line = postprocess.sync_cost_line(wide, syncs, b, n)
    for word in ("at most", "at least", "lower bound", "only if", "not checked"):
        assert word not in line
    assert f"about {cost[(b, n)]:.0f} µs = " in line
    one = postprocess.one_line(table, b, n, syncs, wide)
    assert f"saved about {cost[(b, n)]:.0f} µs per sync removed at this size" in one  # the same number as the line
    loaded = postprocess.loaded_sync_line(wide, syncs, b, n, table)
    assert "wait their turn" not in loaded
    assert loaded == "" or "too few to judge" in loaded or "not measured here" in loaded \
        or "barely wait" in loaded
    shown = postprocess.sync_table(syncs)["syncs per row"]
    assert shown.dtype.kind == "f" and (shown == shown.round(2)).all()


def test_notebook_prints_cell_11_at_once_and_bounds_nothing():
    cells = json.loads((ROOT / "notebooks" / f"{NAME}.ipynb").read_text())["cells"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    code = [("".join(c["source"])) for c in cells if c["cell_type"] == "code"]
    check = next(c for c in code if "identical lists from both methods" in c)
    assert check.count("print(") == 1 and check.index("assert") < check.index("print(")
    assert "bounds the rest" not in prose and "the host's own indexing and list building" not in prose
    assert "What to read: how each\ncall's time changes under this load" in prose  # round 29: either way
