"""Round 26's mends of notebooks 10 and 11: ``GraphDecoder`` is bucket-free (one graph, lesson
10) and ``BucketedGraphDecoder`` holds notebook 11's buckets; on a CPU (or with graphs=False)
both run the same steps eagerly and give the naive loop's tokens, with and without buckets."""
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from helpers import graphs
from helpers.course import budget, floor
from helpers.generation import generate_naive, uniform_stop_lengths
from helpers.model import build_model, exact_matmul, make_prompt

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


@pytest.fixture(scope="module")
def tiny():
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    return model, eos, make_prompt(4, 5, model.config.vocab_size, eos, "cpu", seed=1)


@pytest.mark.parametrize("kind,options", [
    (graphs.GraphDecoder, {}), (graphs.GraphDecoder, dict(steps_per_graph=3)),
    (graphs.GraphDecoder, dict(graphs=False)),
    (graphs.BucketedGraphDecoder, dict(bucket=4)),
    (graphs.BucketedGraphDecoder, dict(bucket=16, steps_per_graph=3, graphs=False))])
@pytest.mark.parametrize("stopped", [False, True])
def test_both_decoders_give_the_naive_tokens_on_a_cpu(tiny, kind, options, stopped):
    model, eos, prompt = tiny
    stops = uniform_stop_lengths(4, 1, 9, seed=2) if stopped else None
    decoder = kind(model, 4, 5 + 9, eos, **options)
    assert not decoder.graphed
    if kind is graphs.GraphDecoder:
        assert decoder.graph is None and not hasattr(decoder, "length_for")
    else:
        assert decoder.graphs == {} and decoder.step is graphs.bucketed_decode_step
    with exact_matmul():
        assert torch.equal(decoder(prompt, 9, stops), generate_naive(model, prompt, 9, eos, stops))


def test_graph_decoder_run_steps_takes_no_length(tiny):
    model, eos, prompt = tiny
    plain = graphs.GraphDecoder(model, 4, 5 + 4, eos)
    graphs.prefill(model, plain.state, prompt, eos)
    plain.run_steps()  # one launch: k steps and the flag
    assert int(plain.state.position) == 6 and int(plain.state.step) == 2  # prefill, then one step
    bucketed = graphs.BucketedGraphDecoder(model, 4, 5 + 4, eos, bucket=8)
    assert bucketed.length_for(0, 5) == 8 and bucketed.lengths == [8, 16]


def test_lesson_10_teaches_the_bucket_free_class():
    cells = json.loads((REPO / "notebooks" / "10_cuda_graph_step.ipynb").read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells)
    for word in ("self.lengths", "length_for", "bucket arguments", "BucketedGraphDecoder"):
        assert word not in text


@pytest.mark.parametrize("run", ["5274887", "5274887-workshop", "7aa1901", "7aa1901-workshop"])
def test_gap_line_points_to_11_on_real_tables(run):
    table = pd.read_csv(DATA / f"10_cuda_graph_step-{run}.csv")
    graph = "graph, decode_step, 1/launch"
    n = int(table["seq_len"].max())
    row = table[(table["method"] == graph) & (table["seq_len"] == n)].iloc[0]
    b = budget.per_step(table, [graph], floor=row["per_step_s"] * 1e3 / row["floor_ratio"], seq_len=n)
    line = floor.gpu_gap_line(b, graph)
    assert line.endswith("(which of them, this lesson does not measure), "
                         "which no graph removes.")
