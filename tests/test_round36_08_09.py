"""Round 36 (proportion) of lessons 08 and 09, read on every frozen run: 08's shared-loops
paragraph and its folded notes are one line after the claims' numbers, claim 1 without its
exponent; 09's sync table shows one column where every length gives the same counts."""
import glob
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers import postprocess
from helpers.course import claims

from tests.test_round25_08 import _printed
from tests.test_round28c_08 import RUNS

DATA = Path(__file__).resolve().parent / "data"
SYNCS = sorted(Path(p).name for p in glob.glob(str(DATA / "09_host_sync_token_processing_syncs-*.csv")))


@pytest.mark.parametrize("run", RUNS)
def test_08_claims_printout_is_shorter_and_says_each_time_once(run):
    _, _, frame, lines = _printed(run)
    shown = claims.read_over(frame)
    text = " ".join(" ".join(lines + shown).split())
    assert "The same eager loops" not in text and "the last line" not in text
    one = frame.iloc[0]["number"]
    if "per doubling" in one:
        assert re.fullmatch(r"x\d\.\d\d per doubling, fitted over [\d, and]+ tokens \(claim: x3\.5 "
                            r"to x4\.5\)", one), one
    notes = claims.notes(frame)
    if not notes:
        assert shown == []
        return
    lead = " ".join(shown[0].split())
    assert all(len(l) <= 100 for s in shown for l in s.split("\n")), shown
    for ms in re.findall(r"\d+\.\d\d", lead.split(":")[1] if ", 100 tokens:" in lead else ""):
        assert text.count(ms) >= 1
    if all(claims._SAME.match(n) for n in notes):  # one line, under 60 words
        assert len(shown) == 1 and len(lead.split()) <= 60, lead
    else:
        assert [" ".join(s.split()) for s in shown[1:]] == notes and lead.endswith("lesson 00):")


@pytest.mark.parametrize("name", SYNCS)
def test_09_sync_table_one_column_where_the_lengths_agree(name):
    syncs = pd.read_csv(DATA / name)
    view = postprocess.sync_table(syncs)
    counted = [c for c in view if c.startswith("syncs,")]
    same = syncs.groupby(["method", "batch_size"])["syncs"].nunique().max() == 1
    if syncs["seq_len"].nunique() > 1 and same:
        assert counted == ["syncs, every length"]
        assert "the same at every completion length" in postprocess.sync_count_line(syncs)
    else:
        assert counted == [f"syncs, length {n}" for n in syncs["seq_len"].unique()]
    assert len(view) == 2 * syncs["batch_size"].nunique()


def test_09_sync_table_keeps_columns_that_differ():
    syncs = pd.DataFrame({"method": ["per row"] * 2, "batch_size": [4, 4], "seq_len": [8, 16],
                          "syncs": [16, 17], "syncs_per_row": [4.0, 4.25]})
    assert [c for c in postprocess.sync_table(syncs) if c.startswith("syncs,")] == [
        "syncs, length 8", "syncs, length 16"]
