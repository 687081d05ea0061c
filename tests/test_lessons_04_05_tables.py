"""Rounds 21 and 22 of mends of lessons 04 and 05, read on real GPU tables: the published run's CSVs
(figures/data/), three earlier full runs' and the 13:41 workshop run of 6bba703 (frozen in
tests/data/ as NAME-COMMIT.csv), the copy round 22's students read.

04: each step's operations are counted (the host's likely extra work, not stated as fact); the
floor's ratio divides the numbers the budget sentence prints; the 400-token times are printed
once (the budget sentence), the host line gives only each length's extra host time.
05: the compile cost a fresh process pays (this process's first graph) and the runs that repay
it; the share of the eager idle removed is named apart from the budget's idle share.

04: a printed line says which of the article's lengths (100, 200, 400) this run timed and what it
found at each, and where it timed none, that none is tested; with one length the figure's line
says so rather than "where the caches differ most clearly". 05: a printed line says which modes
this run compiled (a mode left out is not measured here) and whether the tokens were checked;
the prose names no batch size or mode that a preset changes."""
import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from helpers.course import budget, stats  # noqa: E402
from helpers.course import compiled as c05  # noqa: E402
from helpers.course import static_cache as c04  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
RUNS = ["8973374", "90c3788", "eb4fe0c"]  # the 09:46, 06:54 and 05:14 full runs of 2026-11-27
WORKSHOP = "6bba703-workshop"  # the copy round 22's students read


def tables(name, workshop=False):
    """The published table, then each earlier run's (and the workshop run's)."""
    out = []
    path = REPO / "figures" / "data" / f"{name}.csv"
    if path.exists():
        out.append(("published", pd.read_csv(path)))
    for commit in RUNS + [WORKSHOP] * workshop:
        frozen = REPO / "tests" / "data" / f"{name}-{commit}.csv"
        if frozen.exists():
            out.append((commit, pd.read_csv(frozen)))
    if not out:
        pytest.skip(f"no {name}.csv")
    return out


def nth(found, run):
    """The ``run``-th (name, table) of ``found``, or a skip where this checkout has fewer runs."""
    if run >= len(found):
        pytest.skip("no such run's table")
    return found[run]


# --- 04 ------------------------------------------------------------------------------------------

def test_04_each_step_s_operations_are_counted(tiny):
    model, prompt, _ = tiny
    inputs = c04.attention_inputs(model, prompt, "cpu")
    ops = inputs["ops per step"]
    assert ops["static"] > ops["dynamic"] > 0  # the in-place writes and the mask: more host work
    with c04.OpCount() as counted:
        model(prompt[:, :1])
    assert counted.count > 0


@pytest.mark.parametrize("run", range(4))
def test_04_printed_numbers_come_from_printed_numbers(run):
    name, table = nth(tables("04_static_cache"), run)
    table = table[table["method"].isin(c04.EAGER)]
    lens = sorted(table["seq_len"].unique().tolist())
    point = c04.drawn_length(table, lens, True)
    floor = 0.33853  # round 21's published floor (the figure's 0.339, the sentence's 0.34)
    steps = budget.per_step(table, c04.METHODS, seq_len=point, floor=floor).round(2)
    said = budget.sentence(steps, c04.STATIC, c04.DYNAMIC)
    wall = re.search(r"wall clock went from [\d.]+ to ([\d.]+) ms", said).group(1)
    shown_floor, times = re.search(r"The floor is ([\d.]+) ms: this step takes ([\d.]+)x", said).groups()
    assert times == f"{float(wall) / float(shown_floor):.3g}", (name, said)
    # the extra host time per step (ops_line's since round 24), each the difference of the idle
    # times a reader gets from the table (wall minus GPU per step, each to 0.01 ms); the drawn
    # length's the budget sentence's
    inputs = pd.DataFrame({"ops per step": [459, 551]}, index=["dynamic", "static"])
    host = c04.ops_line(table, lens, inputs, point)
    for extra, n in re.findall(r"([\d.]+) ms (?:more|less)(?: than the dynamic cache's)? at (\d+)", host):
        n = int(n)
        each = budget.per_step(table, c04.METHODS, seq_len=n).set_index("method")
        idle = {m: round(each.at[m, "wall_ms"], 2) - round(each.at[m, "gpu_ms"], 2) for m in c04.EAGER}
        assert extra == f"{abs(idle[c04.STATIC] - idle[c04.DYNAMIC]):.2f}", (name, host)
        if n == point:
            assert f"went from {idle[c04.DYNAMIC]:.2f} ms to {idle[c04.STATIC]:.2f} ms" in said
    # the summary: no time per step (the budget sentence's)
    line = c04.answer_line(table, steps, lens, True, point, inputs)
    assert " ms" not in line, line
    # the whiskers are in the legend
    fig, ax = plt.subplots()
    budget.plot(ax, steps)
    c04.plot_runs_range(ax, table, point)
    assert "whiskers: fastest to slowest run" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)


# --- 05 ------------------------------------------------------------------------------------------



def test_05_fresh_line_without_a_check_graph():
    table = pd.DataFrame([
        {"method": c05.EAGER, "seq_len": 50, "status": "ok", "mode": "eager", "median_s": 0.4,
         "first_call_s": float("nan"), "check_first_call_s": float("nan"), "compile_s": 0.0,
         "graphs_compiled": 0},
        {"method": c05.name("reduce-overhead"), "seq_len": 50, "status": "ok",
         "mode": "reduce-overhead", "median_s": 0.1, "first_call_s": 12.1,
         "check_first_call_s": float("nan"), "compile_s": 12.0, "graphs_compiled": 1}])
    said = c05.repay_line(c05.compilation(table), table)
    assert "Reduce-overhead's timed graph was this process's first graph, so its time above likely includes the compiler's one-off start-up." in said  # round 27b
    assert "new process" not in said
    assert "float32 check" not in said
    line = c05.summary_line(table, c05.compilation(table), [c05.EAGER, c05.name("reduce-overhead")],
                            50, True)
    # round 36: the repay count is the repay line's, not the summary's
    assert "first graph" not in line and line.endswith("took 12.0 s.")


# --- round 22 ------------------------------------------------------------------------------------

def prose(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def code(stem):
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


# --- 04 ------------------------------------------------------------------------------------------

def _word(table, n):
    ratio = stats.row_speedup(table, c04.STATIC, c04.DYNAMIC, seq_len=n)
    word = stats.verdict(ratio)
    return "can't tell apart" if word == stats.NOISE else word


@pytest.mark.parametrize("run", range(5))
def test_04_answer_line_says_what_the_article_found(run):
    """article_line is gone (round 24: it repeated the verdict lines); the summary says the
    article's finding at each length timed, or that it timed none of them."""
    name, table = nth(tables("04_static_cache", workshop=True), run)
    table = table[table["method"].isin(c04.EAGER)]
    lens = sorted(table["seq_len"].unique().tolist())
    steps = budget.per_step(table, c04.METHODS, seq_len=max(lens))
    line = c04.answer_line(table, steps, lens, True, max(lens))
    if set(c04.ARTICLE) <= set(lens):
        assert "; the article found it slower at 100, faster at 200, faster at 400" in line, line
    else:
        assert (f"; {stats.listed(lens)} tokens {'is' if len(lens) == 1 else 'are'} none of the "
                "article's lengths, so this run cannot test its claim (slower at 100, faster at "
                "200 and 400); the full preset does.") in line, line  # round 27b
    for n in lens:
        assert "article" not in c04.eager_verdict(table, n, True)


def test_04_figure_line_with_one_length_names_no_choice():
    _, table = [t for t in tables("04_static_cache", workshop=True) if t[0] == WORKSHOP][0]
    assert c04.drawn_length(table, [48], True) == 48
    assert c04.drawn_line(table, [48], 48, True) == "The figure draws 48 tokens, this run's only length."


def test_04_prose_names_no_preset_size():
    text = prose("04_static_cache")
    # exercise 2 sets its own sizes (a 400-token run at batch 32): a hypothetical, not this run
    for stale in ("lengths, batch 32", "at the article's lengths", "nearly twice", "Medians alone",
                  "leaving out any a slow"):
        assert stale not in text, stale
    assert "article_line" not in code("04_static_cache")


# --- 05 ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("run", range(5))
def test_05_plan_line_says_which_modes_ran_and_whether_tokens_were_checked(run):
    name, table = nth(tables("05_torch_compile", workshop=True), run)
    modes = [m for m in table["mode"].unique() if m != "eager"]
    checked = bool(table["check_first_call_s"].notna().any())
    line = c05.plan_line(modes, checked)
    graphs = c05.graphs_line(c05.compilation(table), table, checked)
    if name == "6bba703-workshop":  # the students' copy: reduce-overhead only, no token check
        assert (modes, checked) == (["reduce-overhead"], False)
        assert line == (
            "This run compiles the decode step in reduce-overhead mode only: the default mode "
            "(fused kernels, no CUDA graph) is not compiled, so its effect is not measured here. "
            "The compiled tokens are not checked against the eager KV-cache loop's in this run "
            "(check_tokens False).")
        assert graphs.startswith("Graphs compiled: reduce-overhead 1 (one at each length, the "
                                 "TF32 graph timed: the tokens were not checked, so no float32 "
                                 "check graph); while timing: 0."), graphs
    else:  # the full preset: both modes, each checked
        assert (modes, checked) == (["default", "reduce-overhead"], True), name
        assert line == ("This run compiles the decode step in default and reduce-overhead modes. "
                        "Each compiled loop's tokens are checked against the eager KV-cache "
                        "loop's through a float32 twin of its step (the lines below).")
        assert "float32 check, TF32 timed" in graphs
    # the count of graphs agrees with the check: two a mode with it, one without
    assert re.findall(r"(?:default|reduce-overhead) (\d)", graphs) == [str(1 + checked)] * len(modes)


def test_05_plan_line_on_a_cpu_smoke_run():
    assert c05.plan_line(["default"], True).startswith(
        "This run compiles the decode step in default mode only: reduce-overhead (the CUDA graph) "
        "is not compiled, so its effect is not measured here.")
    assert c05.plan_line([], False) == "This run compiles no mode: nothing compiled is measured here."


def test_05_prose_names_no_preset_size_or_mode_as_run():
    text = prose("05_torch_compile")
    for stale in ("batch 32", "32×", "token-identical", "(full preset)", "it runs **",
                  "does each remove", "can do some of both"):
        assert stale not in text, stale
    assert "lesson.plan_line(steps, P.check_tokens)" in code("05_torch_compile")
