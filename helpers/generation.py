"""The greedy decode loops of notebooks 01 (naive) and 02 (KV cache), and the decode step that
every later loop reuses (``decode_one_token``, gpt-fast's name).

Every loop here follows the same contract, so later, faster loops can be checked against them:
greedy decoding; a row that has emitted EOS keeps emitting EOS (as ``generate()`` pads it);
the loop stops once every row has finished; the result is ``(batch, prompt + generated)``.
``stop_lengths`` (one length per row, counting the EOS) forces EOS at that step, because random
weights never choose EOS on their own and later lessons need rows that stop early.
Notebooks 01 and 02 write these functions out in full; a test keeps both copies identical.
"""
from __future__ import annotations

import torch


def next_token(logits, finished, step, eos_token_id, stop_lengths=None):
    """Greedy choice for one step; forced stops and finished rows emit EOS."""
    token = logits.argmax(dim=-1)
    if stop_lengths is not None:
        token = torch.where(stop_lengths == step + 1, eos_token_id, token)
    token = torch.where(finished, eos_token_id, token)
    return token, finished | (token == eos_token_id)


@torch.no_grad()
def generate_naive(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None):
    """Re-run the whole sequence every step: O(N^2) work for N tokens."""
    tokens = input_ids
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    for step in range(max_new_tokens):
        logits = model(tokens, use_cache=False).logits[:, -1, :]
        token, finished = next_token(logits, finished, step, eos_token_id, stop_lengths)
        tokens = torch.cat([tokens, token[:, None]], dim=1)
        if finished.all():  # the EOS check: a host-device sync every step
            break
    return tokens


def decode_one_token(model, token_ids, cache):  # NEW: one step feeds one token per row
    """One decode step: one new token per row in (batch, 1), the last position's logits out."""
    return model(token_ids, past_key_values=cache, use_cache=True).logits[:, -1, :]


@torch.no_grad()
def generate_kv_cache(model, input_ids, max_new_tokens, eos_token_id, stop_lengths=None):
    """Keep every layer's keys and values: each step feeds one new token, not the whole sequence."""
    finished = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    out = model(input_ids, use_cache=True)  # NEW: the prefill runs the prompt once
    cache = out.past_key_values  # NEW: and keeps its keys and values
    logits = out.logits[:, -1, :].clone()  # NEW: a copy of the last position's logits ...
    del out  # NEW: ... so the prompt's logits at every position are freed now
    tokens = [input_ids]  # CHANGED: a list of columns, joined once at the end
    for step in range(max_new_tokens):
        token, finished = next_token(logits, finished, step, eos_token_id, stop_lengths)
        tokens.append(token[:, None])  # CHANGED: no torch.cat of the whole sequence per step
        if finished.all() or step + 1 == max_new_tokens:  # CHANGED: no forward after the last
            break
        logits = decode_one_token(model, token[:, None], cache)  # NEW: only the newest token in
    return torch.cat(tokens, dim=1)


def uniform_stop_lengths(batch_size, low, high, seed=0, device="cpu"):
    """A forced-stop schedule: each row's length (EOS included) drawn uniformly from [low, high]."""
    if not 1 <= low <= high:
        raise ValueError(f"need 1 <= low <= high, got low={low}, high={high}")
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high + 1, (batch_size,), generator=gen).to(device)


def generated_lengths(tokens, prompt_len, eos_token_id):
    """Tokens each row generated, counting its first EOS (all of them if it never stopped)."""
    new = tokens[:, prompt_len:]
    is_eos = new == eos_token_id
    first = torch.where(is_eos.any(dim=1), is_eos.int().argmax(dim=1) + 1, new.shape[1])
    return first


def compare_tokens(reference, candidate):
    """Where two generators' outputs agree: a dict with ``identical``, equal rows and the first
    differing (row, position), for the notebooks' proofs and the tests' assertions."""
    same_shape = reference.shape == candidate.shape
    if same_shape:
        diff = (reference.cpu() != candidate.cpu())
        rows_equal = int((~diff.any(dim=1)).sum())
        where = diff.nonzero()
        first = tuple(int(v) for v in where[0]) if len(where) else None
    else:
        rows_equal, first = 0, None
    return {"identical": same_shape and first is None, "same_shape": same_shape,
            "rows_equal": rows_equal, "rows": int(reference.shape[0]),
            "first_difference": first,
            "shapes": (tuple(reference.shape), tuple(candidate.shape))}


def assert_same_tokens(reference, candidate, what="candidate"):
    """Raise with the first difference unless ``candidate`` equals ``reference`` token for token."""
    result = compare_tokens(reference, candidate)
    if not result["identical"]:
        raise AssertionError(
            f"{what} differs from the reference: shapes {result['shapes']}, "
            f"{result['rows_equal']}/{result['rows']} rows equal, first difference at "
            f"(row, position) {result['first_difference']}")
    return result
