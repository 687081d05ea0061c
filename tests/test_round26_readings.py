"""Round 26 (workshop copy of 62ceade): 'every speed-up printed in words is the rounds' reading'
read as broken by lines that print 'by the medians' in words; the line names both kinds."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import summary

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("run", ["5274887", "5274887-workshop", "7aa1901", "3deacb3"])
def test_the_readings_line_names_both_kinds_of_speedup(run):
    table = pd.read_csv(DATA / f"08_results_summary-{run}.csv")
    line = summary.readings(table, int(table["seq_len"].iloc[0]), True)
    # round 28c: both kinds are named once, in the Measure cell's markdown, not again in the line
    nb = json.loads((DATA.parent.parent / "notebooks" / "08_results_summary.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in nb["cells"]).replace("\n  ", " ")
    assert "Each `×` column is a speed-up from the **rounds**" in text  # round 35
    assert '"by the medians" or "the table\'s medians" divides two of the `ms per step`' in text
    assert line.startswith("On this table the two readings ")
    assert "Every speed-up printed in words" not in line


def test_the_published_run_reads_claim_fives_pair():
    table = pd.read_csv(DATA / "08_results_summary-5274887.csv")
    line = summary.readings(table, 100, True)
    assert line.endswith("up to 14% apart, furthest for KV cache, compiled against KV cache: 1.54x "
                         "faster by the rounds, the answer to quote (the table's medians: 1.35x faster).")


def test_printed_share_reads_the_printed_numbers():
    """``budget.printed_share``, the one idle share that budget.sentence, 08's takeaway and 10's
    steps-per-launch line print: 0.21 of 1.37 ms reads 15% (from the rounded numbers)."""
    from helpers.course import budget
    row = {"wall_ms": 1.374, "gpu_ms": 1.166, "idle_ms": 1.374 - 1.166}
    assert round(budget.printed_share(row)) == 15
    assert budget.printed_share({"wall_ms": 1.0, "gpu_ms": 1.05, "idle_ms": -0.05}) == 0.0
    assert budget.printed_share({"wall_ms": 1.0, "gpu_ms": 0.95, "idle_ms": 0.05}) == pytest.approx(5.0)
