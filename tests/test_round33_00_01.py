"""Round 33, the review of the H200 run of 4448ee4: 01's Why head says that the answer reads
every round and, where the two differ by 5% or more, names the run the medians leave out; the
budget line leaves the idle time per step to the Idle line; 00 rings the loop that ran first."""
import glob
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.course import budget, harness, intro

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"


def _steps(table):
    return pd.concat([budget.per_step(table, labels={"naive": f"{k} tokens"}, seq_len=k)
                      for k in sorted(int(x) for x in table["seq_len"])], ignore_index=True)


def test_01_why_head_on_the_reviewed_run():
    table = pd.read_csv(DATA / "01_naive_generation-4448ee4.csv")
    lines = intro.growth_why(table, 16).split("\n")
    assert lines[0].endswith("(1.98x).")
    head = lines[1]
    assert head == (
        "The answer's 2.16x above reads every round instead: keep that one; the two differ by 9%: the "
        "rounds count every run, the medians leave out the far ones; the "  # round 37: shorter
        "farthest, the 100-token length's fastest run (round 5: 848 ms against a median of "
        "1198), raised that round's ratio to 2.50x."), head
    line = intro.budget_line(_steps(table), "200 tokens", "100 tokens", table)
    assert line == ("Per decode step, from 100 tokens to 200 tokens: the GPU's work rose 1.7x "
                    "(5.09 -> 8.55 ms) and the wall clock went from 11.98 to 11.85 ms. The rest of "
                    "each step is the GPU's idle time: the Idle line below.")


def test_01_why_head_on_every_real_table():
    for path in sorted(glob.glob(str(DATA / "01_naive_generation-*.csv"))):
        table = pd.read_csv(path)
        p = intro._parts(table)
        lines = intro.growth_why(table, 16).split("\n")
        said, grown = f"{p['rounds']:.2f}", f"{p['grew']:.2f}"
        assert lines[0].endswith(f"({grown}x).")
        head = lines[1] if lines[1].startswith("The answer's ") else ""
        assert (said == grown) == (head == "") and (said == grown or f"The answer's {said}x above" in head)
        assert len(head.split()) <= 50, head
        assert intro.doubling(table).split(" (")[0].endswith(f"{said}x"), path
        gap = float(said) / float(grown) - 1
        assert ("differ by" in head) == (abs(gap) >= 0.05), (path, head)
        if abs(gap) >= 0.05:
            got = re.search(r"the (\d+)-token length's (fastest|slowest) run \(round (\d+): (\d+) ms "
                            r"against a median of (\d+)\), (raised|lowered) that round's ratio to "
                            r"([\d.]+)x", head)
            k, word, r, t, mid, way, ratio = got.groups()
            runs = {int(x["seq_len"]): np.asarray(harness.trials(x)) * 1e3
                    for _, x in table.iterrows()}
            run = runs[int(k)]
            assert f"{run[int(r) - 1]:.0f}" == t and f"{np.median(run):.0f}" == mid
            assert run[int(r) - 1] == (run.min() if word == "fastest" else run.max())
            assert (way == "raised") == (gap > 0)  # the run moves its round the gap's way
            assert (word == "fastest") == ((int(k) == p["n"]) == (gap > 0))
            assert f"{runs[p['m']][int(r) - 1] / runs[p['n']][int(r) - 1]:.2f}" == ratio
        line = intro.budget_line(_steps(table), f"{p['m']} tokens", f"{p['n']} tokens", table)
        assert "idle time went from" not in line and line.endswith("the Idle line below."), path


def _cells(name, kind):
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind)


def test_prose_says_what_to_look_for():
    text = _cells("01_naive_generation.ipynb", "markdown")
    assert "it rises because" not in text and "as where" not in text
    assert "budget_line(step, labels[m], labels[n], table)" in _cells("01_naive_generation.ipynb", "code")
    text = _cells("00_setup.ipynb", "markdown")
    assert "what that means for later verdicts" not in text and "the ringed run" in text  # round 37
    assert 'label="ran first"' in _cells("00_setup.ipynb", "code")
