"""Notebook 11's Triton kernels for one GPT-2 decode step at a small batch, each with the PyTorch
reference it must match (the tests compare them at several shapes).

- ``linear``: ``x @ w + b`` for a few rows of ``x`` (M = the batch, 32 here), with the GELU or
  the residual add in its epilogue. One program computes ``BLOCK_N`` output columns for every
  row and streams its slice of the weight once; with ``split_k`` > 1 the K dimension is cut into
  pieces whose partial sums ``rows_reduce_kernel`` adds up in a fixed order (no atomics: the same
  inputs give the same bits every run), and that row kernel also writes the layer norm of the
  result (``norm=``), the next GEMM's input, since a layer norm needs whole rows.
- ``lm_head_argmax``: the LM head with the argmax in its epilogue: each program writes the
  largest logit of its columns and where it is, so the logits (batch x 50,257) are never written.
- ``embed``: the token and position embeddings added, and the first layer norm.
- ``decode_attention``: one program per (row, head) writes the new key and value into the
  cache at ``position`` and attends over the filled positions only (``position`` is read from
  the GPU, so one captured graph serves every step), with an online softmax, in float32.
- ``qkv_attention``: the QKV GEMM cut along K (twice the programs, more of the GPU streaming
  the weight) with its partial sums and bias added up by the attention kernel itself, so the
  split costs no extra launch.
- ``finish_step``: the greedy choice from the LM head's partial maxima, forced stops and
  finished rows, the token written after the current position, and the counters moved, in one
  launch.

With ``PDL`` (on by default where the GPU has it, Hopper and newer) each kernel is launched with
Programmatic Dependent Launch and waits for its predecessor's writes in ``gdc_wait``, so its
launch overlaps the previous kernel's tail inside the CUDA graph. While it waits, it already
asks for what no earlier kernel of the step writes to be brought into L2 (``PREFETCH_GEMM``: the
first block of a layer GEMM's weights; ``PREFETCH_ATTENTION``: the filled keys and values).

Every function runs its Triton kernel on a CUDA tensor when Triton is installed, and its PyTorch
reference otherwise (on a CPU, the tests run the same step through the references). float32
matrix products follow ``torch.get_float32_matmul_precision()``: TF32 tensor cores under
"high" (as the course times), exact IEEE float32 under "highest" (inside
``helpers.model.exact_matmul``, where tokens are checked).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # a CPU-only install: the references run instead
    triton = None

if triton is not None:
    try:  # Programmatic Dependent Launch (Hopper): a kernel starts while its predecessor drains
        from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
    except ImportError:  # an older Triton: no-ops
        @triton.jit
        def gdc_wait():
            pass

        @triton.jit
        def gdc_launch_dependents():
            pass


def use_triton(t: torch.Tensor) -> bool:
    """Whether ``t``'s kernels run through Triton (a CUDA tensor, Triton installed)."""
    return triton is not None and t.is_cuda


def dot_precision(dtype) -> str:
    """Triton's ``input_precision`` for a float32 product, from PyTorch's setting."""
    return "ieee" if torch.get_float32_matmul_precision() == "highest" else "tf32"


# ------------------------------------------------------------------ PyTorch references

def layer_norm_ref(x, norm):
    """``norm`` is ``(weight, bias, eps)``, as ``helpers.fast_step.norm`` gives it."""
    return F.layer_norm(x, (x.shape[-1],), norm[0], norm[1], norm[2])


def linear_ref(x, w, b, gelu=False, residual=None, norm=None):
    """What ``linear`` computes: ``y = residual + gelu(x @ w + b)`` (each part optional), and with
    ``norm`` the pair ``(y, layer_norm(y))``."""
    y = torch.addmm(b, x, w)
    if gelu:
        y = F.gelu(y, approximate="tanh")
    if residual is not None:
        y = residual + y
    return y if norm is None else (y, layer_norm_ref(y, norm))


def lm_head_argmax_ref(x, w_t):
    """What ``lm_head_argmax`` computes, as one tile: the largest logit of each row and its index
    (``w_t`` is the tied embedding, vocabulary x width)."""
    best, index = (x @ w_t.t()).max(dim=-1, keepdim=True)
    return best, index


def decode_attention_ref(qkv, kv, position, n_head):
    """What ``decode_attention`` computes: write the new key and value at ``position`` and attend
    over positions 0..position of the cache ``kv`` (key|value, batch, head, slot, dim)."""
    batch = qkv.shape[0]
    head_dim = qkv.shape[1] // 3 // n_head
    q, k, v = qkv.view(batch, 3, n_head, head_dim).unbind(1)
    where = position.view(1)
    kv[0].index_copy_(2, where, k.unsqueeze(2))
    kv[1].index_copy_(2, where, v.unsqueeze(2))
    slots = torch.arange(kv.shape[3], device=kv.device)
    scores = (q.unsqueeze(2) * kv[0]).sum(-1) * head_dim**-0.5  # (batch, head, slot)
    weights = scores.masked_fill(slots > position, float("-inf")).softmax(dim=-1)
    return (weights.unsqueeze(-1) * kv[1]).sum(2).reshape(batch, n_head * head_dim)


def finish_step_ref(best, index, state, eos_token_id):
    """What ``finish_step`` does: the greedy token from per-tile maxima (the first tile holding
    the largest), then ``helpers.graphs.advance``'s bookkeeping, in place."""
    token = index.gather(1, best.argmax(dim=1, keepdim=True))[:, 0]
    token = torch.where(state.stop_lengths == state.step + 1, eos_token_id, token)
    token = torch.where(state.finished, eos_token_id, token)
    state.tokens.index_copy_(1, state.position.view(1) + 1, token[:, None])
    state.token.copy_(token)
    state.finished.copy_(state.finished | (token == eos_token_id))
    state.position.add_(1)
    state.step.add_(1)


def embed_ref(token, position, wte, wpe, norm):
    """The input of a decode step, each row's token embedding plus the position's, and its
    layer norm (the first block's)."""
    h = wte[token] + wpe[position]
    return h, layer_norm_ref(h, norm)


# ------------------------------------------------------------------ Triton kernels

if triton is not None:

    @triton.jit
    def _prefetch_l2(ptrs):
        """Ask for the cache lines at ``ptrs`` to be brought into L2, without waiting for them
        (PTX ``prefetch.global.L2``). Issued before ``gdc_wait`` for data no earlier kernel of
        the step writes (weights, the cache's filled positions): those reads then overlap the
        kernel before instead of starting after it."""
        tl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [ptrs],
                                  dtype=tl.int32, is_pure=False, pack=1)

    @triton.jit
    def _gelu_tanh(y):
        inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
        return 0.5 * y * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0))

    @triton.jit
    def _layer_norm_row(y, mask, g, beta, N, eps):
        """The layer norm of one row held in registers, with its weight ``g`` and bias ``beta``
        (two passes: the mean, then the squares of the differences, as PyTorch computes it)."""
        mean = tl.sum(tl.where(mask, y, 0.0), 0) / N
        d = tl.where(mask, y - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, 0) / N + eps)
        return d * rstd * g + beta

    @triton.jit
    def skinny_gemm_kernel(x_ptr, w_ptr, b_ptr, res_ptr, out_ptr, best_ptr, index_ptr,
                           M, N, K, stride_wk, stride_wn,
                           GELU: tl.constexpr, RESIDUAL: tl.constexpr, ARGMAX: tl.constexpr,
                           PARTIAL: tl.constexpr, SPLIT_K: tl.constexpr, FP32: tl.constexpr,
                           PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PDL: tl.constexpr,
                           PREFETCH: tl.constexpr = False, LINE: tl.constexpr = 32,
                           LINES: tl.constexpr = 1):
        """Columns of x @ w for every row of x: with the bias, GELU and residual in the
        epilogue; or (PARTIAL) this program's share of K as a partial sum for
        rows_reduce_kernel; or (ARGMAX) each row's largest value over these columns and where.
        With PREFETCH, the first block of the program's weights (LINES cache lines of LINE
        elements per row of K) is asked into L2 before waiting for the kernel before."""
        pid_n, pid_k = tl.program_id(0), tl.program_id(1)
        if PREFETCH:  # no kernel of the step writes the weights (the whole slice: slower)
            ks = tl.minimum(pid_k * (K // SPLIT_K) + tl.arange(0, BLOCK_K), K - 1)
            at = tl.minimum(pid_n * BLOCK_N + tl.arange(0, LINES) * LINE, N - 1)
            _prefetch_l2(w_ptr + ks[:, None] * stride_wk + at[None, :] * stride_wn)
        if PDL:  # wait for the kernel before (its writes visible), let the next one start
            gdc_wait()
            gdc_launch_dependents()
        rows = tl.arange(0, BLOCK_M)
        row_mask = rows < M
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        col_mask = cols < N
        k_per = K // SPLIT_K
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k0 in range(pid_k * k_per, (pid_k + 1) * k_per, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            k_mask = ks < K
            a = tl.load(x_ptr + rows[:, None] * K + ks[None, :],
                        mask=row_mask[:, None] & k_mask[None, :], other=0.0)
            w = tl.load(w_ptr + ks[:, None] * stride_wk + cols[None, :] * stride_wn,
                        mask=k_mask[:, None] & col_mask[None, :], other=0.0)
            if FP32:
                acc += tl.dot(a, w, input_precision=PRECISION)
            else:
                acc += tl.dot(a, w)
        mask = row_mask[:, None] & col_mask[None, :]
        if ARGMAX:
            n_tiles = tl.num_programs(0)
            logits = tl.where(col_mask[None, :], acc, float("-inf"))
            best = tl.max(logits, 1)
            where = tl.argmax(logits, 1) + pid_n * BLOCK_N
            tl.store(best_ptr + rows * n_tiles + pid_n, best, mask=row_mask)
            tl.store(index_ptr + rows * n_tiles + pid_n, where.to(tl.int64), mask=row_mask)
        elif PARTIAL:  # added up, in a fixed order, by rows_reduce_kernel
            tl.store(out_ptr + pid_k * M * N + rows[:, None] * N + cols[None, :], acc, mask=mask)
        else:
            acc += tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)[None, :]
            if GELU:
                acc = _gelu_tanh(acc)
            if RESIDUAL:
                acc += tl.load(res_ptr + rows[:, None] * N + cols[None, :], mask=mask,
                               other=0.0).to(tl.float32)
            tl.store(out_ptr + rows[:, None] * N + cols[None, :],
                     acc.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def rows_reduce_kernel(part_ptr, b_ptr, res_ptr, out_ptr, g_ptr, beta_ptr, normed_ptr,
                           M, N, eps, SPLIT_K: tl.constexpr, GELU: tl.constexpr,
                           RESIDUAL: tl.constexpr, NORM: tl.constexpr, BLOCK_N: tl.constexpr,
                           PDL: tl.constexpr):
        """One row: add up split-K's partial sums in a fixed order, then the bias, GELU and
        residual; with NORM, also the layer norm of the result (the next layer's input)."""
        if PDL:  # wait for the kernel before (its writes visible), let the next one start
            gdc_wait()
            gdc_launch_dependents()
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        if NORM:  # issued first: nothing else waits on them
            g = tl.load(g_ptr + cols, mask=mask, other=0.0).to(tl.float32)
            beta = tl.load(beta_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = tl.zeros([BLOCK_N], dtype=tl.float32)
        for s in range(SPLIT_K):
            y += tl.load(part_ptr + s * M * N + row * N + cols, mask=mask, other=0.0)
        y += tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        if GELU:
            y = _gelu_tanh(y)
        if RESIDUAL:
            y += tl.load(res_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        y = y.to(out_ptr.dtype.element_ty)
        tl.store(out_ptr + row * N + cols, y, mask=mask)
        if NORM:
            normed = _layer_norm_row(y.to(tl.float32), mask, g, beta, N, eps)
            tl.store(normed_ptr + row * N + cols, normed.to(normed_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def decode_attention_kernel(qkv_ptr, bias_ptr, kv_ptr, out_ptr, pos_ptr, B, H, S, scale,
                                D: tl.constexpr, BLOCK_S: tl.constexpr, SPLIT: tl.constexpr,
                                PDL: tl.constexpr, PREFETCH: tl.constexpr = False,
                                LINE: tl.constexpr = 32):
        """One (row, head): store the new key and value at the position, then an online softmax
        over the filled positions 0..position (the new one from registers). With SPLIT > 0,
        ``qkv`` holds the QKV GEMM's SPLIT partial sums, added here in a fixed order with the
        bias (as rows_reduce_kernel would, without its launch). With PREFETCH, the filled
        positions' keys and values (written by earlier steps) are asked into L2 before waiting."""
        pid = tl.program_id(0)
        b, h = pid // H, pid % H
        if PREFETCH:  # the position was moved a step ago, the filled slots written before
            filled0 = tl.minimum(tl.load(pos_ptr), S)
            kb0 = kv_ptr + (b * H + h) * S * D
            vb0 = kv_ptr + ((B + b) * H + h) * S * D
            at = tl.arange(0, D // LINE) * LINE
            for s0 in range(0, filled0, BLOCK_S):
                sl = tl.minimum(s0 + tl.arange(0, BLOCK_S), filled0 - 1)
                _prefetch_l2(kb0 + sl[:, None] * D + at[None, :])
                _prefetch_l2(vb0 + sl[:, None] * D + at[None, :])
        if PDL:  # wait for the kernel before (its writes visible), let the next one start
            gdc_wait()
            gdc_launch_dependents()
        E = H * D
        d = tl.arange(0, D)
        base = qkv_ptr + b * 3 * E + h * D
        if SPLIT > 0:
            q = tl.zeros([D], dtype=tl.float32)
            k_sum = tl.zeros([D], dtype=tl.float32)
            v_sum = tl.zeros([D], dtype=tl.float32)
            for piece in tl.static_range(SPLIT):
                q += tl.load(base + piece * B * 3 * E + d)
                k_sum += tl.load(base + piece * B * 3 * E + E + d)
                v_sum += tl.load(base + piece * B * 3 * E + 2 * E + d)
            q += tl.load(bias_ptr + h * D + d).to(tl.float32)
            k_new = (k_sum + tl.load(bias_ptr + E + h * D + d).to(tl.float32)).to(kv_ptr.dtype.element_ty)
            v_new = (v_sum + tl.load(bias_ptr + 2 * E + h * D + d).to(tl.float32)).to(kv_ptr.dtype.element_ty)
        else:
            q = tl.load(base + d).to(tl.float32)
            k_new = tl.load(base + E + d)
            v_new = tl.load(base + 2 * E + d)
        pos = tl.load(pos_ptr)
        k_base = kv_ptr + (b * H + h) * S * D
        v_base = kv_ptr + ((B + b) * H + h) * S * D
        inside = pos < S  # a warm-up step past the last slot writes nothing
        tl.store(k_base + pos * D + d, k_new, mask=inside & (d < D))
        tl.store(v_base + pos * D + d, v_new, mask=inside & (d < D))
        top = tl.sum(q * k_new.to(tl.float32), 0) * scale  # running maximum, starting at the new one
        total = tl.full([], 1.0, tl.float32)
        acc = v_new.to(tl.float32)
        filled = tl.minimum(pos, S)
        for s0 in range(0, filled, BLOCK_S):
            s = s0 + tl.arange(0, BLOCK_S)
            m = s < filled
            k = tl.load(k_base + s[:, None] * D + d[None, :], mask=m[:, None], other=0.0).to(tl.float32)
            v = tl.load(v_base + s[:, None] * D + d[None, :], mask=m[:, None], other=0.0).to(tl.float32)
            scores = tl.where(m, tl.sum(q[None, :] * k, 1) * scale, float("-inf"))
            new_top = tl.maximum(top, tl.max(scores, 0))
            shrink = tl.exp(top - new_top)
            p = tl.exp(scores - new_top)
            total = total * shrink + tl.sum(p, 0)
            acc = acc * shrink + tl.sum(p[:, None] * v, 0)
            top = new_top
        tl.store(out_ptr + b * E + h * D + d, (acc / total).to(out_ptr.dtype.element_ty))

    @triton.jit
    def finish_step_kernel(best_ptr, index_ptr, tokens_ptr, token_ptr, finished_ptr, stop_ptr,
                           pos_ptr, step_ptr, M, T, n_slots, eos,
                           BLOCK_M: tl.constexpr, BLOCK_T: tl.constexpr, PDL: tl.constexpr):
        """The greedy choice over the LM head's tiles (first tile on ties), forced stops and
        finished rows, then the token written and the counters moved: one program."""
        if PDL:  # wait for the kernel before (its writes visible), let the next one start
            gdc_wait()
            gdc_launch_dependents()
        rows = tl.arange(0, BLOCK_M)
        tiles = tl.arange(0, BLOCK_T)
        row_mask = rows < M
        mask = row_mask[:, None] & (tiles < T)[None, :]
        best = tl.load(best_ptr + rows[:, None] * T + tiles[None, :], mask=mask, other=float("-inf"))
        top = tl.max(best, 1)
        first = tl.min(tl.where((best == top[:, None]) & mask, tiles[None, :], BLOCK_T), 1)
        token = tl.load(index_ptr + rows * T + first, mask=row_mask, other=0)
        pos = tl.load(pos_ptr)
        step = tl.load(step_ptr)
        stop = tl.load(stop_ptr + rows, mask=row_mask, other=0)
        done = tl.load(finished_ptr + rows, mask=row_mask, other=0) != 0
        token = tl.where(stop == step + 1, eos, token)
        token = tl.where(done, eos, token)
        done = done | (token == eos)
        tl.store(tokens_ptr + rows * n_slots + pos + 1, token, mask=row_mask & (pos + 1 < n_slots))
        tl.store(token_ptr + rows, token, mask=row_mask)
        tl.store(finished_ptr + rows, done.to(tl.int1), mask=row_mask)
        tl.debug_barrier()  # every thread has read the counters before any moves them
        tl.store(pos_ptr, pos + 1)
        tl.store(step_ptr, step + 1)

    @triton.jit
    def embed_kernel(token_ptr, pos_ptr, wte_ptr, wpe_ptr, out_ptr, g_ptr, beta_ptr, normed_ptr,
                     E, eps, BLOCK_E: tl.constexpr, PDL: tl.constexpr):
        """One row's input, its token's embedding plus the position's, and its layer norm."""
        if PDL:  # wait for the kernel before (its writes visible), let the next one start
            gdc_wait()
            gdc_launch_dependents()
        b = tl.program_id(0)
        e = tl.arange(0, BLOCK_E)
        m = e < E
        tok = tl.load(token_ptr + b)
        pos = tl.load(pos_ptr)
        x = tl.load(wte_ptr + tok * E + e, mask=m) + tl.load(wpe_ptr + pos * E + e, mask=m)
        tl.store(out_ptr + b * E + e, x, mask=m)
        g = tl.load(g_ptr + e, mask=m, other=0.0).to(tl.float32)
        beta = tl.load(beta_ptr + e, mask=m, other=0.0).to(tl.float32)
        normed = _layer_norm_row(x.to(tl.float32), m, g, beta, E, eps)
        tl.store(normed_ptr + b * E + e, normed.to(normed_ptr.dtype.element_ty), mask=m)


# ------------------------------------------------------------------ launch configurations

# (block_n, block_k, split_k, num_warps, num_stages) per GPT-2 shape (N, K, dtype) and for the LM
# head: the fastest of a sweep on an H100 at M = 32, each shape timed over the 12 blocks' weights
# inside a CUDA graph (docs/floor_check.py, graph_sweep; docs/floor-notes.md). Other shapes use
# ``default_config``.
CONFIGS = {
    (2304, 768, torch.float32): (32, 256, 1, 4, 3), (2304, 768, torch.bfloat16): (32, 128, 1, 4, 4),
    (768, 768, torch.float32): (32, 64, 4, 4, 4), (768, 768, torch.bfloat16): (32, 64, 4, 4, 4),
    (3072, 768, torch.float32): (32, 256, 1, 4, 3), (3072, 768, torch.bfloat16): (32, 128, 1, 4, 4),
    (768, 3072, torch.float32): (32, 128, 4, 4, 4), (768, 3072, torch.bfloat16): (32, 128, 4, 4, 4),
    ("lm_head", torch.float32): (128, 64, 1, 4, 4), ("lm_head", torch.bfloat16): (256, 128, 1, 8, 3),
}


def default_config(n, k, m=32):
    """32 columns per program, K in steps of 128 where it divides (64 otherwise), cut into up
    to four pieces while there are fewer than ~100 programs."""
    block_n, block_k, split = 32, 128 if k % 128 == 0 else 64, 1
    while triton is not None and triton.cdiv(n, block_n) * split < 100 and split < 4 \
            and k % (2 * split * block_k) == 0:
        split *= 2
    return block_n, block_k, split, 4, 4


def config_for(n, k, dtype):
    return CONFIGS.get((n, k, dtype), CONFIGS.get((n, k), None)) or default_config(n, k)


ATTENTION_BLOCK = 64  # cache positions one attention program reads per iteration
# Warps per attention program: an int, or per dtype (bf16 programs finish sooner with 2; the
# whole step's sweep on an H100, docs/floor_check.py step_sweep).
ATTENTION_WARPS = {torch.float32: 4, torch.bfloat16: 2}
REDUCE_WARPS = 8  # warps per row of rows_reduce_kernel
# Programmatic Dependent Launch between the step's kernels: None turns it on where the GPU has
# it (Hopper and newer); each kernel then waits for its predecessor's writes in ``gdc_wait``.
PDL = None
# With PDL, each kernel asks for what no earlier kernel of the step writes before it waits (an L2
# prefetch): the layer GEMMs the first block of their weights, attention the filled keys and
# values. The whole step ~20 µs faster in fp32 and bf16 on an H100 (docs/floor-notes.md, v7).
PREFETCH_GEMM = True
PREFETCH_ATTENTION = True


def _prefetch(on, dtype, per_row):
    """A kernel's PREFETCH, LINE and LINES arguments (prefetching only with PDL): elements per
    128-byte cache line, and lines per row of ``per_row`` elements."""
    line = 128 // dtype.itemsize
    return {"PREFETCH": bool(on) and _pdl(), "LINE": min(line, per_row),
            "LINES": max(1, per_row // line)}


def _pdl():
    if PDL is None:
        return torch.cuda.get_device_capability()[0] >= 9
    return PDL


def _launch():
    return {"launch_pdl": True} if _pdl() else {}


def _block_m(m):
    return max(16, triton.next_power_of_2(m))


def linear(x, w, b, gelu=False, residual=None, norm=None, config=None):
    """``y = residual + gelu(x @ w + b)`` (each part optional) for a few rows of ``x``, and with
    ``norm`` the pair ``(y, layer_norm(y))``: one skinny GEMM kernel, plus a row-wise kernel that
    adds up split-K's partial sums and takes the layer norm (whole rows) where either is
    needed. ``w`` is (K, N) as GPT-2 stores it."""
    if not use_triton(x):
        return linear_ref(x, w, b, gelu, residual, norm)
    m, k = x.shape
    n = w.shape[1]
    block_n, block_k, split, warps, stages = config or config_for(n, k, w.dtype)
    partial = split > 1 or norm is not None
    out = torch.empty(m, n, device=x.device, dtype=x.dtype)
    part = torch.empty(split, m, n, device=x.device, dtype=torch.float32) if partial else out
    res = residual if residual is not None else out
    skinny_gemm_kernel[(triton.cdiv(n, block_n), split)](
        x, w, b, res, part, part, part, m, n, k, w.stride(0), w.stride(1),
        GELU=gelu, RESIDUAL=residual is not None, ARGMAX=False, PARTIAL=partial, SPLIT_K=split,
        FP32=w.dtype == torch.float32, PRECISION=dot_precision(w.dtype), BLOCK_M=_block_m(m),
        BLOCK_N=block_n, BLOCK_K=block_k, PDL=_pdl(), num_warps=warps, num_stages=stages,
        **_prefetch(PREFETCH_GEMM, w.dtype, block_n), **_launch())
    if not partial:
        return out
    normed = torch.empty_like(out) if norm is not None else out
    g, beta, eps = norm if norm is not None else (b, b, 0.0)
    rows_reduce_kernel[(m,)](part, b, res, out, g, beta, normed, m, n, eps, SPLIT_K=split,
                             GELU=gelu, RESIDUAL=residual is not None, NORM=norm is not None,
                             BLOCK_N=triton.next_power_of_2(n), PDL=_pdl(),
                             num_warps=REDUCE_WARPS, **_launch())
    return out if norm is None else (out, normed)


LM_HEAD_CONFIG = (128, 64, 1, 4, 4)


def lm_head_argmax(x, w_t, config=None):
    """The LM head with the argmax fused: per row and per tile of ``block_n`` vocabulary
    entries, the largest logit and its index (``(best, index)``, each batch x tiles), so the
    logits are never written. ``w_t`` is the tied embedding (vocabulary x width)."""
    if not use_triton(x):
        return lm_head_argmax_ref(x, w_t)
    m, k = x.shape
    n = w_t.shape[0]
    block_n, block_k, _, warps, stages = config or CONFIGS.get(("lm_head", w_t.dtype), LM_HEAD_CONFIG)
    tiles = triton.cdiv(n, block_n)
    best = torch.empty(m, tiles, device=x.device, dtype=torch.float32)
    index = torch.empty(m, tiles, device=x.device, dtype=torch.long)
    skinny_gemm_kernel[(tiles, 1)](
        x, w_t, x, x, x, best, index, m, n, k, w_t.stride(1), w_t.stride(0),
        GELU=False, RESIDUAL=False, ARGMAX=True, PARTIAL=False, SPLIT_K=1,
        FP32=w_t.dtype == torch.float32, PRECISION=dot_precision(w_t.dtype), BLOCK_M=_block_m(m),
        BLOCK_N=block_n, BLOCK_K=block_k, PDL=_pdl(), num_warps=warps, num_stages=stages, **_launch())
    return best, index


def decode_attention(qkv, kv, position, n_head, block_s=None):
    """Write the new key and value at ``position`` into ``kv`` (key|value, batch, head, slot,
    dim) and attend over positions 0..position: one program per (row, head)."""
    if not use_triton(qkv):
        return decode_attention_ref(qkv, kv, position, n_head)
    return _attention(qkv, None, kv, position, n_head, block_s)


def _attention(qkv, bias, kv, position, n_head, block_s=None):
    """``decode_attention``'s launch; ``qkv`` either the rows (batch, 3 x width) or, with
    ``bias``, the QKV GEMM's partial sums (split, batch, 3 x width) still to be added up."""
    split = qkv.shape[0] if bias is not None else 0
    batch, width = qkv.shape[-2], qkv.shape[-1] // 3
    head_dim = width // n_head
    out = torch.empty(batch, width, device=qkv.device, dtype=kv.dtype)
    decode_attention_kernel[(batch * n_head,)](
        qkv, bias if bias is not None else qkv, kv, out, position, batch, n_head, kv.shape[3],
        head_dim**-0.5, D=head_dim, BLOCK_S=block_s or ATTENTION_BLOCK, SPLIT=split, PDL=_pdl(),
        **{k: v for k, v in _prefetch(PREFETCH_ATTENTION, kv.dtype, head_dim).items() if k != "LINES"},
        num_warps=_attention_warps(kv.dtype), **_launch())
    return out


def _attention_warps(dtype):
    return ATTENTION_WARPS.get(dtype, 4) if isinstance(ATTENTION_WARPS, dict) else ATTENTION_WARPS


# The QKV GEMM's launch when attention adds up its partial sums: the fastest of sweeps of the
# whole step on an H100 (docs/floor_check.py qkv_split_timed, step_sweep; docs/floor-notes.md).
QKV_SPLIT = {torch.float32: (32, 128, 2, 2, 4), torch.bfloat16: (16, 128, 2, 4, 4)}


def qkv_attention(x, w, b, kv, position, n_head, config=None):
    """``decode_attention(linear(x, w, b), kv, position, n_head)`` with twice the programs
    streaming the QKV weight and no launch more: the GEMM is cut along K (split-K) and the
    attention kernel adds up its partial sums and the bias, each (row, head) program reading
    only its own 3 x 64 values. On a CPU: the two references."""
    k = x.shape[1]
    if config is not None and k % (config[2] * config[1]):
        raise ValueError(f"config {config}: K = {k} must be a multiple of split x block_k "
                         f"({config[2]} x {config[1]}), or the pieces would overlap")
    if not use_triton(x):
        return decode_attention_ref(linear_ref(x, w, b), kv, position, n_head)
    m, n = x.shape[0], w.shape[1]
    block_n, block_k, split, warps, stages = config or QKV_SPLIT.get(w.dtype, QKV_SPLIT[torch.float32])
    if k % (split * block_k):  # another model's width: one piece (its loop masks the last block)
        split = 1
    part = torch.empty(split, m, n, device=x.device, dtype=torch.float32)
    skinny_gemm_kernel[(triton.cdiv(n, block_n), split)](
        x, w, b, part, part, part, part, m, n, k, w.stride(0), w.stride(1),
        GELU=False, RESIDUAL=False, ARGMAX=False, PARTIAL=True, SPLIT_K=split,
        FP32=w.dtype == torch.float32, PRECISION=dot_precision(w.dtype), BLOCK_M=_block_m(m),
        BLOCK_N=block_n, BLOCK_K=block_k, PDL=_pdl(), num_warps=warps, num_stages=stages,
        **_prefetch(PREFETCH_GEMM, w.dtype, block_n), **_launch())
    return _attention(part, b, kv, position, n_head)


def finish_step(best, index, state, eos_token_id):
    """The greedy token from the LM head's tiles and ``advance``'s bookkeeping, in one launch."""
    if not use_triton(best):
        return finish_step_ref(best, index, state, eos_token_id)
    m, tiles = best.shape
    finish_step_kernel[(1,)](
        best, index, state.tokens, state.token, state.finished, state.stop_lengths,
        state.position, state.step, m, tiles, state.tokens.shape[1], eos_token_id,
        BLOCK_M=_block_m(m), BLOCK_T=triton.next_power_of_2(tiles), PDL=_pdl(), num_warps=8,
        **_launch())


def embed(token, position, wte, wpe, norm):
    """Each row's token embedding plus the position's, and its layer norm, in one launch."""
    if not use_triton(token):
        return embed_ref(token, position, wte, wpe, norm)
    batch, width = token.shape[0], wte.shape[1]
    out = torch.empty(batch, width, device=wte.device, dtype=wte.dtype)
    normed = torch.empty_like(out)
    embed_kernel[(batch,)](token, position, wte, wpe, out, norm[0], norm[1], normed, width, norm[2],
                           BLOCK_E=triton.next_power_of_2(width), PDL=_pdl(), num_warps=4,
                           **_launch())
    return out, normed


def tune_linear(x, w, b, candidates, **kwargs):
    """Median microseconds of ``linear`` for each launch configuration (cold L2 each call, as
    ``triton.testing.do_bench`` clears it), as a dict config -> µs; a config that fails: NaN."""
    times = {}
    for config in candidates:
        try:
            times[config] = 1e3 * triton.testing.do_bench(
                lambda: linear(x, w, b, config=config, **kwargs), warmup=5, rep=25,
                return_mode="median")
        except Exception:  # noqa: BLE001 - a config Triton cannot build (shared memory)
            times[config] = math.nan
    return times
