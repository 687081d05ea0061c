"""Round 31's check of lesson 04's prose: on the GPU, does a static cache's decode step dispatch
two more operations a layer where the cache's length is not a multiple of 8 (attention pads its
mask)? Prints the count per cache length; run on the GPU host after env.sh."""
import torch

from helpers.course.static_cache import _ops_per_step, make_static_cache
from helpers.model import build_model, make_prompt

model = build_model("gpt2", "cuda", seed=0)
prompt = make_prompt(32, 16, model.config.vocab_size, model.config.eos_token_id, "cuda", seed=0)
with torch.no_grad():
    for length in (24, 25, 32, 66, 116, 120, 216, 416):
        cache = make_static_cache(model, 32, length, "cuda")
        print(f"static cache of {length} positions (multiple of 8: {length % 8 == 0}): "
              f"{_ops_per_step(model, prompt, cache, length - 2)} ops per decode step")
