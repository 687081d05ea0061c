"""Round 27b of mends of lessons 02, 04 and 05, read on every real GPU table frozen in
tests/data/ (full and workshop runs).

02: the GPU-cut sentence names what the gains divide (a whole run's time, round by round), not
"the wall clock", which the line above prints as the medians per step. 04: a run that times none
of the article's lengths says it cannot test the article's claim, and which preset does (from the
presets). 05: no line says a new process would pay the first graph's cost again without the
condition that makes it true (Inductor's cache on disk found as this process found it); the
baseline's comparison with notebook 04 is promised only where 04 timed the same length."""
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import budget, growth, presets, stats
from helpers.course import compiled as c05
from helpers.course import static_cache as c04

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
NAMES = {"naive": "naive", "kv_cache": "KV cache"}


def _frozen(stem):
    found = sorted(p for p in DATA.glob(f"{stem}-*.csv"))
    assert found, stem
    return found


def _cells(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"]]


@pytest.mark.parametrize("path", _frozen("02_kv_cache"), ids=lambda p: p.stem)
def test_02_the_cut_sentence_names_what_the_gains_divide(path):
    t = pd.read_csv(path)
    lines = growth.pace_lines(t, "kv_cache", "naive", NAMES)
    if not lines:
        return
    said = lines[-2]
    assert "wall clock" not in said, said
    values = sorted(int(n) for n in t["seq_len"].unique())
    gains = [f"{stats.row_speedup(t, 'kv_cache', 'naive', seq_len=n).estimate:.2f}x"
             for n in values]
    if said.startswith("The cache cut"):  # round 28: the gains, printed just above, not repeated
        assert "by the gains above (naive \u00f7 KV cache run time, round by round)" in said, said
        assert not any(g in said for g in gains), said
    # what "the gains above" are: the gains note defines them the same way
    assert "naive time \u00f7 KV cache time" in growth.gains_note(t, "kv_cache", "naive", True, NAMES)


@pytest.mark.parametrize("path", _frozen("04_static_cache"), ids=lambda p: p.stem)
def test_04_answer_says_whether_this_run_can_test_the_article(path):
    t = pd.read_csv(path)
    t = t[t["method"].isin(c04.EAGER)]
    lens = sorted(int(n) for n in t["seq_len"].unique())
    answer = c04.answer_line(t, budget.per_step(t, c04.METHODS, seq_len=max(lens)), lens, True,
                             max(lens))
    assert "timed none" not in answer
    if set(lens) & set(c04.ARTICLE):
        assert "the article found it" in answer and "cannot test" not in answer
    else:
        assert (f"; {stats.listed(lens)} tokens {'is' if len(lens) == 1 else 'are'} none of the "
                "article's lengths, so this run cannot test its claim (slower at 100, faster at "
                "200 and 400); the full preset does.") in answer, answer
    assert set(c04.ARTICLE) <= set(presets.preset_values("04", "full")["seq_lens"])
    assert not set(c04.ARTICLE) <= set(presets.preset_values("04", "workshop")["seq_lens"])


def test_04_prose_says_the_summary_may_find_no_length():
    # round 29: the template sentence became a computed line (static_cache.against_article)
    assert not any("or that this run timed none of them" in c for c in _cells("04_static_cache"))


@pytest.mark.parametrize("path", [p for p in _frozen("05_torch_compile")
                                  if "compilation" not in p.stem], ids=lambda p: p.stem)
def test_05_a_new_process_cost_is_said_only_with_its_condition(path):
    t = pd.read_csv(path)
    ct = c05.compilation(t)
    said = c05.repay_line(ct, t)
    point = int(t["seq_len"].max())
    methods = list(dict.fromkeys(t["method"]))
    summary = c05.summary_line(t, ct, methods, point, True)
    for text in (said, summary):
        assert "would pay about that again" not in text
        for part in text.split("new process")[1:]:
            assert part.startswith((" that finds Inductor's cache on disk as this one did",
                                    " finding Inductor's cache on disk as this one did")), text
    found = c05._fresh(ct, t)
    if found and not found[4] and found[2] is not None:
        assert said.count("was this process's first graph, so its time above likely includes the compiler's one-off start-up.") == 1


def test_05_prose_keeps_only_promises_it_can_keep():
    cells = _cells("05_torch_compile")
    text = "\n".join(cells)
    assert "a line below compares its time with\nnotebook 04's" not in text
    # round 29: "and otherwise says so" read as template text
    assert "the last line below compares its time\nwith notebook 04's in this run." in text
    assert "A new process would pay its\nfirst graph's cost again" not in text
    assert "new process" not in text  # round 28: said nowhere
    # where 04 has no time, the line says so rather than comparing
    t = pd.read_csv(DATA / "05_torch_compile-9bd8862-workshop.csv")
    point = int(t["seq_len"].max())
    assert c05.baseline_line(t, point, list(dict.fromkeys(t["method"])), float("nan")).startswith(
        f"Notebook 04 has no time of this loop at {point} tokens in this run")
