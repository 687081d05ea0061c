"""Round 25 of mends, lessons 00 and 01: every line of 01's reading compares the same two lengths;
the "why" says what was measured, no cause; 00's first clock and pace are scoped to what it measured."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, intro

DATA = Path(__file__).parent / "data"
TABLES01 = sorted(p.name for p in DATA.glob("01_naive_generation-*.csv"))


def _text(path, kind):
    return " ".join(" ".join("".join(c["source"]) for c in json.load(open(path))["cells"]
                             if c["cell_type"] == kind).split())


@pytest.mark.parametrize("name", TABLES01)
def test_01_reading_compares_one_pair_on_every_real_table(name):
    table = pd.read_csv(DATA / name)
    n, m = intro.pair(table)
    steps = pd.concat([budget.per_step(table, labels={"naive": f"{k} tokens"}, seq_len=k)
                       for k in sorted(int(x) for x in table["seq_len"])], ignore_index=True)
    said = budget.sentence(steps, f"{m} tokens", f"{n} tokens", why=intro.IDLE_WHY)
    why = intro.growth_why(table, 16)
    head = intro.doubling(table)
    assert f"from {n} to {m}" in head.lower().replace("tokens", "").replace("  ", " ") or \
        f"{n} to {m} tokens" in head, head
    if said:
        assert said.startswith(f"Per decode step, from {n} tokens to {m} tokens:"), said
    if why:
        assert f"from {n} to {m} tokens the median run" in why, why
        assert "At " not in why.splitlines()[-1][:3] or "tokens the GPU idled" not in why
        assert "a split into parts" not in why


def test_01_growth_why_on_the_published_run():
    table = pd.read_csv(DATA / "01_naive_generation-7aa1901.csv")
    why = intro.growth_why(table, 16)
    assert why.startswith("Why: the lines below split the median run into the GPU's work "
                          "and its idle time; from 100 to 200 tokens"), why  # round 32
    assert "The answer above" not in why  # round 29: the medians sit in the answer's parenthesis
    assert "(2.36–2.68), less" in intro.doubling(table)  # round 32: medians in the Why head
    assert "per step 4.80, 3.83 and 3.14 ms at 100, 200 and 300 tokens" in why  # round 37: unrounded


def test_01_why_states_no_unmeasured_cause():
    text = _text("notebooks/01_naive_generation.ipynb", "markdown")
    assert "comes per step" not in text and "diluted" not in text
    # round 27's "time is made of is not measured here" was cut from the prose in 28c: the printed
    # lines say both, on the published run
    table = pd.read_csv(DATA / "01_naive_generation-898ea06.csv")
    assert "this run does not measure how it splits" in intro.idle_reading(table)
    # round 29: the Sum line is shown as arithmetic; "An account, not a cause" is gone
    assert "An account" not in intro.growth_why(table, 16)
    code = _text("notebooks/01_naive_generation.ipynb", "code")
    assert "n, m = intro.pair(table)" in code and "labels[long]" not in code


def test_00_first_clock_and_pace_are_scoped():
    text = _text("notebooks/00_setup.ipynb", "markdown")
    code = _text("notebooks/00_setup.ipynb", "code")
    assert "issuing the kernels, plus any wait" not in code
    assert "no later lesson reads it" not in text  # round 36: the bookkeeping aside is cut
    assert "who sets the pace in eager mode" not in text
    assert "who sets the pace in this loop (KV cache, this batch)" in text
    assert "an eager KV-cache decode step at batch {P.batch_size}" in code
