import pytest
import torch

from helpers.model import build_model, make_prompt


@pytest.fixture(scope="session")
def tiny():
    """The tiny GPT-2 of the smoke preset, on the CPU, with a batch of 3 prompts of 4 tokens."""
    model = build_model("tiny", "cpu", seed=0)
    eos = model.config.eos_token_id
    prompt = make_prompt(3, 4, model.config.vocab_size, eos, "cpu", seed=1)
    return model, prompt, eos


@pytest.fixture(autouse=True)
def _run_dir(tmp_path, monkeypatch):
    """Keep every test's results out of the repository's run folders."""
    monkeypatch.setenv("COURSE_RUN_DIR", str(tmp_path / "run"))
    torch.manual_seed(0)
