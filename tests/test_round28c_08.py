"""Round 28c (proportion) of lesson 08: the numbers cut from a line are each printed elsewhere in
the lesson, checked on every frozen run of 08 (898ea06's full and workshop tables included)."""
import re
import types

import pandas as pd
import pytest

from helpers.course import budget, claims, summary

from tests.test_round25_08 import DATA, _printed

RUNS = sorted(p.name[len("08_results_summary-"):-4] for p in DATA.glob("08_results_summary-*.csv"))


def _ladder(run):
    table = pd.read_csv(DATA / f"08_results_summary-{run}.csv")
    n = int(table["seq_len"].iloc[0])
    methods = {m: types.SimpleNamespace(notebook="peer" if str(nb) == "peer" else str(nb).zfill(2))
               for m, nb in dict.fromkeys(zip(table["method"], table["notebook"]))}
    names = summary.labels(methods)
    b = budget.per_step(table, list(methods), floor=0.22, labels=names, seq_len=n)
    shown = {f"{v:.2f}" for v in summary.view(table[table["seq_len"] == n])["ms per step"]}
    return table, n, names, b, shown


def test_every_frozen_run_is_read():
    assert {"898ea06", "898ea06-workshop", "9bd8862", "5274887"} <= set(RUNS)


@pytest.mark.parametrize("run", RUNS)
def test_the_lines_that_lost_their_wall_clocks_stand_under_a_table_that_has_them(run):
    table, n, names, b, shown = _ladder(run)
    data = b.set_index("method")
    walls = {m: f"{data.loc[names[m], 'wall_ms']:.2f}" for m in (claims.NAIVE, claims.KV,
             claims.STATIC, claims.KV_COMPILED) if names.get(m) in data.index}
    assert set(walls.values()) <= shown, (walls, shown)  # each cut ms is the table's
    gap = summary.compile_gap(b, names)
    for line in gap.split("\n"):
        assert "wall clock" not in line and "ms per step, with" not in line, line
        assert len(line.split()) <= 50, line  # 57 and 60 words before


_PRINTABLE = [r for r in RUNS if (DATA / f"01_naive_generation-{r}.csv").exists()
              or (DATA / f"02_kv_cache-{r}.csv").exists()]


@pytest.mark.parametrize("run", _PRINTABLE)
def test_a_note_names_its_loops_and_their_times_stand_once_above_it(run):
    """The notes repeated the four times of the shared-loops paragraph; each time is now printed
    once, in that paragraph, and each note names the loops it reads."""
    _, _, frame, lines = _printed(run)
    text = " ".join(lines + claims.read_over(frame)).replace("\n", " ")
    for note in claims.notes(frame):
        assert "ms per step" not in note and "not the ladder's" not in note, note
        book = re.match(r"Claim \d over notebook (\d\d)'s", note)[1]
        assert re.search(rf"\d+\.\d\d( ms per step)? in notebook {book}", text), text
        assert "in the ladder;" not in text  # the ladder's own times are its table's
        assert "as their own notebooks timed" in text or "as its own notebook timed" in text


@pytest.mark.parametrize("run", RUNS)
def test_the_answer_says_each_number_once(run):  # round 37: the readings line cut
    table, n, names, b, _ = _ladder(run)
    best = summary.fastest(table, n, taught=True)
    ms = f"{best['per_step_s'] * 1e3:.2f} ms"  # round 32: the figure's line and the closing line
    assert ms not in summary.reading(table, n, True)[0] and ms in summary.one_line(table, n, True)
