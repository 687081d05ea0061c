"""Round 32 of mends, lessons 00 and 01, from the review of 94d1a85's full copies (the remarks
round 31 left). 00: the farthest rounds, the loop that ran first and the run farthest from its
loop's median no longer repeat one another (the order count joins the first line, without the
largest differences, which restated the farthest rounds' ratios; the told-apart line is shorter);
Idea 1 says the GPU work comes from one separate profiled run and idle = the timed runs' median
wall clock − that run's work. 01: one doubling factor (the answer's); the table's medians are
named once, in the Why head, as what splits a run into work and idle; the printed table drops
the status column where every length ran."""
import json
import re

import numpy as np
import pandas as pd
import pytest

from helpers.course import intro, stats
from test_round30_00_01 import DATA, ONE, RANGE, ROOT, ZERO, _md, _reach


def _nb(name):
    return json.loads((ROOT / "notebooks" / name).read_text())


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem)
def test_00_reach_is_fewer_shorter_lines_on_every_real_table(path):
    by_round, ratio, said = _reach(pd.read_csv(path))
    lines = said.split("\n")
    told = stats.verdict(ratio) != stats.NOISE
    first_far = 1 in set(by_round["round"].iloc[
        sorted(np.argsort(-np.abs(np.log(by_round["A / B"].to_numpy())), kind="stable")[:2])])
    assert len(lines) == 2 + first_far + told, said  # round 34: the order count on its own line
    assert lines[0].startswith("Round ratios A / B farthest from 1: rounds ")
    assert lines[1 + first_far].startswith("The loop that ran ")  # round 36: first or second
    assert max(len(x.split()) for x in lines) <= 70 and "%" not in said  # no repeated ratios
    assert "by up to" not in said and "(the last of round" not in said
    assert said.count("a verdict reads all") == 1 and not RANGE.search(said)  # round 34
    if told:  # the verdict in words, once, and what it means for later lessons
        table = pd.read_csv(path)
        n = int(table.loc[table["method"] == "loop A", "seq_len"].iloc[0])
        words = stats.say(table, "loop B", "loop A", True, seq_len=n).split(" (")[0]
        assert lines[-1].startswith(f"This run told the identical loops apart ({words}): in later "
                                    "lessons, a verdict about that size may be noise. Without ")
        assert lines[-1].count("median") == 1


def test_00_reviewed_run_prints_two_lines():
    _, _, said = _reach(pd.read_csv(DATA / "00_setup-94d1a85.csv"))
    assert said.split("\n") == [
        "Round ratios A / B farthest from 1: rounds 2 (1.47x) and 3 (1.38x), A the slower in both, "
        "its two runs back to back; the other 6 rounds lay between 1.00x and 1.21x. So in a later "
        "lesson, one round as far from 1 as 1.47x is no evidence alone: a verdict reads all 8 "
        "rounds.",  # round 34
        "The loop that ran first took longer in 5 of the 8 rounds, about half: this run shows no "
        "cost of running first.",  # round 37
        "This run told the identical loops apart (1.14x faster): in later lessons, a verdict about "
        "that size may be noise. Without A's run in round 2, the farthest from its loop's median "
        "(304.1 ms against 224.3), the other 7 rounds read 1.10x faster."]


def test_00_idea_1_says_where_the_gpu_work_comes_from():
    md = _md("00_setup.ipynb")
    assert "one separate, untimed run" in md
    assert ("The GPU **idle** is the timed runs' median wall clock minus that one profiled run's "
            "GPU work") in md
    assert len(RANGE.findall(md)) == 3  # no range added (round 37: the summary's cut)


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem)
def test_01_one_doubling_factor_and_the_medians_named_once(path):
    table = pd.read_csv(path)
    answer, why, one = intro.doubling(table), intro.growth_why(table, 16), intro.takeaway(table)
    assert "medians" not in answer and len(RANGE.findall(answer)) == 1
    head = why.split("\n")[0]
    assert head.startswith("Why: the lines below split the median run into the GPU's work "
                           "and its idle time; from ")
    grew = re.search(r"\(([\d.]+)x\)\.$", head)[1]
    # the medians' growth is printed once as a factor (the Sum line's arithmetic may end on it)
    assert f"({grew}x)" not in "\n".join(why.split("\n")[1:]) and f"{grew}x" not in one
    assert "grew " + grew not in why
    assert "split on the table's medians, the GPU work grew" in one or "medians" not in one


def test_01_reviewed_run_reads_297_once():
    table = pd.read_csv(DATA / "01_naive_generation-94d1a85.csv")
    assert intro.doubling(table) == ("Doubling the length from 100 to 200 tokens multiplied the "
                                     "time by 2.97x (2.81–3.13), less than the 4x of pure N² "
                                     "growth.")
    assert intro.growth_why(table, 16).split("\n")[0].endswith("went from 788 to 2317 ms (2.94x).")
    assert intro.takeaway(table).endswith("2.97x, less than the 4x of pure N² growth; split on the "
                                          "table's medians, the GPU work grew 3.43x and the idle "
                                          "time 1.70x.")


def test_01_table_drops_status_only_where_every_length_ran():
    from helpers.course import results

    code = next("".join(c["source"]) for c in _nb("01_naive_generation.ipynb")["cells"]
                if "growth.time_lengths(" in "".join(c["source"]))
    last = code.strip().split("\n")[-1]
    assert last == 'shown.drop(columns="status") if shown["status"].eq("ok").all() else shown'
    for path in ONE:
        table = pd.read_csv(path)
        shown = results.pretty(table)
        g = {"shown": shown}
        out = eval(last, g)
        assert ("status" in out) == (not table["status"].eq("ok").all()), path.stem
    failed = pd.read_csv(ONE[0]).assign(status=["ok"] * (len(pd.read_csv(ONE[0])) - 1) + ["oom"])
    assert "status" in eval(last, {"shown": results.pretty(failed)})
