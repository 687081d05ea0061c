"""Round 35's review of 08 and 09, read on every frozen table. (09) The contention line's "can't
tell apart" names its method and gives its range, on the scale of the "1.30x" beside it. (08) The
ladder's × columns are the rounds' estimates, the answer every line quotes; the static cache's
and generate()'s lines against the KV cache both read the rounds, a tie with its range; a claim's
part the run clearly contradicts is called "contradicted", as the definition says."""
import glob
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers import postprocess
from helpers.course import claims, stats, summary

DATA = Path(__file__).resolve().parent / "data"
TABLES_09 = sorted(Path(p).name for p in glob.glob(str(DATA / "09_host_sync_token_processing-*.csv")))
TABLES_08 = sorted(Path(p).name for p in glob.glob(str(DATA / "08_results_summary-*.csv")))
RANGE = re.compile(r"\((\d+\.\d+)\s*[–-]\s*(\d+\.\d+)[;)]")


@pytest.mark.parametrize("name", TABLES_09)
def test_09_the_tie_under_load_names_its_method_and_range(name):
    table = pd.read_csv(DATA / name)
    if table["condition"].nunique() < 2:
        return
    line = postprocess.contention_line(table)
    if "can't tell apart on this machine" not in line or "at batch" in line:
        assert not RANGE.search(line), line  # no tie, or several points: no range added
        return
    found = re.search(r"the host copy against its time alone: can't tell apart on this machine "
                      r"\((\d+\.\d+)–(\d+\.\d+)\), (\d+\.\d\d) against (\d+\.\d\d) ms \(\d+\.\d\d "
                      r"ms (?:longer|shorter), (\d+\.\d\d)x\)\.$", line)
    assert found, line
    low, high, busy, alone, x = (float(g) for g in found.groups())
    assert low <= 1 <= high and low <= x <= high, line  # the ratio beside it, on the same scale
    assert len(RANGE.findall(line)) == 1


def test_09_the_reviewed_runs_line():
    table = pd.read_csv(DATA / "09_host_sync_token_processing-2f157b6.csv")
    assert postprocess.contention_line(table) == (
        "Under this side load the per-row loop is slower: 247 ms more per batch than alone; the "
        "host copy against its time alone: can't tell apart on this machine (0.91–1.52), 23.18 "
        "against 17.81 ms (5.37 ms longer, 1.30x).")


@pytest.mark.parametrize("name", TABLES_08)
def test_08_the_table_shows_the_rounds_estimate(name):
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].iloc[0])
    ok = table[(table["seq_len"] == n) & (table["status"] == "ok")]
    view = summary.view(ok).set_index("method")
    column = "× naive (rounds)"
    assert column in view, list(view.columns)
    for method in view.index:
        assert view.loc[method, column] == round(
            stats.row_speedup(ok, method, claims.NAIVE, seq_len=n).estimate, 2)


def test_08_the_reviewed_runs_two_lines_against_the_kv_cache_read_the_rounds():
    table = pd.read_csv(DATA / "08_results_summary-43fefa3.csv")
    n = int(table["seq_len"].iloc[0])
    view = summary.view(table).set_index("method")
    assert (view.loc["static cache", "× naive (rounds)"], view.loc["KV cache", "× naive (rounds)"]) \
        == (1.08, 1.27)  # the review: the table's 1.26 and 1.43 were the medians'
    assert summary._generate_note(table, n) == (
        "generate() and the course's KV-cache loop (lesson 02): 8.91 against 7.80 ms per step by "
        "the medians; by the rounds, can't tell apart on this machine (0.82–1.20).")
    static = stats.row_speedup(table, claims.STATIC, claims.KV, seq_len=n)
    assert stats.short(static) == "1.17x slower"
    data = pd.DataFrame({"method": ["static cache (04)", "KV cache (02)"], "wall_ms": [8.81, 7.80],
                         "gpu_ms": [1.49, 1.49]}).set_index("method")
    names = {claims.STATIC: "static cache (04)", claims.KV: "KV cache (02)"}
    assert summary._eager_cache(data, names, table, n).startswith(
        "The static cache (04) is 1.17x slower than the KV cache (02) by the rounds, with GPU work")


def test_08_a_contradicted_part_is_called_so():
    """The parts' word is the one 08's definition of "not reproduced" uses (the frozen claims
    tables, written before, still hold "not borne out")."""
    import json
    assert claims._PART_WORDS[claims.NOT_REPRODUCED] == "contradicted"
    nb = json.loads((DATA.parent.parent / "notebooks" / "08_results_summary.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in nb["cells"])
    assert "clearly contradicted" in text and "not borne out" not in text
