"""Lessons that cannot drift from helpers/.

Every notebook that writes out a technique declares it in a ``TAUGHT`` mapping (name -> the
helpers module that holds the same code). Here:

- the notebook defines exactly those names at the top level of its code cells, each once, and
  every other top-level definition it makes is not the name of something in that module;
- each taught function or class is AST-identical to its twin in the module named;
- the notebook's own definitions, loaded from its source (the defining cells exec'd into a
  namespace, as rasbt/LLMs-from-scratch tests its chapters), produce the tokens of the naive
  loop: a lesson that breaks its own loop fails even if helpers/ is right.
"""
import ast
import os
import importlib
import inspect
import textwrap

import nbformat
import pytest
import torch

from helpers import postprocess
from helpers.course import runner
from helpers.generation import assert_same_tokens, generate_naive

NOTEBOOKS = runner.notebooks()


def ids(paths):
    return [p.stem for p in paths]


def cell_trees(path):
    """The parsed code cells of a notebook (IPython magics and shell lines left out)."""
    trees = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            source = "\n".join(line for line in cell.source.splitlines()
                               if not line.lstrip().startswith(("%", "!")))
            trees.append(ast.parse(source))
    return trees


TEACHES_NONE = {"00_setup", "08_results_summary"}  # lessons that measure and explain only


def taught(path) -> dict:
    """The notebook's ``TAUGHT`` mapping (exactly one top-level assignment; none in a lesson that
    writes out no function of its own, ``TEACHES_NONE``, so its reader sees no empty mapping)."""
    found = [node.value for tree in cell_trees(path) for node in tree.body
             if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["TAUGHT"]]
    if not found and path.stem in TEACHES_NONE:
        return {}
    assert len(found) == 1, f"{path.name}: needs exactly one top-level `TAUGHT = {{name: module}}`"
    mapping = ast.literal_eval(found[0])
    assert isinstance(mapping, dict), f"{path.name}: TAUGHT must map each name to its helpers module"
    return mapping


def definitions(path) -> list:
    """Every top-level function and class definition of the notebook, in order."""
    return [node for tree in cell_trees(path) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def normalized(node):
    return ast.dump(node, annotate_fields=True, include_attributes=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_notebook_defines_exactly_what_it_declares_once(path):
    mapping = taught(path)
    names = [node.name for node in definitions(path)]
    missing = sorted(set(mapping) - set(names))
    assert not missing, f"{path.name} declares {missing} in TAUGHT but does not define them"
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"{path.name} defines {twice} more than once"
    for name, module_name in mapping.items():
        assert module_name.startswith("helpers."), f"{name}: {module_name!r} is not a helpers module"
        module = importlib.import_module(module_name)
        assert hasattr(module, name), f"{path.name} teaches {name}, which {module_name} lacks"
    modules = {importlib.import_module(m) for m in mapping.values()}
    shadowing = sorted(n for n in set(names) - set(mapping)
                       if any(hasattr(m, n) and not n.startswith("_") for m in modules))
    assert not shadowing, (f"{path.name} defines {shadowing}, names of its helpers modules that "
                           "TAUGHT does not list: declare them or rename them")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_taught_code_is_identical_to_its_helpers_twin(path):
    mapping = taught(path)
    nodes = {node.name: node for node in definitions(path)}
    for name, module_name in mapping.items():
        twin = getattr(importlib.import_module(module_name), name)
        twin_node = ast.parse(textwrap.dedent(inspect.getsource(twin))).body[0]
        assert normalized(nodes[name]) == normalized(twin_node), (
            f"{path.name} teaches {name} differently from {module_name}.{name}: keep the two "
            "identical (the notebook is the lesson, helpers/ what later notebooks import)")


# ------------------------------------------------------- the lessons' own code, run on the CPU

def load_taught(stem) -> dict:
    """The notebook's imports and taught definitions, exec'd into a fresh namespace."""
    path = next(p for p in NOTEBOOKS if p.stem == stem)
    mapping = taught(path)
    body = [node for tree in cell_trees(path) for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in mapping)]
    namespace = {"__name__": f"lesson_{stem}"}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102
    missing = sorted(set(mapping) - set(namespace))
    assert not missing, f"{stem}: {missing} not defined by its own cells"
    return namespace


@pytest.fixture(scope="module")
def tiny6():
    from helpers.model import build_model, make_prompt

    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    return model, eos, make_prompt(6, 5, model.config.vocab_size, eos, "cpu", seed=2)


def generators(stem, ns, model, eos):
    """name -> generate(prompt, max_new_tokens, stop_lengths) built from a lesson's namespace."""
    if stem == "01_naive_generation":
        return {"generate_naive": lambda p, n, s: ns["generate_naive"](model, p, n, eos, s)}
    if stem == "02_kv_cache":
        return {"generate_kv_cache": lambda p, n, s: ns["generate_kv_cache"](model, p, n, eos, s)}
    if stem == "04_static_cache":
        def static(p, n, s):
            cache = ns["make_static_cache"](model, p.shape[0], p.shape[1] + n + 3, p.device)
            return ns["generate_static_cache"](model, p, n, eos, s, cache=cache)
        return {"generate_static_cache": static}
    if stem == "05_torch_compile":
        eager = lambda t, c: model(t, past_key_values=c, use_cache=True).logits[:, -1, :]  # noqa: E731
        return {"generate_static_compiled (eager step)":
                lambda p, n, s: ns["generate_static_compiled"](model, p, n, eos, s, step=eager)}
    if stem == "06_eos_sync":
        step = ns["eager_step"](model)
        return {"generate_sync": lambda p, n, s: ns["generate_sync"](model, p, n, eos, s, step=step),
                "generate_no_check + trim_finished": lambda p, n, s: ns["trim_finished"](
                    ns["generate_no_check"](model, p, n, eos, s, step=step), p.shape[1], eos)}
    if stem == "07_stream_interleaving":
        return {name: (lambda p, n, s, f=ns[name]: f(model, p, n, eos, s))
                for name in ("generate_interleaved", "generate_event_check")}
    if stem == "11_toward_the_floor":
        def fast(p, n, s, k):
            return ns["FastDecoder"](model, p.shape[0], p.shape[1] + n, eos, k)(p, n, s)
        return {"FastDecoder (1/launch)": lambda p, n, s: fast(p, n, s, 1),
                "FastDecoder (3/launch)": lambda p, n, s: fast(p, n, s, 3),
                "GraphDecoder (fast_decode_step)": lambda p, n, s: ns["GraphDecoder"](
                    model, p.shape[0], p.shape[1] + n, eos, step=ns["fast_decode_step"])(p, n, s)}
    if stem == "10_cuda_graph_step":
        def graph(p, n, s, **options):
            decoder = ns["GraphDecoder"](model, p.shape[0], p.shape[1] + n, eos, **options)
            return decoder(p, n, s)
        from helpers.graphs import BucketedGraphDecoder  # 11's first rung, read there

        def bucketed(p, n, s, **options):  # the taught GraphDecoder's loop, one graph per length
            return BucketedGraphDecoder(model, p.shape[0], p.shape[1] + n, eos, **options)(p, n, s)
        lean = ns["decode_step"]  # the lesson's own step
        return {"GraphDecoder (lean, 1/launch)": lambda p, n, s: graph(p, n, s, step=lean),
                "GraphDecoder (lean, 3/launch)":
                    lambda p, n, s: graph(p, n, s, steps_per_graph=3, step=lean),
                "GraphDecoder (transformers forward)":
                    lambda p, n, s: graph(p, n, s, library_forward=True),
                "BucketedGraphDecoder (buckets of 4)": lambda p, n, s: bucketed(p, n, s, bucket=4),
                "BucketedGraphDecoder (buckets of 16, 3/launch)":
                    lambda p, n, s: bucketed(p, n, s, bucket=16, steps_per_graph=3)}
    raise KeyError(stem)


DECODERS = ["01_naive_generation", "02_kv_cache", "04_static_cache", "05_torch_compile",
            "06_eos_sync", "07_stream_interleaving", "10_cuda_graph_step", "11_toward_the_floor"]
CASES = [(1, None), (7, None), (12, [3, 7, 2, 4, 3, 3]), (9, [1] * 6)]


@pytest.mark.parametrize("stem", DECODERS)
def test_the_lessons_own_loops_give_the_naive_tokens(tiny6, stem):
    model, eos, prompt = tiny6
    for name, generate in generators(stem, load_taught(stem), model, eos).items():
        for n, stops in CASES:
            stops = None if stops is None else torch.tensor(stops)
            assert_same_tokens(generate_naive(model, prompt, n, eos, stops),
                               generate(prompt, n, stops), f"{stem}: {name}, {n} tokens, stops {stops}")


def test_lesson_03_sets_the_allocator_only_before_cuda_starts(monkeypatch):
    ns = load_taught("03_expandable_segments")
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    ns["use_allocator"]("expandable_segments:True")
    assert os.environ["PYTORCH_ALLOC_CONF"] == "expandable_segments:True"
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(RuntimeError, match="CUDA has started"):
        ns["use_allocator"]("default")
    assert os.environ["PYTORCH_ALLOC_CONF"] == "expandable_segments:True"


def test_lesson_09_post_processes_like_helpers():
    ns = load_taught("09_host_sync_token_processing")
    tensors = postprocess.make_batch(5, 4, 7, 100, "cpu", seed=3)
    expected = postprocess.postprocess_on_host(*tensors)
    assert ns["postprocess_per_row"](*tensors) == expected
    assert ns["postprocess_on_host"](*tensors) == expected
