"""Round 23 of mends of lessons 04 and 05, read on real GPU tables: the published run's CSVs
(run f4bf2b7, a slow host, frozen in tests/data/) and the earlier runs frozen in tests/data/.

04: the host times per step are read against the operations each step dispatches (the same at
every length); a length out of line with them (the published 400 tokens: 13.17 against 6.32 ms,
2.08x, against 1.23x the operations) is said so, is not drawn, and its gap is not called the
host's; the summary says "slower at every length timed" where it was, with the table's medians as
the verdict lines write them ("1.25x", not "25% apart"); the budget frame is not rounded, so the
floor prints to three digits. 05: the eager baseline against notebook 04's time of the same loop
in this run, with each compiled loop's speedup against it where the two part; the summary names
every mode; the fresh-process line says which compile cost to plan for, no guessed cause."""
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import compiled as c05

from test_lessons_04_05_tables import nth, tables

REPO = Path(__file__).resolve().parent.parent
OPS = pd.DataFrame({"ops per step": [447, 551]}, index=["dynamic", "static"])  # the published run's


def runs(name):
    """f4bf2b7's table first (the copy the round-23 students read, frozen; named "published" as
    it was then), then the earlier runs' and the workshop run's, as ``tables`` reads them."""
    frozen = ("published", pd.read_csv(REPO / "tests" / "data" / f"{name}-f4bf2b7.csv"))
    return [frozen] + [t for t in tables(name, workshop=True) if t[0] != "published"]






def _run_dir(tmp_path, monkeypatch, table04):
    (tmp_path / "data").mkdir()
    table04.to_csv(tmp_path / "data" / "04_static_cache.csv", index=False)
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path))




def test_05_outside_a_runner_run_nothing_is_compared(monkeypatch):
    monkeypatch.delenv("COURSE_RUN_DIR", raising=False)
    t5 = runs("05_torch_compile")[0][1]
    methods = list(t5["method"])
    assert math.isnan(c05.lesson04_ms(t5, 100))
    assert c05.baseline_line(t5, 100, methods, float("nan")).startswith("Notebook 04 has no time")
    assert "notebook 04" not in c05.summary_line(t5, c05.compilation(t5), methods, 100, True)


@pytest.mark.parametrize("run", range(4))
def test_05_fresh_process_line_says_what_to_plan_for(run):
    _, table = nth(runs("05_torch_compile"), run)
    said = c05.repay_line(c05.compilation(table), table)
    assert "plausibly" not in said
    later = [g - m for _, r in table[table["mode"] != "eager"].iterrows()
             for g, m in ((r["check_first_call_s"], r["median_s"]), (r["first_call_s"], r["median_s"]))
             if not math.isnan(g)][1:]
    fresh = [x for x in said.splitlines() if x.startswith("This process's first graph")]
    if fresh and later:  # round 28: the first graph's cost plainly, no untimed new process
        assert "new process" not in fresh[0]
        assert (f", longer than any later graph (up to {max(later):.1f} s)" in fresh[0]
                or f"; later graphs up to {max(later):.1f} s" in fresh[0])


def _cells(stem):
    return json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]


def test_notebooks_call_the_new_readings():
    code4 = "\n".join("".join(c["source"]) for c in _cells("04_static_cache") if c["cell_type"] == "code")
    text4 = "\n".join("".join(c["source"]) for c in _cells("04_static_cache") if c["cell_type"] == "markdown")
    assert ".round(2)" not in code4
    assert "lesson.drawn_length(table, P.seq_lens, judge, inputs)" in code4
    assert "lesson.ops_line(table, P.seq_lens, inputs, point)" in code4
    assert "lesson.answer_line(table, steps, P.seq_lens, judge, point, inputs)" in code4
    for stale in ("need not make a step faster", "% apart", "a line below says which of the article",
                  "Where a finding differs", "half of\n   the rectangle"):
        assert stale not in text4, stale
    code5 = "\n".join("".join(c["source"]) for c in _cells("05_torch_compile") if c["cell_type"] == "code")
    text5 = "\n".join("".join(c["source"]) for c in _cells("05_torch_compile") if c["cell_type"] == "markdown")
    assert "lesson.baseline_line(table, point, methods, earlier)" in code5
    assert "summary_line(table, compile_table, methods, point, judge)" in code5
    for stale in ("need not match notebook 04", "where this run compiled it", "fall\nshort of the memory"):
        assert stale not in text5, stale
