"""Round 32's mends of lessons 10 and 11 (review of the full run 94d1a85), checked on every frozen
GPU table where a printed line could read differently from run to run."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import floor, kernels, stats

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
ELEVENS = sorted(p.name for p in DATA.glob("11_toward_the_floor-*.csv"))


def cells(stem):
    return json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]


def code(stem):
    return "\n".join("".join(c["source"]) for c in cells(stem) if c["cell_type"] == "code")


def rung_pairs(table):
    rungs = sorted((m for m in set(table["method"]) if m.split(" ")[0].isdigit()),
                   key=lambda m: int(m.split(" ")[0]))
    return [(new, new, old) for old, new in zip(rungs, rungs[1:])]


def test_11_ranks_the_gaps_once_and_keeps_the_medians_note_for_medians_off_a_range():
    """(1) The ranked-gaps paragraph printed for rung 1 and again for the Triton step; the
    medians note listed ratios about 0.01 from the rounds'."""
    eleven = code("11_toward_the_floor")
    assert eleven.count("kernels.gaps_ranked(") == 1 and "gaps_ranked(tables[START])" in eleven
    assert "floor.rounds_note(table, pairs, judge, outside_only=True, seq_len=n)" in eleven


@pytest.mark.parametrize("name", ELEVENS)
def test_11s_medians_note_speaks_only_where_a_line_printed_medians_outside_its_range(name):
    table = pd.read_csv(DATA / name)
    n = int(table["seq_len"].max())
    pairs = rung_pairs(table)
    note = floor.rounds_note(table, pairs, True, outside_only=True, seq_len=n)
    lines = [floor.rounds_ratio(table, new, old, True, seq_len=n) for _, new, old in pairs]
    beside = [line for line in lines if "the table's medians:" in line]
    assert bool(note) == bool(beside), (note, lines)
    if note:
        assert "lie outside the range for rung" in note and "each method's middle run" in note
        assert not re.search(r"give \d", note)  # no medians inside their ranges listed
        assert not re.search(r"\(\d+\.\d+\s*[–-]\s*\d+\.\d+[;)]", note)
    assert floor.rounds_note(table, pairs, False, outside_only=True, seq_len=n) == ""


def test_the_review_runs_medians_note_is_gone_and_5274887s_stays():
    full = pd.read_csv(DATA / "11_toward_the_floor-94d1a85.csv")
    assert floor.rounds_note(full, rung_pairs(full), True, outside_only=True, seq_len=100) == ""
    old = pd.read_csv(DATA / "11_toward_the_floor-5274887.csv")
    note = floor.rounds_note(old, rung_pairs(old), True, outside_only=True,
                             seq_len=int(old["seq_len"].max()))
    assert "lie outside the range for rung 2, rung 3 and rung 6 because" in note


def test_11_says_above_the_gemm_table_where_the_split_k_row_kernels_are_counted():
    """(2) The GEMM rows leave out the row kernels after attention out and MLP down."""
    assert kernels.gemm_rows_note() == (
        "The GEMM kernels alone: the row kernels after attention out and MLP down (adding "
        "split-K's pieces, the bias and the residual, then the layer norm) count under "
        "element-wise, not in these rows, and attention adds up QKV's pieces.")
    cell = next("".join(c["source"]) for c in cells("11_toward_the_floor")
                if "kernels.gemm_rows(tables[TRITON]" in "".join(c["source"]))
    assert cell.index("kernels.gemm_rows_note()") < cell.index("kernels.gemm_rows(tables[TRITON]")


def test_11_counts_the_programs_beside_the_sms_where_it_says_24():
    """(4) The SM count was printed about 230 lines after "only 24 programs"."""
    cs = cells("11_toward_the_floor")
    at = next(i for i, c in enumerate(cs) if "streams the weight for 32 columns" in "".join(c["source"]))
    assert "the line below counts them beside the GPU's SMs" in " ".join("".join(cs[at]["source"]).split())
    assert "kernels.programs_line(model.config.n_embd, sms)" in "".join(cs[at + 1]["source"])
    assert "".join(cs[at + 2]["source"]).startswith("Too few programs leave SMs idle")
    assert "GEMM table gives" not in "\n".join("".join(c["source"]) for c in cs)
    assert kernels.programs_line(768, 114).startswith("this GPU has 114 SMs")
    assert kernels.programs_line(768) == (
        "no CUDA GPU here, so no SMs to count; a GEMM with N = 768 at 32 columns per program "
        "runs 24 programs, 96 with split-K in 4")
    assert kernels.programs_line(64).endswith("runs 2 programs")  # the smoke model: no split


def test_10s_third_bullet_is_plain():
    """(3) 'where the preset runs them (Setup says which): ... as a peer' read as configuration."""
    opening = " ".join("".join(cells("10_cuda_graph_step")[0]["source"]).split())
    assert "if the preset asks for them (Setup's line says): several steps per launch, and " \
           "transformers' `generate()` with its static cache, for comparison." in opening
    assert "as a peer" not in opening
