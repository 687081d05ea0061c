"""Round 28c (proportion: cut, do not add) on 00 and 01, checked on every real table in tests/data:
the printed lines got shorter, and none of the facts they carried was dropped."""
import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.course import budget, intro, stats
from tests.test_round28_00_01 import DATA, ONE, ZERO

ROOT = Path(__file__).parent.parent


def _cells(name):
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def model():
    from helpers.model import build_model
    return build_model("gpt2", "cpu", seed=0)


def _what_it_means(path, model, monkeypatch):
    """00's "What it means" and "In one line" cells, run on a real table (bandwidth fixed)."""
    monkeypatch.setattr(budget, "bandwidth", lambda device: 2.97e12)
    monkeypatch.setattr(stats, "can_judge", lambda P: True)
    table = pd.read_csv(path)
    n = int(table.loc[table["method"] == "loop A", "seq_len"].iloc[0])

    class P:
        batch_size, prompt_len, device = int(table["batch_size"].iloc[0]), 16, "cuda"

    step = budget.per_step(table, ["loop A"], seq_len=n,
                           floor=budget.floor_ms(model, "cuda", P.batch_size, 16, n))
    by_round = intro.rounds(table, "loop A", "loop B")
    g = dict(stats=stats, intro=intro, budget=budget, table=table, n=n, P=P, step=step,
             by_round=by_round, model=model)
    cells = _cells("00_setup.ipynb")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(next(c for c in cells if c.startswith("judge = stats.can_judge")), g)
        exec(next(c for c in cells if "In one line" in c), g)
    return table, n, step.iloc[0], by_round, out.getvalue().strip().split("\n")


@pytest.mark.parametrize("path", ZERO, ids=lambda p: p.stem.split("-", 1)[1])
def test_00_what_it_means_is_shorter_and_keeps_its_facts(path, model, monkeypatch):
    table, n, s, by_round, lines = _what_it_means(path, model, monkeypatch)
    words = [len(x.split()) for x in lines]
    assert max(words) <= 70, (path.stem, max(words), lines)  # was up to 100
    text = "\n".join(lines)
    # the floor: the step's multiple and the total first, the bytes' split on its own line
    floor = next(i for i, x in enumerate(lines) if x.startswith("The step takes "))
    assert lines[floor].startswith(f"The step takes {s['wall_ms'] / s['floor_ms']:.0f}x the floor, "
                                   f"{s['floor_ms']:.3f} ms on average over the run's {n} steps")
    total = re.search(r"= (\d+) MB / [\d.]+ TB/s measured\.$", lines[floor])[1]
    split = re.match(rf"The {total} MB: (\d+) MB of weights and (\d+) MB of keys and values \(",
                     lines[floor + 1])
    assert split and int(split[1]) + int(split[2]) in (int(total) - 1, int(total), int(total) + 1)
    # the farthest rounds, the order count and both thresholds are all still printed
    ratio = stats.row_speedup(table, "loop B", "loop A", seq_len=n)
    r = by_round["A / B"].to_numpy()
    far = sorted(np.argsort(-np.abs(np.log(r)), kind="stable")[:2])
    assert "rounds " + " and ".join(f"{i + 1} ({r[i]:.2f}x)" for i in far) in text
    assert ("Round 1, the first after the warm-up" in text) == (0 in far)
    assert f"is no evidence alone: a verdict reads all {len(r)} rounds." in text  # round 34
    assert "The loop that ran first took longer in" in text or \
        "The loop that ran second took longer in" in text  # round 36
    assert "faster\" only from about" not in text  # round 29: the interval's reach is cut
    assert ("told the identical loops apart" in text) == (stats.verdict(ratio) != stats.NOISE)
    # cut repeats: the estimate and its interval are named once, in the verdict line
    assert "the estimate and its interval" not in text and "a smaller difference either way" not in text
    assert "Alternating the order puts" not in text
    # the one line: one line, last, without the first line's "median time ÷ its N tokens"
    assert lines[-1].startswith("In one line: ") and "÷" not in lines[-1]
    assert f"{s['wall_ms']:.3f} ms" in lines[-1] and f"{s['floor_ms']:.3f} ms" in lines[-1]


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem.split("-", 1)[1])
def test_01_why_head_is_split_and_keeps_every_ratio(path):
    table = pd.read_csv(path)
    why = intro.growth_why(table, 16).split("\n")
    words = [len(x.split()) for x in why]
    assert max(words) <= 50, (path.stem, max(words), why)  # the head was 77 words
    head = why[:next(i for i, x in enumerate(why) if x.startswith("- Work: "))]
    rounds = intro.doubling(table).split("by ")[1].split("x")[0]
    grew = re.search(r"\(([\d.]+)x\)\.$", head[0])[1]  # round 32: the head ends on the medians
    # round 29: one head line; the medians' ratio is named once, in the answer's parenthesis
    # round 33: a second head line where the answer and the medians print apart
    assert len(head) == 1 or (len(head) == 2 and head[1].startswith("The answer's ")), head
    assert "the table's medians" not in intro.doubling(table)  # round 32: named once, in the Why head
    assert re.search(r"per step [\d.]+(, [\d.]+)* and [\d.]+ ms at", next(x for x in why if x.startswith("- Idle: ")))


@pytest.mark.parametrize("path", ONE, ids=lambda p: p.stem.split("-", 1)[1])
def test_01_one_line_keeps_the_medians_total_and_its_parts(path):
    table = pd.read_csv(path)
    one, why = intro.takeaway(table), intro.growth_why(table, 16)
    assert one.startswith("In one line: ") and "\n" not in one
    work = re.search(r"- Work: \d+ -> \d+ ms \(([\d.]+)x\)", why)[1]
    idle = re.search(r"- Idle: \d+ -> \d+ ms \(([\d.]+)x\)", why)[1]
    if "on the table's medians" in one:
        assert "x)" not in one  # round 32: the medians' growth is named in the Why head alone
        assert one.endswith(f"split on the table's medians, the GPU work grew {work}x and the "
                            f"idle time {idle}x.")
        assert "instead of the rounds" not in one and len(one.split()) <= 40


def test_prose_no_longer_restates_the_printout():
    def md(name):
        nb = json.loads((ROOT / "notebooks" / name).read_text())
        return " ".join(" ".join("".join(c["source"]) for c in nb["cells"]
                                 if c["cell_type"] == "markdown").split())
    zero, one = md("00_setup.ipynb"), md("01_naive_generation.ipynb")
    assert "counts the rounds the first-run loop lost" not in zero
    assert "The wait is not only launches and syncs" not in zero
    assert "The Sum line only accounts" not in one and "The Pace line applies" not in one
    assert "What the idle time is made of is not measured here" not in one
    # what stays: the pace caveat (round 30: the guess to test became what to look for)
    assert "A guess to test" not in one and "waits for, the allocator included" in one  # round 34
