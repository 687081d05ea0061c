"""Round 34 (proportion) of lessons 08 and 09, read on every frozen run: 08's figure plumbing in
``summary`` (the same labels and sentence as the cell printed before), "can't tell apart" defined
without "the noise", claims 5 and 7's notes one line where both keep their verdict; 09's summary
no longer reprints the Plot's length line."""
import re

import pandas as pd
import pytest

from helpers.course import budget, claims, summary

from tests.test_round25_08 import _printed
from tests.test_round28c_08 import RUNS, _ladder
from tests.test_round32_08_09 import _cells


@pytest.mark.parametrize("run", RUNS)
def test_08_figure_helpers_print_what_the_cell_printed(run):
    table, n, names, b, _ = _ladder(run)
    best = summary.fastest(table, n, taught=True)["method"]  # the cell's old lines
    before = "naive loop" if best != "naive loop" else "KV cache"
    assert summary.figure_line(b, names, table, n) == budget.sentence(b, names[best], names[before])
    noted = summary.pdl_note(b, names, "cpu")
    assert noted["gpu_note"].isna().all() and "gpu_note" not in b  # no PDL off a GPU; b untouched


def test_08_pdl_note_labels_lesson_11s_bar_only(monkeypatch):
    import torch
    table, n, names, b, _ = _ladder("4448ee4")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    noted = summary.pdl_note(b, names, "cuda")
    got = dict(zip(noted["method"], noted["gpu_note"]))
    fused = names[summary.FUSED]
    assert got[fused] == f"busy {b.set_index('method').loc[fused, 'gpu_ms']:.2f}: kernels + PDL waits, lesson 11"
    assert all(pd.isna(v) for m, v in got.items() if m != fused)


def test_08_code_and_prose():
    cells = _cells("08_results_summary")
    code = "\n".join(s for t, s in cells if t == "code")
    prose = "\n".join(s for t, s in cells if t == "markdown")
    assert 'b["gpu_note"]' not in code and "pdl_on" not in code and "before = " not in code
    assert "summary.pdl_note(b, names, P.device)" in code
    assert "claims.read_over(verdicts)" in code and "claims.notes(verdicts)" not in code
    assert "within the noise" not in prose
    assert "**can't tell apart on this machine** when no part is either borne out or contradicted" \
        in prose


@pytest.mark.parametrize("run", RUNS)
def test_08_notes_fold_only_where_both_keep_their_verdict(run):
    _, _, frame, lines = _printed(run)
    notes, shown = claims.notes(frame), claims.read_over(frame)
    shown = [" ".join(s.split()) for s in shown]  # round 36: wrapped, led by the loops' times
    if notes and not any(claims.RATHER in n for n in notes):
        assert len(shown) == 1 and shown[0].endswith(", the same verdict" + "s" * (len(notes) > 1)
                                                      + "."), shown
        for note in notes:  # each claim and its range kept
            number, low_high = re.search(r"Claim (\d) .+ about (\S+x), ", note).groups()
            assert f"{low_high}" in shown[0] and number in shown[0]
    else:
        assert [" ".join(s.split()) for s in shown[1:]] == notes and shown[0].endswith("lesson 00):") \
            if notes else not shown


def test_08_published_notes_in_one_line():
    _, _, frame, _ = _printed("4448ee4")
    assert " ".join(claims.read_over(frame)[0].split()).endswith(
        "about 3.29–4.29x and 9.72–12.23x, the same verdicts.")  # round 36: one line


def test_09_summary_prints_no_line_the_plot_printed():
    code = "\n".join(s for t, s in _cells("09_host_sync_token_processing") if t == "code")
    assert "length_reading" not in code and code.count("postprocess.one_line(") == 1
