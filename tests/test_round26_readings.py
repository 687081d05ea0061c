"""Round 26 (workshop copy of 62ceade): 'every speed-up printed in words is the rounds' reading'
read as broken by lines that print 'by the medians' in words; the line names both kinds."""
import pytest


def test_printed_share_reads_the_printed_numbers():
    """``budget.printed_share``, the one idle share that budget.sentence, 08's takeaway and 10's
    steps-per-launch line print: 0.21 of 1.37 ms reads 15% (from the rounded numbers)."""
    from helpers.course import budget
    row = {"wall_ms": 1.374, "gpu_ms": 1.166, "idle_ms": 1.374 - 1.166}
    assert round(budget.printed_share(row)) == 15
    assert budget.printed_share({"wall_ms": 1.0, "gpu_ms": 1.05, "idle_ms": -0.05}) == 0.0
    assert budget.printed_share({"wall_ms": 1.0, "gpu_ms": 0.95, "idle_ms": 0.05}) == pytest.approx(5.0)
