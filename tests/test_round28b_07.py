"""Round 28b, lesson 07: the event against two streams judged from the rounds with a range (or
"can't tell apart on this machine"), never a winner by the medians alone; the closing paragraph
promises only what the printed line holds. Read on every frozen real 07 table."""
import re

import pytest

from helpers.course import late_check, stats
from tests.test_round27_06_07 import RUNS07, source
from tests.test_round28_06_07 import table07


@pytest.mark.parametrize("run", RUNS07)
def test_07_event_against_two_streams_has_a_verdict_at_every_batch(run):
    t, _ = table07(run)
    line = late_check.stream_event_line(t)
    rows = t[(t["regime"] == "compiled") & (t["status"] == "ok")]
    assert "by the medians" not in line and "is faster at" not in line
    if "come out about the same as two streams at every batch (within " in line:
        return  # round 33: every reading within a few percent (tests/test_round33_07.py)
    listed = line.split(". With", 1)[-1]  # round 32: the head may name where it costs time
    assert listed.count("at batch") == rows["batch_size"].nunique()  # each batch named once
    for b in sorted(rows["batch_size"].unique()):
        ratio = stats.row_speedup(rows[rows["batch_size"] == b], "event", "interleaved")
        word = stats.verdict(ratio)
        said = re.search(rf"at batch {b}[,:] (?:one stream and an event against two streams: )?"
                         r"([^;]+?)(?:;|\.$)", listed).group(1)
        close = word != stats.NOISE and late_check._apart_pct(ratio) < late_check.PRACTICAL_PCT
        if len(rows["batch_size"].unique()) > 1:  # round 29: several batches, words only
            assert said == ("about the same" if close else stats.short(ratio)), line  # round 35
            continue
        if close:
            assert said.startswith("about the same, "), line
            continue
        if word == stats.NOISE:
            assert said.startswith("can't tell apart on this machine ("), line
        else:
            assert re.match(rf"[\d.]+x {word} \([\d.]+–[\d.]+", said), line
    # the head follows the verdicts: nothing measurable only where every batch is a tie
    ratios = [stats.row_speedup(rows[rows["batch_size"] == b], "event", "interleaved")
              for b in rows["batch_size"].unique()]
    kinds = {stats.NOISE if late_check._apart_pct(r) < late_check.PRACTICAL_PCT else stats.verdict(r)
             for r in ratios}  # round 35: under PRACTICAL_PCT is "about the same"
    assert line.startswith("The second stream buys nothing measurable.") == (kinds == {stats.NOISE})
    assert ("buys time" in line or "worth depends" in line) == (stats.SLOWER in kinds)


def test_07_event_line_on_the_reviewed_run():
    t, _ = table07("2518203-workshop")
    assert late_check.stream_event_line(t) == (
        "The second stream buys nothing measurable. With the CUDA graph step at batch 16, one "
        "stream and an event against two streams: about the same, 1.4% apart (1.005–1.024).")
    t, _ = table07("898ea06-workshop")
    assert late_check.stream_event_line(t).startswith(
        "The second stream buys nothing measurable. With the CUDA graph step at batch 16, one "
        "stream and an event against two streams: can't tell apart on this machine (0.85–1.07")


def test_07_prose_parses_and_promises_what_is_printed():
    text = source("07_stream_interleaving")
    assert "a share their middle runs" not in text
    assert "middle rounds" not in text  # round 32: plain words
    assert "its range is the speedups those rounds are" in text
    assert "what the late loops left" not in text and "told apart from it" not in text


@pytest.mark.parametrize("run", RUNS07)
def test_07_closing_line_holds_what_the_summary_promises(run):
    t, summary = table07(run)
    batch = 16 if run.endswith("workshop") else 32  # the presets' batch_size
    where = late_check.where_line(t, summary, profiled=batch)
    resolved = summary[(summary["regime"] == "compiled") & summary["check_resolved"].astype(bool)]
    if where:  # several batch sizes resolved: where the check weighs most (round 34)
        assert len(resolved) >= 2
        assert re.search(r"largest share of the step at batch \d+ \(\d+ µs, \d+% of the [\d.]+ ms "
                         r"step without it\)", where), where
        assert re.match(r"Where it pays: two streams gain most over the per-step sync at batch "
                        r"\d+; ", where), where  # round 37: the speedups in the claim's line only
        assert not re.search(r"\dx faster", where)
        return
    line = late_check.shares_line(summary, batch)
    if not line:  # no CUDA-graph step at the preset's batch (an eager-only run)
        assert batch not in set(summary.loc[summary["regime"] == "compiled", "batch_size"])
        return
    if batch in set(resolved["batch_size"]):
        assert re.search(r"the check costs \d+ µs per step, \d+% of the [\d.]+ ms step without "
                         r"it; two streams win back .+ and the event loop wins back", line), line
    else:
        assert "can't tell the check's cost apart" in line
