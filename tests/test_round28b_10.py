"""Round 28b, lesson 10: the prose spends little on what a preset does not run; Setup's line
(computed from the parameters) says what is left out, and the prose ties the rest to it."""
import json
from pathlib import Path

NB = Path(__file__).parents[1] / "notebooks" / "10_cuda_graph_step.ipynb"


def cells():
    return ["".join(c["source"]) for c in json.loads(NB.read_text())["cells"]]


def test_10s_prose_on_what_a_preset_may_not_run_is_short():
    text = "\n".join(cells())
    for cut in ("still runs Python around it", "waiting for that step to finish",
                "two more: the step at several steps per", "or, where it runs, `generate()`'s compile"):
        assert cut not in text, cut
    opening = cells()[0]
    assert "if the preset asks for them (Setup's line says)" in opening  # round 32: plain words
    assert "`generate()` with its static cache, for comparison" in " ".join(opening.split())
    measure = next(c for c in cells() if c.startswith("## Measure"))
    peer = next(line for line in measure.split("\n\n")[0].split("\n- ")
                if "`generate() static`" in line)
    assert peer.startswith("only where `peers` names it") and len(peer) < 200
