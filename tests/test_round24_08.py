"""Round 24's review of lesson 08, checked on real GPU tables (frozen in tests/data): the published
run of 3deacb3, the runs of f4bf2b7, ba37cc3 (12:29), 8973374 (09:46) and 90c3788 (06:54), and the
workshop tables of 3deacb3, f4bf2b7 and 6bba703."""
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.course import claims, stats, summary

DATA = Path(__file__).resolve().parent / "data"
FULL = {"3deacb3": "3deacb3", "f4bf2b7": "f4bf2b7", "ba37cc3": "ba37cc3", "8973374": "8973374",
        "90c3788": "90c3788"}
ONE = {"90c3788": "90c3788-published"}  # notebook 01's table of that run
WORKSHOP = ["3deacb3-workshop", "f4bf2b7-workshop", "6bba703-workshop"]


def _read(name, run):
    path = DATA / f"{name}-{run}.csv"
    return pd.read_csv(path) if path.exists() else None


def _full(run):
    ladder = _read("08_results_summary", run)
    tables = {name: _read(name, ONE.get(run, run) if name.startswith("01") else run)
              for name in claims.TABLES.values()}
    return ladder, tables


def _note(frame, number):
    found = [n for n in claims.notes(frame) if n.startswith(f"Claim {number}")]
    return found[0] if found else ""


@pytest.mark.parametrize("run", WORKSHOP)
def test_workshop_ladders_print_no_baseline_note_without_a_matching_table(run):
    ladder = _read("08_results_summary", run)
    frame = claims.check_claims(ladder, {}, preset="workshop")
    assert _note(frame, 7) == "" and _note(frame, 5) == ""


@pytest.mark.parametrize("run", list(FULL) + WORKSHOP)
def test_a_slower_generate_names_its_gpu_work_and_the_hosts_share(run):
    """Fix 3: generate() 9.69 ms per step against the KV cache's 7.00 was left unexplained. Where
    it is slower, the line gives both GPU works; the extra is called the host's only where the GPU's
    work grew by less than half of it (on every real run it grew by 0.06 ms or less)."""
    ladder = _read("08_results_summary", run)
    n = int(ladder["seq_len"].iloc[0])
    rows = ladder.set_index("method")
    ms = (rows["per_step_s"] * 1e3).round(2)
    note = summary._generate_note(ladder, n)
    ratio = claims.stats.row_speedup(ladder, "generate()", claims.KV, seq_len=n)
    if ms["generate()"] <= ms[claims.KV] or claims.stats.verdict(ratio) != claims.stats.SLOWER:
        assert "host's" not in note  # round 29: only a gap the rounds call slower is attributed
        return
    gpu = (rows["gpu_busy_s"] / n * 1e3).round(2)
    said = claims.stats.short(ratio)  # round 35: the rounds' reading, the medians named apart
    assert note.startswith(f"generate() is {said} than the course's KV-cache loop (lesson 02) by "
                           f"the rounds; by the medians, {ms['generate()']:.2f} against {ms[claims.KV]:.2f} "
                           f"ms per step, with GPU work of {gpu['generate()']:.2f} against "
                           f"{gpu[claims.KV]:.2f} ms"), note
    extra = ms["generate()"] - ms[claims.KV]
    assert f"so most of the {extra:.2f} ms it adds is the host's" in note
    assert "(this lesson does not take it apart)" in note
    assert note in summary.reading(ladder, n, True)


def test_generate_note_leaves_the_host_out_where_the_gpu_work_grew():
    ladder = _read("08_results_summary", "3deacb3")
    grew = ladder.copy()
    grew.loc[grew["method"] == "generate()", "gpu_busy_s"] = 0.3  # 3.00 ms per step
    note = summary._generate_note(grew, 100)
    assert note.endswith("with GPU work of 3.00 against 1.54 ms."), note


def test_the_peers_say_what_they_run():
    """Fix 3: the static peer's compiled step belongs in the ladder's "what it changes" column."""
    assert summary.WHAT["generate() static"] == "transformers' loop: static cache, step compiled"
    assert summary.WHAT["generate()"] == "transformers' loop: dynamic cache, eager"
    assert all(len(v) <= 50 for v in summary.WHAT.values())


