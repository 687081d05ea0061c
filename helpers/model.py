"""GPT-2 built offline from ``GPT2Config()`` with seeded random weights: no downloads.

Random weights decode exactly as fast as trained ones (the same matrices, the same shapes),
so every timing in the course holds for the real GPT-2 124M.
"""
from __future__ import annotations

import contextlib

import torch
from transformers import GPT2Config  # the model class is imported where it is built: a few
                                     # seconds that notebooks without a model (03, 09) skip

# "gpt2" is the real 124M architecture; "tiny" keeps CPU smoke runs to seconds.
MODEL_CONFIGS = {
    "gpt2": {},
    "tiny": dict(n_layer=2, n_head=2, n_embd=64, n_positions=256, vocab_size=512,
                 bos_token_id=511, eos_token_id=511),
}


def model_config(name: str) -> GPT2Config:
    """The ``GPT2Config`` of a named model, with a clear error for unknown names."""
    if name not in MODEL_CONFIGS:
        raise ValueError(f"unknown model {name!r}; choose one of {sorted(MODEL_CONFIGS)}")
    return GPT2Config(**MODEL_CONFIGS[name])


def use_tf32(enabled: bool = True) -> None:
    """TF32 matmuls on Ampere and newer GPUs, as the article runs them (no effect on CPU).
    A process-wide torch setting: notebooks call it visibly in their setup cell."""
    torch.set_float32_matmul_precision("high" if enabled else "highest")


@contextlib.contextmanager
def exact_matmul():
    """Full-precision float32 matmuls inside the block: token-equality checks run here, so that
    two loops that do the same arithmetic in a different order cannot flip a near-tied argmax."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def build_model(name: str = "gpt2", device: str | torch.device = "cpu", seed: int = 0):
    """GPT-2 (a ``GPT2LMHeadModel``) with seeded random weights, in eval mode, on ``device``.
    It changes no torch setting (TF32 is ``use_tf32``, called by the notebook). The weights
    are created and initialised on ``device`` itself: on a GPU that takes milliseconds where a
    CPU needs seconds (the values differ between a CPU and a GPU build of the same seed; the
    speed does not)."""
    from transformers import GPT2LMHeadModel  # lazy on purpose: see the import at the top

    config = model_config(name)
    torch.manual_seed(seed)
    with torch.device(device):
        model = GPT2LMHeadModel(config)
    return model.to(device).eval()


def parameter_bytes(model: torch.nn.Module) -> int:
    """Bytes of all parameters (tied weights counted once): what one decode step must read."""
    seen, total = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            total += p.numel() * p.element_size()
    return total


def make_prompt(batch_size: int, prompt_len: int, vocab_size: int, eos_token_id: int,
                device: str | torch.device = "cpu", seed: int = 0) -> torch.Tensor:
    """Random prompt token ids of shape (batch_size, prompt_len) that never contain EOS."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_size - 1, (batch_size, prompt_len), generator=gen)
    ids[ids >= eos_token_id] += 1  # skip the EOS id, keep the range
    return ids.to(device)
