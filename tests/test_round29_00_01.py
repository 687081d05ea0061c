"""Round 29's review of 00 and 01 (run 6e28961), checked on every real table in tests/data: 00's
first-run line no longer pairs "the slower in 6 of 8" with a mean of 0.99x, the interval's reach
is cut, and the host's pace names the allocator; 01 states its answer once with the medians in
its parenthesis, shows the Sum as arithmetic, and points to the retries printed above."""
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.course import intro
from tests.test_round28_00_01 import DATA, ONE, ZERO, _reach
from tests.test_round28c_00_01 import _what_it_means

ROOT = Path(__file__).parent.parent
RANGE = re.compile(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]")  # test_lesson_shape's interval statement


def _markdown(name):
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return " ".join(" ".join("".join(c["source"]) for c in nb["cells"]
                             if c["cell_type"] == "markdown").split())


def _code(name):
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


@pytest.fixture(scope="module")
def model():
    from helpers.model import build_model
    return build_model("gpt2", "cpu", seed=0)


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem.split("-", 1)[1])
def test_00_first_run_line_reads_without_a_contradiction(path):
    by_round, said = _reach(path)
    line = said[said.index("The loop that ran "):].split("\n")[0]  # round 34: its own line
    a, b = by_round["A ms"].to_numpy(), by_round["B ms"].to_numpy()
    q = np.where(by_round["order"].eq("A B").to_numpy(), a / b, b / a)
    k, longer, quicker = len(q), int((q > 1).sum()), int((q < 1).sum())
    assert "on average" not in line and "0.99x" not in line
    who, m = ("first", longer) if longer >= quicker else ("second", quicker)  # round 36
    assert f"ran {who} took longer in {'all ' + str(k) if m == k else f'{m} of the {k}'} rounds" in line
    assert "none of the" not in line
    # round 32: the largest differences each way are cut: they repeated the farthest rounds' ratios
    assert "was quicker in" not in line and "%" not in line
    # the interval's reach (which speedup such rounds could see) is cut from 00
    assert 'would read "faster"' not in said and "above its estimate" not in said


def test_00_reviewed_run_prints_the_mended_lines(model, monkeypatch):
    *_, lines = _what_it_means(DATA / "00_setup-6e28961.csv", model, monkeypatch)
    assert lines[1] == (
        "The same code's 16 runs took 5.4 to 10.8 ms per step (host and allocator vary, not "
        "separated here: Idea 2's noise); the GPU idles 75% of the fastest run's step and 87% of "
        "the slowest's: the host and the allocator set the pace in every run.")
    assert any(x.endswith("as 0.59x is no evidence alone: a verdict reads all 8 rounds.")
               for x in lines)  # round 34
    assert ("The loop that ran first took longer in 6 of the 8 rounds; alternating the order keeps "
            "such a cost out of the estimate.") in lines  # round 34: its own line
    assert lines[5].startswith("In the right panel, runs over 10% from the median")  # round 37
    assert lines[-1].endswith("the floor is 0.196 ms, and in this loop the host and the allocator "
                              "set the pace.")
    assert len(lines) == 9  # round 37: the right panel read (intro.panel), one more line
    assert sum(len(RANGE.findall(x)) for x in lines) == 1


def test_00_idea_2_is_three_effects_and_the_pace_names_the_allocator():
    text, code = _markdown("00_setup.ipynb"), _code("00_setup.ipynb")
    # round 37: no bullets; what this run's panel shows is printed (intro.panel)
    for effect in ("a slow spell over one round", "one loop slow alone", "a cost of running first"):
        assert effect in text, effect
    assert "Within a round, position itself can matter" not in text
    assert "{intro.who_paces(idle)}" in code and "{budget.pace(idle)}" not in code
    assert len(RANGE.findall(text)) == 3  # the three verdict examples (round 37: the summary's cut)
    assert intro.who_paces(80) == "the host and the allocator set the pace"
    assert intro.who_paces(30, why=False) == "host, allocator and GPU share the pace"
    assert intro.who_paces(10) == "the GPU sets the pace"


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem.split("-", 1)[1])
def test_01_answer_once_and_sum_as_arithmetic(path):
    table = pd.read_csv(path)
    answer, why = intro.doubling(table), intro.growth_why(table, 16)
    est = answer.split("by ")[1].split("x")[0]
    grew = re.search(r"median run went from \d+ to \d+ ms \(([\d.]+)x\)", why)[1]
    assert len(RANGE.findall(answer)) == 1 and not RANGE.findall(why)
    assert "medians" not in answer, answer  # round 32: named once, in the Why head
    assert "The answer above" not in why and "The medians'" not in why and "An account" not in why
    s = re.search(r"- Sum: the median run grew (?:less|more) than the work's ([\d.]+)x: "
                  r".* run, ([\d.]+) × ([\d.]+) \+ ([\d.]+) × ([\d.]+) ([=≈]) ([\d.]+)(?: ≈ ([\d.]+))?\.$", why)
    if s is None:  # the work and the idle time grew alike: no Sum line
        assert "- Sum:" not in why
        return
    idle = re.search(r"- Idle: \d+ -> \d+ ms \(([\d.]+)x\)", why)[1]
    a, w, b, i = float(s[2]), float(s[3]), float(s[4]), float(s[5])
    assert (s[3], s[5]) == (s[1], idle)  # round 32: the medians' growth only in the head
    assert round(a + b, 2) == 1
    computed = f"{a * w + b * i:.2f}"
    # round 35: the sum of the printed terms, then "≈" the medians' growth where it prints otherwise
    assert (s[6], s[7], s[8]) == ("=", computed, None if computed == grew else grew), why
    assert abs(float(computed) - float(grew)) <= 0.02


def test_01_reviewed_run_prints_the_mended_lines():
    table = pd.read_csv(DATA / "01_naive_generation-6e28961.csv")
    assert intro.doubling(table) == (
        "Doubling the length from 100 to 200 tokens multiplied the time by 2.82x (2.36–3.24), less than the 4x of pure N² growth.")
    why = intro.growth_why(table, 16).split("\n")
    assert why[0].startswith("Why: the lines below split the median run into the GPU's "
                             "work and its idle time; from 100 to 200 tokens")  # round 32
    assert why[1] == "The answer's 2.82x above reads every round instead: keep that one."  # round 33
    assert why[2].startswith("- Work: ")
    assert why[-1] == ("- Sum: the median run grew less than the work's 3.43x: the work's and "
                       "the idle time's growths weighted by their shares of the 100-token run, "
                       "0.62 × 3.43 + 0.38 × 1.67 = 2.76.")


def test_01_pace_caveat_points_to_the_retries_printed_above():
    text = _markdown("01_naive_generation.ipynb")
    assert "everything the GPU waits for, the allocator included" in " ".join(text.split())  # round 34
    assert "(printed below)" not in text
