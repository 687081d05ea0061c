"""Notebooks 08-10 on a CPU: post-processing gives identical lists; the CUDA-graph decoder's step,
run eagerly, is token-identical to the naive loop; the bench's analyses give known answers on
known inputs; ``python -m helpers.bench`` runs on the tiny model."""
import ast
import inspect
import textwrap

import nbformat
import pandas as pd
import pytest
import torch

from helpers import postprocess, results
from helpers.presets import ParameterError, resolve_params

ROOT = results.repo_root()


def notebook_defs(stem):
    """Top-level functions and classes of a notebook's code cells, by name."""
    found = {}
    for cell in nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    found[node.name] = node
    return found


def same_source(notebook_node, obj):
    twin = ast.parse(textwrap.dedent(inspect.getsource(obj))).body[0]
    return ast.dump(notebook_node) == ast.dump(twin)


# ---------------------------------------------------------------- notebook 09: post-processing

@pytest.mark.parametrize("batch,prompt_len,completion_len", [(1, 1, 1), (3, 5, 7), (16, 8, 32)])
def test_both_postprocessing_methods_give_the_masked_tokens(batch, prompt_len, completion_len):
    tensors = postprocess.make_batch(batch, prompt_len, completion_len, 100, "cpu", seed=3)
    prompt_ids, prompt_mask, completion_ids, completion_mask = tensors
    expected = ([[int(t) for t, m in zip(ids, mask) if m] for ids, mask in zip(prompt_ids, prompt_mask)],
                [[int(t) for t, m in zip(ids, mask) if m]
                 for ids, mask in zip(completion_ids, completion_mask)])
    assert postprocess.postprocess_per_row(*tensors) == expected
    assert postprocess.postprocess_on_host(*tensors) == expected


def test_make_batch_pads_prompts_left_and_completions_right():
    prompt_ids, prompt_mask, completion_ids, completion_mask = postprocess.make_batch(
        64, 6, 9, 50, "cpu", seed=0)
    assert prompt_ids.shape == prompt_mask.shape == (64, 6)
    assert completion_ids.shape == completion_mask.shape == (64, 9)
    assert prompt_mask.dtype == completion_mask.dtype == torch.bool
    assert prompt_mask[:, -1].all() and completion_mask[:, 0].all()  # at least one real token
    assert (prompt_mask.int().diff(dim=1) >= 0).all()  # padding first, then tokens
    assert (completion_mask.int().diff(dim=1) <= 0).all()  # tokens first, then padding


def test_speedups_pivot_known_rows():
    frame = pd.DataFrame([
        {"method": "per row", "condition": "alone", "batch_size": 4, "seq_len": 8, "median_s": 0.3},
        {"method": "on host", "condition": "alone", "batch_size": 4, "seq_len": 8, "median_s": 0.1},
        {"method": "per row", "condition": "contended", "batch_size": 4, "seq_len": 8, "median_s": 1.0},
        {"method": "on host", "condition": "contended", "batch_size": 4, "seq_len": 8, "median_s": 0.2},
    ])
    wide = postprocess.speedups(frame).set_index("condition")
    assert wide.loc["alone", "speedup"] == pytest.approx(3.0)
    assert wide.loc["contended", "speedup"] == pytest.approx(5.0)


def test_notebook_09_teaches_the_helpers_code():
    defs = notebook_defs("09_host_sync_token_processing")
    for name in ["postprocess_per_row", "postprocess_on_host"]:
        assert same_source(defs[name], getattr(postprocess, name)), name


@pytest.mark.parametrize("kwargs,wrong", [
    (dict(completion_lens=[0]), "completion_lens"),
    (dict(contention_s=0), "contention_s"),
    (dict(contention_s="long"), "contention_s"),
    (dict(batch_sizes=[]), "batch_sizes"),
])
def test_notebook_09_rejects_bad_parameters(kwargs, wrong):
    with pytest.raises(ParameterError, match=wrong):
        resolve_params("09", "smoke", **kwargs)
