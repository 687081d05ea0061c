"""The stop check of notebooks 06 and 07: every step, never, or one step late.

``finished.all()`` in an ``if`` turns a GPU boolean into a Python bool: the CPU waits there until
the GPU has finished the step, so the next step's kernels are launched only afterwards and the
GPU idles in between. Notebook 06 measures that idle time; notebook 07 removes it by reading the
stop flag one step late, after the next step is already queued:

- ``eager_step``: notebook 02's ``decode_one_token`` as a step callable (the default).
- ``generate_sync``: notebook 02's loop with a pluggable decode step; checks (and syncs) every step.
- ``generate_no_check``: never checks; always runs ``max_new_tokens`` steps (the upper bound).
- ``trim_finished``: cuts the no-check output to the sync loop's (drops columns after every row
  has finished).
- ``generate_event_check``: reads the stop flag one step late on a single stream: the flag is
  copied without blocking into pinned host memory and a CUDA event marks when it has landed.
- ``stream_pair``: the two side streams, made once per device (the allocator reuses a block only
  on the stream that allocated it).
- ``generate_interleaved``: the article's version of the same idea, two CUDA streams in ping-pong.

``# NEW`` and ``# CHANGED`` mark the lines each loop adds to the loop it grows from (notebook 02's
``generate_kv_cache`` for ``generate_sync``; ``generate_sync`` for the others, and
``generate_event_check`` for ``generate_interleaved``).

All follow the contract of helpers/generation.py and take an optional decode ``step``
(``step(token_ids, cache) -> logits``, e.g. ``helpers.static.compiled_step``) with its ``cache``
(reset before use); the default is the eager model on a ``DynamicCache``. On a CPU the streams,
events and pinned memory fall away and the same logic runs synchronously, so the tests prove
token identity there.
Notebooks 06 and 07 write these functions out in full; a test keeps both copies identical.
"""
from __future__ import annotations

import functools

import torch

from .generation import decode_one_token, generated_lengths, next_token


def eager_step(model):
    """Notebook 02's ``decode_one_token`` for this model, as ``step(token_ids, cache) -> logits``."""
    return functools.partial(decode_one_token, model)


@torch.no_grad()
def generate_sync(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                  step=None, cache=None):
    """Notebook 02's loop with a pluggable decode step: the stop check syncs every step."""
    step = step or eager_step(model)  # NEW: any decode step (eager, or 05's compiled one)
    if cache is not None:  # NEW: a static cache is reused: same tensors, same addresses
        cache.reset()  # NEW
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    out = model(input_ids, past_key_values=cache, use_cache=True)  # CHANGED: the given cache
    cache, logits = out.past_key_values, out.logits[:, -1, :].clone()  # as notebook 02's loop
    del out
    tokens = [input_ids]
    for i in range(max_new_tokens):
        token, finished = next_token(logits, finished, i, eos_token_id, stop_lengths)
        tokens.append(token[:, None])
        if finished.all() or i + 1 == max_new_tokens:  # the CPU waits for the GPU here
            break
        logits = step(token[:, None], cache)  # CHANGED: the given step
    return torch.cat(tokens, dim=1)


@torch.no_grad()
def generate_no_check(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                      step=None, cache=None):
    """No stop check: always ``max_new_tokens`` steps, finished rows padded with EOS; the CPU
    never waits for the GPU inside the loop."""
    step = step or eager_step(model)
    if cache is not None:
        cache.reset()
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    out = model(input_ids, past_key_values=cache, use_cache=True)
    cache, logits = out.past_key_values, out.logits[:, -1, :].clone()
    del out
    tokens = [input_ids]
    for i in range(max_new_tokens):
        token, finished = next_token(logits, finished, i, eos_token_id, stop_lengths)
        tokens.append(token[:, None])
        if i + 1 < max_new_tokens:  # CHANGED: no `finished.all()`, so no wait
            logits = step(token[:, None], cache)
    return torch.cat(tokens, dim=1)


def trim_finished(tokens, prompt_len, eos_token_id):
    """Drop the columns after the step at which every row had finished: what the loop that
    checks every step returns (it stops right there)."""
    longest = int(generated_lengths(tokens, prompt_len, eos_token_id).max())
    return tokens[:, :prompt_len + longest]


@torch.no_grad()
def generate_event_check(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                         step=None, cache=None):
    """The stop check read one step late on a single stream: a CUDA event marks where step
    i-1's stop flag has landed in pinned host memory, and the CPU waits on that event only after
    it has queued step i, which the GPU then runs without a pause."""
    step = step or eager_step(model)
    if cache is not None:
        cache.reset()
    device = input_ids.device  # NEW
    cuda = device.type == "cuda"  # NEW: on a CPU, no events and no pinned memory
    events = [torch.cuda.Event() if cuda else None for _ in range(2)]  # NEW
    flags = torch.zeros(2, dtype=torch.bool, pin_memory=cuda)  # NEW: host memory the GPU writes
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=device)
    out = model(input_ids, past_key_values=cache, use_cache=True)
    cache, logits = out.past_key_values, out.logits[:, -1, :].clone()
    del out
    tokens = [input_ids]
    for i in range(max_new_tokens):
        slot = i % 2  # NEW: two flags, two events: step i's may land while i-1's is read
        if i > 0:  # CHANGED: step i is queued first ...
            logits = step(tokens[-1], cache)  # CHANGED
        token, finished = next_token(logits, finished, i, eos_token_id, stop_lengths)
        tokens.append(token[:, None])
        flags[slot].copy_(finished.all(), non_blocking=True)  # NEW: no wait
        if cuda:  # NEW
            events[slot].record()  # NEW: marks "this step's flag has landed"
        if i > 0:  # CHANGED: ... then step i-1's flag is read
            if cuda:  # NEW
                events[1 - slot].synchronize()  # NEW: waits for step i-1 only
            if flags[1 - slot]:  # CHANGED: every row had finished at step i-1
                tokens.pop()  # NEW: step i's token (EOS everywhere) is one too many
                break
    return torch.cat(tokens, dim=1)


@functools.cache
def stream_pair(device):
    """Two side streams for ``device``, made once so every call reuses their cached memory."""
    return torch.cuda.Stream(device), torch.cuda.Stream(device)


@torch.no_grad()
def generate_interleaved(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None,
                         step=None, cache=None):
    """The article's version: two CUDA streams in ping-pong. Step i is queued on stream i % 2,
    then the CPU waits for the other stream (step i-1) and reads its stop flag, copied without
    blocking into pinned host memory. When it says every row had finished, step i's token is
    dropped."""
    step = step or eager_step(model)
    if cache is not None:
        cache.reset()
    device = input_ids.device
    cuda = device.type == "cuda"
    streams = stream_pair(device) if cuda else (None, None)  # NEW: made once, reused
    flags = torch.zeros(2, dtype=torch.bool, pin_memory=cuda)
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=device)
    if cuda:  # NEW
        streams[0].wait_stream(torch.cuda.current_stream(device))  # NEW: the prompt is ready
    with torch.cuda.stream(streams[0]):  # NEW: the prompt's freed blocks stay with stream 0
        out = model(input_ids, past_key_values=cache, use_cache=True)
        cache, logits = out.past_key_values, out.logits[:, -1, :].clone()
        del out
    tokens = [input_ids]
    previous = streams[0]  # NEW: where step i-1 was queued (None on a CPU)
    for i in range(max_new_tokens):
        slot = i % 2
        with torch.cuda.stream(streams[slot]):  # NEW: a no-op when the stream is None (CPU)
            if cuda:  # NEW
                streams[slot].wait_stream(previous)  # NEW: step i needs step i-1's token, cache
            if i > 0:
                logits = step(tokens[-1], cache)
            token, finished = next_token(logits, finished, i, eos_token_id, stop_lengths)
            tokens.append(token[:, None])
            flags[slot].copy_(finished.all(), non_blocking=True)
        previous = streams[slot]  # NEW
        if i > 0:
            if cuda:
                streams[1 - slot].synchronize()  # CHANGED: waits for step i-1's stream
            if flags[1 - slot]:
                tokens.pop()
                break
    if cuda:  # NEW
        torch.cuda.current_stream(device).wait_stream(previous)  # NEW: the caller sees every step
    return torch.cat(tokens, dim=1)
