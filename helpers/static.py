"""The static KV cache (notebook 04) and the compiled decode step (notebook 05).

A ``StaticCache`` allocates every layer's keys and values once, at their final length, and
writes each new position in place: no tensor changes shape or address during the loop, which
is what ``torch.compile`` and CUDA graphs need. The price: attention runs over all
``max_cache_len`` positions every step (masked), not only the filled ones.

Public API (later notebooks import these; all follow the contract of helpers/generation.py):

- ``make_static_cache(model, batch_size, max_cache_len, device, dtype)`` -> ``StaticCache``
  with every layer allocated now (not lazily at the first update).
- ``generate_static_cache(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
  cache=None)``: the KV-cache loop on a static cache. Pass ``cache`` to reuse one across calls
  (it is ``reset()``, never reallocated); its length must be >= prompt + ``max_new_tokens``.
- ``compiled_step(model, mode="default")`` -> ``step(token_ids, cache) -> logits``:
  ``decode_one_token`` (``token_ids`` of shape (batch, 1), logits of the last position,
  (batch, vocab)) compiled once with static shapes and no graph breaks. ``mode="reduce-overhead"`` replays it as
  a CUDA graph (CUDA only): the logits it returns live in the graph's output buffer and are
  overwritten by the next call, so consume them (``next_token``) or ``.clone()`` them first.
  Call it with the same cache object (``reset()`` between runs) so the graph is not re-recorded;
  a cache of another length, or another matmul precision, compiles a new graph. Each mode
  compiles its own copy of ``decode_one_token``'s code (``own_code``), so the modes keep
  separate dynamo caches: switching modes recompiles nothing, and only the lengths and
  precisions of one mode count towards ``torch._dynamo.config.recompile_limit`` (default 8).
- ``generate_static_compiled(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
  step=..., cache=None)``: the static-cache loop with the prefill eager and every decode step
  through ``step``. Compile once (``step = compiled_step(model, mode)``) and reuse it.
- ``compile_counters()``: graphs compiled, graph breaks and CUDA-graph skips so far in this
  process; difference two readings to prove a loop compiled nothing after its warm-up.
- ``attention_work(prompt_len, new_tokens, max_cache_len)``: attended against useful
  (query, key) positions over one run, the waste of attending the whole static cache.
- ``sdpa_calls()``: a context manager listing what each attention call received (keys, mask).
"""
from __future__ import annotations

import contextlib
import functools
import types

import torch
from transformers import StaticCache

from .generation import decode_one_token, next_token

COMPILE_MODES = ("default", "reduce-overhead")


def make_static_cache(model, batch_size, max_cache_len, device, dtype=torch.float32):
    """A StaticCache whose layers are allocated now, at full length: the memory is claimed
    before the loop starts and the tensors never move."""
    config = model.config
    cache = StaticCache(config=config, max_cache_len=max_cache_len)
    cache.early_initialization(batch_size, config.num_attention_heads,
                               config.hidden_size // config.num_attention_heads, dtype, device)
    return cache


@torch.no_grad()
def generate_static_cache(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                          cache=None):  # NEW: a cache to reuse
    """The KV-cache loop on a preallocated cache: each step writes one position in place."""
    needed = input_ids.shape[1] + max_new_tokens  # NEW: allocate the final length once
    if cache is None:  # NEW
        cache = make_static_cache(model, input_ids.shape[0], needed, input_ids.device,  # NEW
                                  model.dtype)
    elif cache.get_max_length() < needed:  # NEW
        raise ValueError(f"the static cache holds {cache.get_max_length()} positions; this run "
                         f"needs prompt + new tokens = {needed}")
    cache.reset()  # NEW: zero in place: same tensors, same addresses
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    out = model(input_ids, past_key_values=cache, use_cache=True)  # CHANGED: the static cache
    logits = out.logits[:, -1, :].clone()  # as notebook 02's loop
    del out
    tokens = [input_ids]
    for step in range(max_new_tokens):
        token, finished = next_token(logits, finished, step, eos_token_id, stop_lengths)
        tokens.append(token[:, None])
        if finished.all() or step + 1 == max_new_tokens:
            break
        logits = decode_one_token(model, token[:, None], cache)
    return torch.cat(tokens, dim=1)


def compiled_step(model, mode="default"):
    """``decode_one_token`` as ``step(token_ids, cache) -> logits``, compiled once: static
    shapes, one graph. ``mode="reduce-overhead"`` replays it as a CUDA graph, whose returned
    logits are overwritten by the next call (consume or clone them first)."""
    if mode not in COMPILE_MODES:
        raise ValueError(f"compile mode must be one of {list(COMPILE_MODES)}, got {mode!r}")
    compiled = torch.compile(own_code(decode_one_token, mode), mode=mode, fullgraph=True,
                             dynamic=False)

    @torch.no_grad()
    def step(token_ids, cache):
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()  # the previous step's outputs are done
        return compiled(model, token_ids, cache)

    return step


@functools.lru_cache(maxsize=None)
def own_code(fn, tag: str):
    """``fn`` with a code object of its own, one per ``tag`` (the same copy for the same tag).
    Dynamo stores compiled graphs per code object, so two compile modes of one function share
    one cache: the second mode fails the first one's guards (BACKEND_MATCH) and counts as a
    recompile, and both fill the same recompile limit. A copy per mode keeps them apart."""
    name = f"{fn.__name__}_{tag.replace('-', '_')}"
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    copy = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__doc__, copy.__module__ = fn.__doc__, fn.__module__
    return copy


@torch.no_grad()
def generate_static_compiled(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                             step=None, cache=None):  # NEW: step
    """The static-cache loop with an eager prefill and every decode step through ``step``
    (from ``compiled_step``: compile once, reuse it for every call)."""
    if step is None:  # NEW
        raise ValueError("pass step=compiled_step(model, mode): compile once, then reuse it")
    needed = input_ids.shape[1] + max_new_tokens
    if cache is None:
        cache = make_static_cache(model, input_ids.shape[0], needed, input_ids.device, model.dtype)
    elif cache.get_max_length() < needed:
        raise ValueError(f"the static cache holds {cache.get_max_length()} positions; this run "
                         f"needs prompt + new tokens = {needed}")
    cache.reset()
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    out = model(input_ids, past_key_values=cache, use_cache=True)
    logits = out.logits[:, -1, :].clone()
    del out
    tokens = [input_ids]
    for i in range(max_new_tokens):  # CHANGED: i, since step is the compiled step
        token, finished = next_token(logits, finished, i, eos_token_id, stop_lengths)
        tokens.append(token[:, None])
        if finished.all() or i + 1 == max_new_tokens:
            break
        logits = step(token[:, None], cache)
    return torch.cat(tokens, dim=1)


def compile_counters() -> dict:
    """What torch.compile has done in this process so far: graphs compiled (each compile or
    recompile adds one), graph breaks, and CUDA graphs skipped (reduce-overhead falling back to
    plain compiled code), and the graphs Inductor found in its cache on disk or compiled afresh.
    Take a reading before and after a loop and subtract. A recompile is a
    graph compiled for a function that already had one: graphs compiled for one compiled step,
    minus one."""
    from torch._dynamo.utils import counters  # lazy on purpose: dynamo takes ~1.5 s to import

    return {"graphs_compiled": int(counters["stats"]["unique_graphs"]),
            "graph_breaks": int(sum(counters["graph_break"].values())),
            "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]),
            # Inductor's cache on disk: a compiled graph found there (warm) or not (cold)
            "fx_cache_hits": int(counters["inductor"]["fxgraph_cache_hit"]),
            "fx_cache_misses": int(counters["inductor"]["fxgraph_cache_miss"])}


def counters_delta(before: dict, after: dict) -> dict:
    """``after - before`` for every counter of ``compile_counters``."""
    return {key: after[key] - before[key] for key in after}


def attention_work(prompt_len, new_tokens, max_cache_len) -> dict:
    """(query, key) pairs one run's attention computes, per layer and head, with a dynamic cache
    (each query attends the filled positions) and with a static cache (each query attends all
    ``max_cache_len`` positions, the unfilled ones masked), against the useful (causal) pairs.

    The run is the loop above: a prefill of ``prompt_len`` queries, then ``new_tokens - 1``
    decode steps of one query each (the last token needs no forward pass)."""
    if max_cache_len < prompt_len + new_tokens - 1:
        raise ValueError(f"max_cache_len={max_cache_len} cannot hold prompt {prompt_len} + "
                         f"{new_tokens - 1} decoded positions")
    decode = range(prompt_len + 1, prompt_len + new_tokens)  # keys filled at each decode step
    useful = prompt_len * (prompt_len + 1) // 2 + sum(decode)
    dynamic = prompt_len * prompt_len + sum(decode)  # the prefill computes its full square
    static = (prompt_len + len(decode)) * max_cache_len
    return {"useful_pairs": useful, "dynamic_pairs": dynamic, "static_pairs": static,
            "static_over_useful": static / useful, "dynamic_over_useful": dynamic / useful,
            "static_over_dynamic": static / dynamic}


@contextlib.contextmanager
def sdpa_calls():
    """Record every ``scaled_dot_product_attention`` call made inside the block (as transformers'
    "sdpa" attention makes them): the number of keys attended and whether a mask was passed."""
    calls = []
    original = torch.nn.functional.scaled_dot_product_attention

    def spy(query, key, value, *args, **kwargs):
        mask = kwargs.get("attn_mask", args[0] if args else None)
        calls.append({"queries": query.shape[-2], "keys": key.shape[-2], "mask": mask is not None})
        return original(query, key, value, *args, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = spy
    try:
        yield calls
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
