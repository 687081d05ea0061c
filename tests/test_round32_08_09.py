"""Round 32 of lessons 08 and 09 (the review of the published run 94d1a85), checked on every
frozen run of 08: each number said once, the claim-6 ratio before its range, 09's table first."""
import json
import re
from pathlib import Path

import pytest

from helpers.course import claims, summary

from tests.test_round25_08 import _printed
from tests.test_round28c_08 import RUNS, _ladder

ROOT = Path(__file__).resolve().parent.parent
CANT = re.escape(claims.CANT_TELL)


def _cells(stem):
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    return [(c["cell_type"], "".join(c["source"])) for c in nb["cells"]]


@pytest.mark.parametrize("run", RUNS)
def test_the_fastest_taught_rungs_time_is_not_repeated_in_the_answer(run):
    table, n, names, b, _ = _ladder(run)
    first = summary.reading(table, n, True)[0]
    taught = summary.fastest(table, n, taught=True)
    assert " ms" not in first, first  # the table, the figure's line and "In one line" have it
    assert first.startswith(f"The fastest rung taught so far (lessons 01-07) at batch "
                            f"{int(taught['batch_size'])} and {n} tokens is {taught['method']}")
    if "generate() static" in set(table["method"]):
        assert ": against generate() static, " in first and first.endswith(".")
    assert f"{taught['per_step_s'] * 1e3:.2f} ms" in summary.one_line(table, n, True)


def test_the_published_runs_answer_reads():
    table, n, _, _, _ = _ladder("94d1a85")
    assert summary.reading(table, n, True)[0] == (
        "The fastest rung taught so far (lessons 01-07) at batch 32 and 100 tokens is stop check "
        "a step late (lesson 07): against generate() static, 1.79x faster (1.77–1.82).")


@pytest.mark.parametrize("run", RUNS)
def test_every_cant_tell_range_of_a_gain_against_a_gain_follows_its_ratio(run):
    for line in _printed(run)[3]:
        line = " ".join(line.split())
        for hit in re.finditer(rf"{CANT} \(", line):
            assert re.search(r"\d\.\d\dx, $", line[:hit.start()]) or \
                re.search(r"x (faster|slower), $", line[:hit.start()]), line


def test_claim_6_on_the_published_run():
    lines = _printed("94d1a85")[3]
    six = {l[:2]: l for l in re.split(r"\n(?=\d[a-f ]? )", "\n".join(lines)) if l[:2] in ("6a", "6b")}
    assert " ".join(six["6a"].split()).startswith(
        "6a (notebook 07) 1.26x at batch 1 vs 1.28x at 32: 0.98x, can't tell apart on this machine "
        "(0.87–1.10)")
    assert " ".join(six["6b"].split()).startswith(
        "6b (notebook 07) 1.26x at batch 1 vs 1.14x at 128: 1.10x, can't tell apart on this "
        "machine (0.98–1.22)")


def test_08_says_the_idle_share_once():
    code = "\n".join(s for t, s in _cells("08_results_summary") if t == "code")
    assert "what_is_left" not in code and not hasattr(summary, "what_is_left")
    assert "summary.one_line(table, n, judge)" in code


def test_09_shows_its_table_before_the_text_that_quotes_it():
    cells = _cells("09_host_sync_token_processing")
    at = next(i for i, (t, s) in enumerate(cells) if "postprocess.table_view(wide)" in s)
    plot = next(i for i, (t, s) in enumerate(cells) if s.startswith("## Plot"))
    assert at < plot and sum("table_view" in s for _, s in cells) == 1
    assert cells[at][1].rstrip().endswith("postprocess.table_view(wide)  # ms per batch; the "
                                           "speedup alone only")  # the cell's last expression
    text = " ".join(s for t, s in cells if t == "markdown")
    assert "Two indexing lines per row, two syncs each: four syncs per row." in text
    assert "Two tensors per row" not in text and "which cover every token" not in text
    assert "grow with the completion length" in text and "need not hold at another." in text
