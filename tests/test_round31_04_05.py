"""Round 31 of lessons 04 and 05, read on every frozen GPU table. 04: the operations line says
which cache each count is on (the static step's count grows on the GPU where the cache's length is
not a multiple of 8: attention pads the mask, two operations a layer; 551 on the table's prompt + 8
cache, 575 on the timed prompt + 100 one), and "Against the article" no longer weighs host cost
against GPU cost where the host sets the pace. 05: the prose credits every compiled mode with cutting
host work (default removed most of the eager step's idle time), and the first graph's repay counts
are said as a what-if."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import compiled as c05
from helpers.course import static_cache as c04
from test_round29_04_05 import t04

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
TABLES04 = sorted(DATA.glob("04_static_cache-*.csv"))
TABLES05 = sorted(p for p in DATA.glob("05_torch_compile-*.csv") if "compilation" not in p.stem)


def prose(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _ops(lens, prompt_len=16):
    """The counts the GPU runs gave: 447 dynamic; 551 static where the cache's length is a
    multiple of 8 (the table's prompt + 8), 575 where attention pads its mask."""
    ops = pd.DataFrame({"ops per step": [447, 551]}, index=["dynamic", "static"])
    ops.attrs["ops at"] = {n: {"dynamic": 447, "static": 551 if (prompt_len + n) % 8 == 0 else 575}
                           for n in lens}
    return ops


def ops_line_of(path):
    """04's operations line on a frozen table, with the GPU's counts (``_ops``), and the drawn
    length; "" where the line prices no extra operations."""
    t, lens = t04(path)
    point = c04.drawn_length(t, lens, True)
    line = c04.ops_line(t, lens, _ops(lens), point)
    return (line if "extra operations" in line else ""), point


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_ops_line_names_the_cache_of_each_count(path):
    line, point = ops_line_of(path)
    if not line:
        return
    if (16 + point) % 8:
        assert (f"128 extra operations (447 dynamic, 575 static on the timed prompt + {point} "
                "cache, the table's on prompt + 8)") in line, line
        assert "÷ 447 =" in line  # the price is the timed cache's dynamic count
    else:
        assert f"(counted above, and the same on the timed prompt + {point} cache)" in line


def test_04_prose_says_why_the_static_count_depends_on_the_length():
    text = prose("04_static_cache")
    assert "multiple of 8" not in text  # round 35: the aside served the estimate, cut
    assert "an estimate, since no operation is timed" not in text  # the line says it itself


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_against_article_weighs_host_time_only(path):
    t, lens = t04(path)
    line = c04.against_article(t, lens, True)
    assert "cost the GPU" not in line and "cost the host less" not in line
    if "waited longer on the host" in line:
        assert ("to win, its step would have to take the host less time than the dynamic step's, "
                "as the copies it saves are GPU work and the GPU already waits on the host.") in line


def test_05_prose_credits_every_mode_with_less_host_work():
    text = prose("05_torch_compile")
    assert "which fused kernels\ncut" not in text
    assert ("runs the\nstep as one compiled call, cutting both: less GPU work, and for the host no "
            "module-by-module\nPython or per-operation dispatch") in text
    assert "Every mode fuses kernels (the plan line above says" in text


@pytest.mark.parametrize("path", TABLES05, ids=lambda p: p.stem)
def test_05_first_graph_repay_is_a_what_if(path):
    t = pd.read_csv(path)
    ct = c05.compilation(t)
    said = c05.repay_line(ct, t)
    assert not re.search(r"\. At \d+\.\d s, repaid after", said)
    found = c05._fresh(ct, t)
    if found and found[4]:
        assert f"Had a mode's timed graph been a process's first, at {found[0]:.1f} s, it would be " \
               "repaid after" in said
    point = max(int(n) for n in t["seq_len"].unique())
    methods = [c05.EAGER] + [m for m in (c05.name("default"), c05.name("reduce-overhead"))
                             if m in set(t["method"])]
    summary = c05.summary_line(t, ct, methods, point, True)
    assert not re.search(r"first graph took \d+\.\d s, repaid", summary)
    assert "first graph" not in summary, summary  # round 36: the repay line's alone


def test_05_reviewed_run():
    t = pd.read_csv(DATA / "05_torch_compile-94d1a85.csv")
    said = c05.repay_line(c05.compilation(t), t)
    assert ("Had a mode's timed graph been a process's first, at 11.6 s, it would be repaid after "
            "34 runs of 100 tokens (default) and 25 (reduce-overhead).") in said
