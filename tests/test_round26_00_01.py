"""Round 26 of mends, lessons 00 and 01, on every real table in tests/data (full and workshop)."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, intro

DATA = Path(__file__).parent / "data"
ONE = sorted(DATA.glob("01_naive_generation-*.csv"))
ZERO = sorted(DATA.glob("00_setup-*.csv"))


def _text(path, kind):
    nb = json.load(open(path))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind)


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem.split("-", 1)[1])
def test_01_takeaway_quotes_the_total_its_parts_add_up_to(path):
    """The worst remark on 01: 2.71x beside work and idle parts that add up to 2.93x."""
    table = pd.read_csv(path)
    why, one = intro.growth_why(table, 16), intro.takeaway(table)
    t0, t1, grew = re.search(r"median run went from (\d+) to (\d+) ms \(([\d.]+)x\)", why).groups()
    assert f"split on the table's medians, the GPU work grew" in one, one  # round 28c wording
    rounds = intro.doubling(table).split("by ")[1].split("x")[0]
    assert "the table's medians" not in intro.doubling(table)  # round 32: named once, in the Why head


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem.split("-", 1)[1])
def test_01_budget_line_states_shares_without_a_pace_verdict(path):
    table = pd.read_csv(path)
    n, m = intro.pair(table)
    step = pd.concat([budget.per_step(table, labels={"naive": f"{k} tokens"}, seq_len=k)
                      for k in sorted(table["seq_len"])], ignore_index=True)
    line = intro.budget_line(step, f"{m} tokens", f"{n} tokens")
    assert line and "pace" not in line, line
    assert line.rstrip(".") in budget.sentence(step, f"{m} tokens", f"{n} tokens", why=intro.IDLE_WHY)


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem.split("-", 1)[1])
def test_00_round_1_stated_with_its_numbers_and_no_unmeasured_cause(path):
    table = pd.read_csv(path)
    by_round = intro.rounds(table, "loop A", "loop B")
    from helpers.course import stats
    n = int(table.loc[table["method"] == "loop A", "seq_len"].iloc[0])
    said = intro.reach(stats.row_speedup(table, "loop B", "loop A", seq_len=n), True, by_round)
    assert "does not measure why" not in said
    if re.search(r"rounds 1 \(", said):
        a, b = by_round["A ms"], by_round["B ms"]
        assert (f"Round 1, the first after the warm-up, took {a[0]:.1f} ms (A) and {b[0]:.1f} ms "
                f"(B), against medians of {a.median():.1f} and {b.median():.1f} ms.") in said


def test_00_one_rounding_and_the_sync_count():
    code, text = _text("notebooks/00_setup.ipynb", "code"), _text("notebooks/00_setup.ipynb", "markdown")
    assert "idles {wall - work:.3f}" in code and "{s['gpu_ms']:.3f} ms; the floor" in code
    assert "median run" not in code + text  # 8 runs: the median is the mean of two
    assert "which the demo does not separate" not in text
    assert "absorb" not in text
    # the published table: wall, work and idle printed at the table's rounding add up
    step = budget.per_step(pd.read_csv(DATA / "00_setup-5274887.csv"), ["loop A"], seq_len=40)
    s = step.iloc[0]
    assert f"{round(s['wall_ms'], 3) - round(s['gpu_ms'], 3):.3f}" == f"{s['idle_ms']:.3f}" == "3.762"


def test_01_no_course_upkeep_line():
    code = _text("notebooks/01_naive_generation.ipynb", "code")
    assert "course upkeep" not in code and "intro.budget_line(step" in code


def test_the_budget_sentence_can_leave_out_the_pace_verdict():
    """01's budget line is ``budget.sentence`` with ``verdict=False``: the same sentence, its
    pace verdict left out (the idle share at every length is printed instead)."""
    import pandas as pd
    from pathlib import Path
    from helpers.course import budget, intro
    table = pd.read_csv(Path(__file__).resolve().parent / "data" / "01_naive_generation-5274887.csv")
    step = pd.concat([budget.per_step(table, labels={"naive": f"{n} tokens"}, seq_len=n)
                      for n in (100, 200)], ignore_index=True)
    full = budget.sentence(step, "200 tokens", "100 tokens", why=intro.IDLE_WHY)
    short = intro.budget_line(step, "200 tokens", "100 tokens")
    assert full.endswith("): the GPU sets the pace.") and "pace" not in short
    assert short == full[:-len(": the GPU sets the pace.")] + "."
