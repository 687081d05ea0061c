"""Round 30, lessons 08 and 09: the review's remarks, checked on every frozen table of a real GPU
run (tests/data, full and workshop).

08. (1) "generate() is 1.24x slower ...: 6.13 against 5.26 ms" and the KV cache's "1.22x faster"
    beside the table's 1.17: the first is the medians' ratio now, the second the rounds' estimate
    named as such, with the table's medians where they print differently; no range added.
    (2) "CUDA graphs cut the idle time further" with no compile-alone rung: computed under the
    figure, in both cases. (3) The readings line says why its pair: the one furthest apart.
09. (4) "about 44 µs here per sync it removes": the saving per sync removed at that size, not a
    fixed cost. (5) The contention line gives each clause a verdict in words.
"""
import json
import re

import pytest

from helpers import postprocess
from helpers.course import claims, stats, summary

from tests.test_round26_09 import RUNS as RUNS_09, _read
from tests.test_round29_08 import RANGE, ROOT, RUNS as RUNS_08, _ladder


def _medians(table, name, base):
    rows = table.set_index("method")["per_step_s"]
    return rows[base] / rows[name]  # the table's "× ..." cell: base over name


@pytest.mark.parametrize("run", RUNS_08)
def test_generate_note_divides_the_medians_it_prints(run):
    table, n, *_ = _ladder(run)
    note = summary._generate_note(table, n)
    if " slower than the course's KV-cache loop" not in note:
        return
    # round 35: the rounds' estimate, as the static cache's line; the medians named apart
    found = re.match(r"generate\(\) is (\d+\.\d+x slower) than the course's KV-cache loop "
                     r"\(lesson 02\) by the rounds; by the medians, (\d+\.\d\d) against "
                     r"(\d+\.\d\d) ms", note)
    assert found, note
    said, gen, kv = found.groups()
    assert said == stats.short(stats.row_speedup(table, "generate()", claims.KV, seq_len=n))
    rows = table[table["seq_len"] == n].set_index("method")["per_step_s"] * 1e3
    assert (float(gen), float(kv)) == (round(rows["generate()"], 2), round(rows[claims.KV], 2))
    assert not RANGE.search(note)


@pytest.mark.parametrize("run", RUNS_08)
def test_kv_gain_names_the_rounds_and_the_tables_medians(run):
    table, n, names, b, tables = _ladder(run)
    line = summary.kv_gain(b, names, table, tables, n, True)
    assert not RANGE.search(line), line
    said = line.split("its wall clock against the naive loop's here: ")[1].split(". The GPU")[0]
    if said == claims.CANT_TELL:
        return
    found = re.fullmatch(r"(\d+\.\d+)x (faster|slower) by the rounds"
                         r"(?: \(the table's medians: (\d+\.\d+)x( faster| slower)?\))?", said)
    assert found, said
    medians = _medians(table, claims.KV, claims.NAIVE)
    if found[2] == "slower":
        medians = 1 / medians
    if found[3] is None:  # they print alike
        assert f"{medians:.2f}" == found[1], said
    else:
        assert found[3] == f"{medians if not found[4] else 1 / medians:.2f}" != found[1], said


def test_the_reviewed_runs_08_lines():
    table, n, names, b, tables = _ladder("74b9f45-workshop")
    assert summary._generate_note(table, n).startswith(
        "generate() is 1.24x slower than the course's KV-cache loop (lesson 02) by the rounds; "
        "by the medians, 6.13 against 5.26 ms per step")  # round 35: each reading named
    assert ("its wall clock against the naive loop's here: 1.22x faster by the rounds (the "
            "table's medians: 1.17x).") in summary.kv_gain(b, names, table, tables, n, True)
    assert summary.compile_gap(b, names, table, n).endswith(
        "Compiling and CUDA graphs come in one rung here (static cache, compiled (05): compiling "
        "alone is timed only where compile_dynamic is on); per step they cut the GPU's idle "
        "time, 4.97 -> 0.56 ms.")


@pytest.mark.parametrize("run", RUNS_08)
def test_what_cuda_graphs_cut_is_computed_on_every_run(run):
    table, n, names, b, _ = _ladder(run)
    gap = summary.compile_gap(b, names, table, n)
    alone = claims.KV_COMPILED in set(table["method"])
    assert ("Compiling alone, without CUDA graphs" in gap) == alone
    assert ("come in one rung here" in gap) == (not alone), gap
    assert "further" not in gap and not RANGE.search(gap)
    if alone:
        assert gap.endswith(", less still.")


def test_the_takeaway_no_longer_types_further():
    nb = json.loads((ROOT / "notebooks" / "08_results_summary.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "cuts the idle time further" not in text
    assert "the line under the figure sets them against compiling alone" in text  # round 31


@pytest.mark.parametrize("tag", RUNS_09)
def test_the_saving_per_sync_is_named_at_its_size(tag):
    table, syncs = _read(tag), _read(tag, syncs=True)
    if syncs is None:
        return
    wide = postprocess.speedups(table)
    b, n = int(table["batch_size"].max()), int(table["seq_len"].max())
    cost = postprocess.sync_cost(wide, syncs) * 1e6
    line = postprocess.sync_cost_line(wide, syncs, b, n)
    assert line.startswith(f"Saved per sync removed at batch {b}, completions of {n}: about "
                           f"{cost[(b, n)]:.0f} µs = ("), line
    assert "not a fixed cost of a sync" in line and "per sync it removes" not in line
    if f"{cost.min():.0f}" != f"{cost.max():.0f}":
        assert line.endswith(f": {cost.min():.0f} to {cost.max():.0f} µs over the {len(cost)} "
                             "points timed alone.")
    one = postprocess.one_line(table, b, n, syncs, wide)
    assert f"it saved about {cost[(b, n)]:.0f} µs per sync removed at this size" in one
    assert " here per sync" not in one


@pytest.mark.parametrize("tag", RUNS_09)
def test_both_contention_clauses_carry_a_verdict(tag):
    table = _read(tag)
    if table["condition"].nunique() < 2:
        return
    line = postprocess.contention_line(table)
    if "too few to judge" in line:
        return  # one verdict for both clauses: too few runs
    head, host = line[:-1].split("; the host copy ")
    for clause in (head, host):
        assert re.search(r"is (slower|faster): |can't tell apart on this machine|"
                         r"takes .* more .* less", clause), (tag, clause)


def test_the_reviewed_runs_09_lines():
    table, syncs = _read("74b9f45-workshop"), _read("74b9f45-workshop", syncs=True)
    wide = postprocess.speedups(table)
    assert postprocess.contention_line(table) == (
        "Under this side load the per-row loop is slower: 91 ms more per batch than alone; the "
        "host copy against its time alone: can't tell apart on this machine (0.71–1.47), 5.35 "
        "against 4.96 ms (0.39 ms longer, 1.08x).")  # round 35: the method, then its range
    assert postprocess.sync_cost_line(wide, syncs, 128, 512) == (
        "Saved per sync removed at batch 128, completions of 512: about 44 µs = (27.33 - 4.96 ms) "
        "/ (512 - 4 syncs), the loop's small kernels and indexing included; a saving at this "
        "size, not a fixed cost of a sync: 23 to 44 µs over the 2 points timed alone.")


