"""Notebook 11: the decode step kernel by kernel toward the floor.

``fast_decode_step`` is notebook 10's ``decode_step`` rebuilt from the kernels of
``helpers.triton_kernels``, one change per row of the kernel table: skinny GEMMs with the bias,
GELU and residual add in their epilogue; each layer norm taken by the kernel that finishes its
input row (the embedding, the residual adds); attention one kernel per layer that adds up the
QKV GEMM's split-K partial sums, writes the new key and value and reads the filled positions only; the LM head keeping only each tile's largest
logit, and one small kernel making the greedy choice and moving the counters. Seven kernels
per block, all reading ``position`` from the GPU, so one CUDA graph (``GraphDecoder(step=...)``) replays any
number of steps. On a CPU every kernel is its PyTorch reference, which is how the tests prove the
step token-identical to the naive loop without a GPU.
Notebook 11 writes ``fast_decode_step`` out in full; a test keeps both copies identical.
"""
from __future__ import annotations

import torch

from . import triton_kernels as tk
from .graphs import GraphDecoder, capture_graph, prefill


def norm(ln):
    """A layer norm's weight, bias and epsilon, as the fused kernels take them."""
    return ln.weight, ln.bias, ln.eps


@torch.no_grad()
def fast_decode_step(model, state, eos_token_id):
    """One greedy step of GPT-2 on notebook 10's static buffers, kernel by kernel: each layer
    norm is taken where its input is made (the embedding, the residual adds), bias, GELU and
    residual in the GEMMs' epilogues, attention writes the cache and reads the filled positions,
    and the LM head keeps each tile's largest logit for ``finish_step``'s greedy choice."""
    gpt, n_head = model.transformer, model.config.n_head
    norms = [block.ln_1 for block in gpt.h[1:]] + [gpt.ln_f]  # after block i: block i+1's ln_1 (ln_f last)
    h, x = tk.embed(state.token, state.position, gpt.wte.weight, gpt.wpe.weight, norm(gpt.h[0].ln_1))
    for i, block in enumerate(gpt.h):
        attn, mlp = block.attn, block.mlp
        a = tk.qkv_attention(x, attn.c_attn.weight, attn.c_attn.bias, state.kv[i], state.position,
                             n_head)  # the QKV GEMM's partial sums added up by attention
        h, x = tk.linear(a, attn.c_proj.weight, attn.c_proj.bias, residual=h, norm=norm(block.ln_2))
        u = tk.linear(x, mlp.c_fc.weight, mlp.c_fc.bias, gelu=True)
        h, x = tk.linear(u, mlp.c_proj.weight, mlp.c_proj.bias, residual=h, norm=norm(norms[i]))
    best, index = tk.lm_head_argmax(x, model.lm_head.weight)
    tk.finish_step(best, index, state, eos_token_id)


class FastDecoder(GraphDecoder):
    """``GraphDecoder`` running ``fast_decode_step``, ``steps_per_graph`` steps per replay, with
    the prefill replayed from a CUDA graph too (one per prompt shape, captured at its first call):
    the eager prefill costs as much as many decode steps."""

    def __init__(self, model, batch_size, max_len, eos_token_id, steps_per_graph=10, graphs=None):
        super().__init__(model, batch_size, max_len, eos_token_id, steps_per_graph,
                         graphs=graphs, step=fast_decode_step)
        self.prefills = {}

    def prefill(self, input_ids, stop_lengths=None):
        if not self.graphed:
            return super().prefill(input_ids, stop_lengths)
        key = (tuple(input_ids.shape), stop_lengths is None)
        if key not in self.prefills:
            prompt = input_ids.clone()
            stops = None if stop_lengths is None else stop_lengths.clone()
            graph = capture_graph(lambda: prefill(self.model, self.state, prompt, self.eos, stops))
            self.prefills[key] = (graph, prompt, stops)
        graph, prompt, stops = self.prefills[key]
        prompt.copy_(input_ids)
        if stops is not None:
            stops.copy_(stop_lengths)
        graph.replay()
