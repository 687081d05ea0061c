"""Round 30 of lessons 04 and 05, read on every frozen GPU table. 04: the guide to the verdicts
says what the 3% compares (the medians' ratio against the verdict's, not the two medians); the
operations line says whether its count, made on a short cache, holds on the timed one (counted
again there: ``attention_inputs(..., seq_lens)``). 05: the idle line names the wall clock it
shortens and leaves the eager idle's ms to the budget sentence (round 30 read "4.90 ms shorter
... the eager step's 4.90 ms of idle" as a contradiction); the prose on the modes is general; the
first-graph line says why it matters."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget
from helpers.course import compiled as c05
from helpers.course import static_cache as c04
from helpers.model import build_model, make_prompt
from test_round29_04_05 import t04

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
TABLES04 = sorted(DATA.glob("04_static_cache-*.csv"))
TABLES05 = sorted(p for p in DATA.glob("05_torch_compile-*.csv") if "compilation" not in p.stem)
OPS = pd.DataFrame({"ops per step": [447, 551]}, index=["dynamic", "static"])  # the GPU runs'


def prose(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"])


def test_04_guide_says_what_the_3_percent_compares():
    text = prose("04_static_cache")
    assert "medians differ by more than 3%" not in text
    assert "give a ratio more than 3% away from it" in text
    assert "lesson.attention_inputs(model, prompt, P.device)" in text  # round 35: no "ops at"


def _ops(lens, static=551, dynamic=447):
    ops = OPS.copy()
    ops.attrs["ops at"] = {n: {"dynamic": dynamic, "static": static} for n in lens}
    return ops


@pytest.mark.parametrize("path", TABLES04, ids=lambda p: p.stem)
def test_04_ops_line_prices_no_operations(path):
    """Round 35: the counts on the timed caches priced an estimate, cut."""
    t, lens = t04(path)
    point = c04.drawn_length(t, lens, True)
    assert "extra operations" not in c04.ops_line(t, lens, _ops(lens), point)


def test_04_attention_inputs_counts_one_step_each():
    """On the CPU (tiny model); round 35: no counts on the timed caches ("ops at"), which priced
    the estimate that was cut."""
    model = build_model("tiny", "cpu")
    prompt = make_prompt(2, 4, model.config.vocab_size, model.config.eos_token_id, "cpu")
    inputs = c04.attention_inputs(model, prompt, "cpu")
    assert "ops at" not in inputs.attrs
    assert (inputs["ops per step"] > 0).all()


@pytest.mark.parametrize("path", TABLES05, ids=lambda p: p.stem)
def test_05_idle_line_names_the_wall_clock(path):
    t = pd.read_csv(path)
    point = int(t["seq_len"].max())
    methods = [m for m in [c05.EAGER, c05.name("default"), c05.name("reduce-overhead")]
               if m in set(t["method"])]
    steps = budget.per_step(t, methods, seq_len=point)
    line = c05.idle_line(steps, methods)
    assert "ms of idle" not in line  # the eager idle's ms is the budget sentence's
    assert " ms" not in line  # round 36: the ms saved are the budget sentences'
    assert line.count(" by ") == len(methods) - 1
    assert ("most of each gain" in line) == (len(methods) > 2)
    fresh = c05._first_line(c05._fresh(c05.compilation(t), t))
    if "timed graph was this process's first graph" in fresh:
        assert fresh.endswith("so its time above likely includes the compiler's one-off start-up.")


def test_05_reviewed_run_idle_line():
    t = pd.read_csv(DATA / "05_torch_compile-74b9f45-workshop.csv")
    methods = [c05.EAGER, c05.name("reduce-overhead")]
    line = c05.idle_line(budget.per_step(t, methods, seq_len=50), methods)
    assert line == ("Against eager, the GPU's idle time per step fell: reduce-overhead by 91%; "
                    "most of the gain is time the GPU waited on the host, not faster kernels.")


def test_05_prose_on_the_modes_is_general():
    text = prose("05_torch_compile")
    assert "The default mode aims at both" not in text
    assert "Every mode fuses kernels (the plan line above says which modes this run compiled)" in text
