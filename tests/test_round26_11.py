"""Round 26: lesson 11 opens on the attention lines of `bucketed_decode_step`, the step its ladder
starts from (a student read 'rung 1 is 1.18x slower than 10's step' about code never shown)."""
import inspect
import json
from pathlib import Path

from helpers import graphs

ROOT = Path(__file__).resolve().parents[1]


def _intro():
    nb = json.loads((ROOT / "notebooks" / "11_toward_the_floor.ipynb").read_text())
    return "".join(nb["cells"][0]["source"])


def test_the_excerpt_is_the_helpers_own_lines():
    text = _intro()
    excerpt = text.split("```python\n", 1)[1].split("```", 1)[0].strip().splitlines()
    source = [line.strip() for line in inspect.getsource(graphs.bucketed_decode_step).splitlines()]
    assert len(excerpt) == 4
    for line in excerpt:
        assert line.strip() in source, line


def test_the_intro_says_where_rung_one_differs_and_who_fuses_it():
    text = _intro()
    assert "bucketed_decode_step" in text  # round 28b: rung 2 only where the preset runs it
    assert "rung 2 has Inductor fuse them where the preset sets" in text
    assert "Uncompiled, that attention is many small\n" not in text  # the broken paragraph
