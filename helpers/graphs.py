"""Notebook 10: a whole decode step captured in a CUDA graph.

Eager decoding at batch 32 is CPU-bound: Python and ~200 kernel launches per step cost more than
the GPU work they queue. A CUDA graph records the step's kernels once and ``replay()`` re-launches
all of them with one call. A graph replays fixed addresses, so every tensor the step touches is a
static buffer (the tokens, the key/value cache, the finished flags, even the position counter)
updated in place, and the stop flag is read one launch late so the host never waits for a step
it has just queued. ``decode_step`` runs eagerly on a CPU too, which is how the tests prove it
token-identical to the naive loop; only ``capture_graph`` needs a GPU.
Notebook 10 writes out ``advance``, ``decode_step``, ``capture_graph`` and ``GraphDecoder`` (capture,
replay and the host loop); a test keeps both copies identical. ``GraphSetup``, the setup that
class stands on (buffers, the step, the run's checks), is read here, and so is
``BucketedGraphDecoder``, notebook 11's first rung: one graph per cache length.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from .generation import generated_lengths, next_token
from .static import make_static_cache


SLOT_MULTIPLE = 16  # the cache's positions are rounded up to a multiple of this


def cache_slots(max_len: int) -> int:
    """Positions ``static_state`` allocates for ``max_len``: rounded up to a multiple of 16."""
    return -(-max_len // SLOT_MULTIPLE) * SLOT_MULTIPLE


def bucket_lengths(slots: int, bucket: int) -> list:
    """The cache lengths a bucketed decoder captures a graph for: ``bucket``, 2 x ``bucket``,
    ... up to the buffer's ``slots``."""
    return sorted({min(b, slots) for b in range(bucket, slots + bucket, bucket)})


def shortest_bucket(lengths, needed: int):
    """The shortest of ``lengths`` that holds ``needed`` positions (the longest if none does)."""
    return next((n for n in lengths if n >= needed), lengths[-1])


def static_state(model, batch_size, max_len, device, library_cache=False):
    """Every tensor a decode step reads or writes, allocated once. The cache holds ``max_len``
    positions rounded up to a multiple of 16: ``kv``, one tensor per layer (key|value, batch,
    head, position, dim) for ``decode_step``, or transformers' ``StaticCache`` for
    ``hf_decode_step``. Separate tensors per layer let Inductor write each in place."""
    cfg = model.config
    slots = cache_slots(max_len)
    kv_shape = (2, batch_size, cfg.n_head, slots, cfg.n_embd // cfg.n_head)
    return SimpleNamespace(
        kv=None if library_cache else tuple(torch.zeros(kv_shape, dtype=model.dtype, device=device)
                                            for _ in range(cfg.n_layer)),
        cache=make_static_cache(model, batch_size, slots, device, model.dtype) if library_cache else None,
        tokens=torch.zeros(batch_size, slots, dtype=torch.long, device=device),
        token=torch.zeros(batch_size, dtype=torch.long, device=device),
        finished=torch.zeros(batch_size, dtype=torch.bool, device=device),
        stop_lengths=torch.zeros(batch_size, dtype=torch.long, device=device),
        all_finished=torch.zeros((), dtype=torch.bool, device=device),
        position=torch.zeros((), dtype=torch.long, device=device),
        step=torch.zeros((), dtype=torch.long, device=device),
        slot_ids=torch.arange(slots, device=device).view(1, 1, slots),
    )


@torch.no_grad()
def prefill(model, state, input_ids, eos_token_id, stop_lengths=None):
    """Run the prompt eagerly (its length varies), leave its keys and values in the static
    cache and choose the first token: everything the first decode step reads."""
    prompt_len = input_ids.shape[1]
    if state.cache is not None:
        state.cache.reset()  # transformers' StaticCache: zeroed and refilled in place
    out = model(input_ids, past_key_values=state.cache, use_cache=True)
    if state.cache is None:
        for i, layer in enumerate(out.past_key_values.layers):
            state.kv[i][0, :, :, :prompt_len].copy_(layer.keys)
            state.kv[i][1, :, :, :prompt_len].copy_(layer.values)
    if stop_lengths is None:
        state.stop_lengths.fill_(state.tokens.shape[1] + 1)  # a length no step reaches
    else:
        state.stop_lengths.copy_(stop_lengths)
    state.finished.zero_()
    state.tokens[:, :prompt_len].copy_(input_ids)
    state.position.fill_(prompt_len - 1)
    state.step.zero_()
    advance(state, out.logits[:, -1, :], eos_token_id)


def advance(state, logits, eos_token_id):
    """The end of every step, in place: choose the next token, write it after the current
    position, and move the position, the step counter and the finished flags on."""
    token, finished = next_token(logits, state.finished, state.step, eos_token_id,
                                 state.stop_lengths)
    state.tokens.index_copy_(1, state.position.view(1) + 1, token[:, None])
    state.token.copy_(token)
    state.finished.copy_(finished)
    state.position.add_(1)
    state.step.add_(1)


@torch.no_grad()
def decode_step(model, state, eos_token_id):
    """One greedy step of GPT-2 on static buffers: feed ``state.token`` at ``state.position``,
    write its keys and values there, attend over the whole buffer through a mask built from the
    position tensor, and ``advance``. No Python number changes from one step to the next, so a
    CUDA graph of this function stays valid for every step."""
    gpt, batch = model.transformer, state.token.shape[0]
    n_head, slots = model.config.n_head, state.kv[0].shape[3]
    head_dim = model.config.n_embd // n_head
    where = state.position.view(1)
    h = gpt.wte(state.token) + gpt.wpe(state.position)
    mask = torch.where(state.slot_ids <= state.position, 0.0, float("-inf")).to(h.dtype)
    for i, block in enumerate(gpt.h):
        attn, mlp = block.attn, block.mlp
        qkv = torch.addmm(attn.c_attn.bias, block.ln_1(h), attn.c_attn.weight)
        qkv = qkv.view(batch, 3, n_head, head_dim)
        state.kv[i][:, :, :, where] = qkv[:, 1:].transpose(0, 1).unsqueeze(3)  # in place
        keys = state.kv[i][0].view(batch * n_head, slots, head_dim)
        values = state.kv[i][1].view(batch * n_head, slots, head_dim)
        q = qkv[:, 0].reshape(batch * n_head, 1, head_dim)
        scores = torch.baddbmm(mask, q, keys.transpose(1, 2), alpha=head_dim**-0.5)
        a = torch.bmm(scores.softmax(dim=-1), values).view(batch, -1)
        h = h + torch.addmm(attn.c_proj.bias, a, attn.c_proj.weight)
        x = F.gelu(torch.addmm(mlp.c_fc.bias, block.ln_2(h), mlp.c_fc.weight), approximate="tanh")
        h = h + torch.addmm(mlp.c_proj.bias, x, mlp.c_proj.weight)
    advance(state, model.lm_head(gpt.ln_f(h)), eos_token_id)


@torch.no_grad()
def bucketed_decode_step(model, state, eos_token_id, length):
    """``decode_step`` with attention over the first ``length`` positions of the cache only (a
    bucket of cache length that holds every filled position): one query per row, written as a
    product, a sum over the head dimension, a softmax and a weighted sum over positions. Run as
    is, these are eager PyTorch ops; compiled by Inductor (notebook 11's reference rung) they fuse
    into reductions that stream the keys and values once."""
    gpt, batch = model.transformer, state.token.shape[0]
    n_head = model.config.n_head
    head_dim = model.config.n_embd // n_head
    where = state.position.view(1)
    h = gpt.wte(state.token) + gpt.wpe(state.position)
    empty = state.slot_ids[..., :length] > state.position  # positions after the current one
    for i, block in enumerate(gpt.h):
        attn, mlp = block.attn, block.mlp
        qkv = torch.addmm(attn.c_attn.bias, block.ln_1(h), attn.c_attn.weight)
        qkv = qkv.view(batch, 3, n_head, head_dim)
        state.kv[i][:, :, :, where] = qkv[:, 1:].transpose(0, 1).unsqueeze(3)  # in place
        keys, values = state.kv[i][0, :, :, :length], state.kv[i][1, :, :, :length]
        scores = (qkv[:, 0, :, None, :] * keys).sum(-1) * head_dim**-0.5  # (batch, head, length)
        weights = scores.masked_fill(empty, float("-inf")).softmax(dim=-1)
        a = (weights[..., None] * values).sum(2).view(batch, -1)
        h = h + torch.addmm(attn.c_proj.bias, a, attn.c_proj.weight)
        x = F.gelu(torch.addmm(mlp.c_fc.bias, block.ln_2(h), mlp.c_fc.weight), approximate="tanh")
        h = h + torch.addmm(mlp.c_proj.bias, x, mlp.c_proj.weight)
    advance(state, model.lm_head(gpt.ln_f(h)), eos_token_id)


@torch.no_grad()
def hf_decode_step(model, state, eos_token_id):
    """The same step through transformers' own forward on its ``StaticCache``: its layers keep
    their length in a tensor that the forward advances in place, so a graph of it stays valid."""
    logits = model(state.token[:, None], past_key_values=state.cache, use_cache=True).logits
    advance(state, logits[:, -1, :], eos_token_id)


def capture_graph(fn, warmup=2):
    """Record the kernels ``fn()`` launches into a CUDA graph (after warm-up runs on a side
    stream, as capture requires); ``graph.replay()`` then re-launches all of them at once."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


class GraphSetup:
    """What ``GraphDecoder`` captures and replays, set up once: the static buffers and the step,
    recording ``steps_per_graph`` decode steps per launch. The step: ``decode_step``;
    ``hf_decode_step`` with ``library_forward=True``; or ``step=fn(model, state, eos_token_id)`` of
    your own (notebook 11's). ``compile_options`` has Inductor compile the step first (without
    CUDA graphs of its own). Without a GPU (or with ``graphs=False``) ``graphed`` is False and
    the same steps run eagerly."""

    def __init__(self, model, batch_size, max_len, eos_token_id, steps_per_graph=1,
                 library_forward=False, graphs=None, compile_options=None, step=None):
        device = next(model.parameters()).device
        if max_len + steps_per_graph > model.config.n_positions:
            raise ValueError(f"max_len + steps_per_graph = {max_len + steps_per_graph} exceeds the "
                             f"model's {model.config.n_positions} positions")
        self.model, self.eos, self.k = model, eos_token_id, steps_per_graph
        if step is None:
            step = hf_decode_step if library_forward else decode_step
        if compile_options is not None:
            step = torch.compile(step, fullgraph=True, **compile_options)
        self.step = step
        self.state = static_state(model, batch_size, max_len + steps_per_graph, device,
                                  library_cache=library_forward)
        self.graphed = device.type == "cuda" if graphs is None else graphs

    def check_fits(self, prompt_len, max_new_tokens):
        """Refuse a run longer than the buffers (the last launch may write ``k`` positions on)."""
        if prompt_len + max_new_tokens + self.k > self.state.tokens.shape[1]:
            raise ValueError(f"{prompt_len} + {max_new_tokens} tokens do not fit this decoder's "
                             f"{self.state.tokens.shape[1] - self.k} positions")

    def prefill(self, input_ids, stop_lengths=None):
        """The prompt, eagerly (a subclass may replay it from a graph)."""
        prefill(self.model, self.state, input_ids, self.eos, stop_lengths)


class GraphDecoder(GraphSetup):
    """Greedy decoding from a CUDA graph (``GraphSetup``'s arguments choose the step and the
    steps per launch): one graph recording one launch's steps, replayed once per launch; the
    all-finished flag is read one launch late, from pinned memory, so the GPU always has the
    next launch queued."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)  # the buffers, the step
        self.graph = capture_graph(self.run_steps) if self.graphed else None  # one launch
        cuda = self.state.tokens.is_cuda
        self.flags = torch.zeros(2, dtype=torch.bool, pin_memory=cuda)  # two launches in flight
        self.events = [torch.cuda.Event() for _ in range(2)] if cuda else None

    def run_steps(self):
        """What one launch does (and its graph records): ``k`` decode steps, then the
        all-finished flag, on the GPU."""
        for _ in range(self.k):
            self.step(self.model, self.state, self.eos)
        self.state.all_finished.copy_(self.state.finished.all())

    def launch(self, launch, prompt_len):
        """Launch number ``launch`` of a run: one ``replay()`` of the graph (without graphs, the
        same steps run eagerly)."""
        self.graph.replay() if self.graph is not None else self.run_steps()

    def finished(self, launch):
        """Whether every row had finished after ``launch`` (waits for that launch only)."""
        if self.events:
            self.events[launch % 2].synchronize()
        return bool(self.flags[launch % 2])

    @torch.no_grad()
    def __call__(self, input_ids, max_new_tokens, stop_lengths=None):
        state, prompt_len = self.state, input_ids.shape[1]
        self.check_fits(prompt_len, max_new_tokens)
        self.prefill(input_ids, stop_lengths)
        for launch in range(math.ceil((max_new_tokens - 1) / self.k)):
            self.launch(launch, prompt_len)  # one replay: k steps, then the all-finished flag
            self.flags[launch % 2].copy_(state.all_finished, non_blocking=True)
            if self.events:
                self.events[launch % 2].record()
            if launch > 0 and self.finished(launch - 1):  # the flag of the launch before
                break
        tokens = state.tokens[:, :prompt_len + max_new_tokens]
        new = int(generated_lengths(tokens, prompt_len, self.eos).max())
        return tokens[:, :prompt_len + new].clone()


class BucketedGraphDecoder(GraphDecoder):
    """``GraphDecoder`` with one graph per cache length (notebook 11): its step
    (``bucketed_decode_step`` unless ``step`` is given) attends to the first ``length`` positions,
    captured for ``bucket``, 2 x ``bucket``, ... up to the buffer's slots; each launch replays the
    shortest that holds its positions, known from the launch's number."""

    def __init__(self, *args, bucket, graphs=None, step=bucketed_decode_step, **kwargs):
        library = kwargs.get("library_forward")
        if bucket < 1 or library:
            raise ValueError(f"bucket must be a positive number of positions for the bucketed "
                             f"step, got {bucket!r}" + (" with library_forward" if library else ""))
        super().__init__(*args, graphs=False, step=step, **kwargs)  # buffers and flags, no graph
        self.lengths = bucket_lengths(self.state.tokens.shape[1], bucket)
        self.graphed = self.state.tokens.is_cuda if graphs is None else graphs
        self.graphs = {}
        if self.graphed:  # one graph per cache length, each recording one launch
            for length in self.lengths:
                self.state.position.zero_()  # each capture's warm-up steps start from position 0
                self.graphs[length] = capture_graph(lambda length=length: self.run_steps(length))

    def length_for(self, launch, prompt_len):
        """The cache length launch ``launch`` attends to: the shortest bucket holding every
        position its steps write (the last is ``prompt_len + (launch + 1) * k - 1``)."""
        return shortest_bucket(self.lengths, prompt_len + (launch + 1) * self.k)

    def run_steps(self, length):
        """``k`` bucketed steps attending to ``length`` positions, then the all-finished flag."""
        for _ in range(self.k):
            self.step(self.model, self.state, self.eos, length)
        self.state.all_finished.copy_(self.state.finished.all())

    def launch(self, launch, prompt_len):
        """One ``replay()`` of launch ``launch``'s cache length's graph (or its steps, eagerly)."""
        length = self.length_for(launch, prompt_len)
        self.graphs[length].replay() if self.graphed else self.run_steps(length)


def matmul_weight_bytes(model) -> int:
    """Bytes of the weight matrices one GPT-2 decode step multiplies by: four per block and
    the LM head (tied to the token embedding). The rest of the parameters (biases, norms, the
    position embedding) is read in small pieces or not at all."""
    blocks = [m.weight for b in model.transformer.h
              for m in (b.attn.c_attn, b.attn.c_proj, b.mlp.c_fc, b.mlp.c_proj)]
    return sum(w.numel() * w.element_size() for w in blocks + [model.lm_head.weight])


def cache_bytes(model, batch_size, slots) -> int:
    """Bytes of a static key/value cache of ``slots`` positions: what attention over the whole
    buffer reads every step, on top of the weights."""
    cfg = model.config
    element = next(model.parameters()).element_size()
    return 2 * cfg.n_layer * batch_size * slots * cfg.n_embd * element
