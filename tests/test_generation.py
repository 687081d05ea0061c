"""The decode loops of notebooks 01-02 and the token checks, on the tiny model (CPU)."""
import pytest
import torch

from helpers.checks import check_same_tokens
from helpers.generation import (assert_same_tokens, compare_tokens, generate_kv_cache,
                                generate_naive, generated_lengths, next_token,
                                uniform_stop_lengths)
from helpers.model import build_model, make_prompt, parameter_bytes


def test_naive_and_kv_cache_give_identical_tokens(tiny):
    model, prompt, eos = tiny
    for n in (1, 5, 30):
        naive = generate_naive(model, prompt, n, eos)
        assert naive.shape == (3, 4 + n)
        assert torch.equal(naive, generate_kv_cache(model, prompt, n, eos))


def test_forced_stop_schedule_stops_each_row_where_asked(tiny):
    model, prompt, eos = tiny
    stops = torch.tensor([2, 5, 9])
    for generate in (generate_naive, generate_kv_cache):
        out = generate(model, prompt, 20, eos, stops)
        assert out.shape == (3, 4 + 9), "the loop stops once every row has finished"
        assert generated_lengths(out, 4, eos).tolist() == [2, 5, 9]
        for row, length in enumerate(stops.tolist()):
            new = out[row, 4:]
            assert (new[: length - 1] != eos).all()
            assert (new[length - 1:] == eos).all(), "finished rows keep emitting EOS"


def test_loop_runs_to_max_when_no_row_stops(tiny):
    model, prompt, eos = tiny
    out = generate_kv_cache(model, prompt, 7, eos, torch.tensor([100, 100, 100]))
    assert out.shape == (3, 11) and not (out[:, 4:] == eos).any()


def test_next_token_pads_finished_rows_and_forces_stops():
    logits = torch.tensor([[0.0, 5.0, 1.0], [3.0, 0.0, 1.0], [0.0, 0.0, 9.0]])
    finished = torch.tensor([False, True, False])
    token, done = next_token(logits, finished, step=1, eos_token_id=2,
                             stop_lengths=torch.tensor([2, 5, 5]))
    assert token.tolist() == [2, 2, 2]  # forced at step 1 (length 2), finished, argmax is EOS
    assert done.tolist() == [True, True, True]
    token, done = next_token(logits, torch.zeros(3, dtype=torch.bool), 0, 2)
    assert token.tolist() == [1, 0, 2] and done.tolist() == [False, False, True]


def test_prompt_never_contains_eos_and_is_seeded():
    a = make_prompt(64, 32, 512, 511, seed=3)
    assert not (a == 511).any() and a.max() < 512 and a.min() >= 0
    assert torch.equal(a, make_prompt(64, 32, 512, 511, seed=3))
    b = make_prompt(4, 4, 512, 0, seed=1)
    assert not (b == 0).any()


def test_model_is_seeded_and_in_eval_mode():
    a, b = build_model("tiny", seed=5), build_model("tiny", seed=5)
    assert not a.training
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert parameter_bytes(a) == sum(p.numel() * 4 for p in a.parameters())


def test_unknown_model_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown model 'gpt3'.*choose one of"):
        build_model("gpt3")


def test_uniform_stop_lengths_range_and_validation():
    lengths = uniform_stop_lengths(1000, 3, 7, seed=0)
    assert lengths.min() == 3 and lengths.max() == 7
    with pytest.raises(ValueError):
        uniform_stop_lengths(4, 5, 2)


def test_compare_and_assert_same_tokens():
    a = torch.tensor([[1, 2, 3], [4, 5, 6]])
    b = a.clone()
    b[1, 2] = 0
    assert compare_tokens(a, a)["identical"]
    result = compare_tokens(a, b)
    assert not result["identical"] and result["rows_equal"] == 1
    assert result["first_difference"] == (1, 2)
    assert not compare_tokens(a, a[:, :2])["identical"]
    with pytest.raises(AssertionError, match=r"first difference at \(row, position\) \(1, 2\)"):
        assert_same_tokens(a, b)


def test_check_same_tokens_rejects_a_real_difference_and_accepts_ties(tiny):
    model, prompt, eos = tiny
    ref = generate_kv_cache(model, prompt, 6, eos)
    assert check_same_tokens(model, ref, ref.clone(), verbose=False)["identical"]
    bad = ref.clone()
    bad[0, 6] = (bad[0, 6] + 1) % eos
    with pytest.raises(AssertionError, match="real difference"):
        check_same_tokens(model, ref, bad, verbose=False)
    # With an infinite tolerance every divergence counts as a tie and is reported as such.
    result = check_same_tokens(model, ref, bad, tie_tol=float("inf"), verbose=False)
    assert result["ties"][0]["row"] == 0 and result["ties"][0]["position"] == 6


def test_the_kv_loop_prints_nothing_on_stderr(tiny, capfd):
    """transformers 5.24 renamed GPT-2's ``past_key_values`` to ``cache`` and warns, and logs, on
    the old name, which the lessons pass (5.17 has only that): ``helpers`` silences both, so an
    executed notebook shows no stderr line."""
    import warnings

    import helpers

    model, prompt, eos = tiny
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # any other FutureWarning fails the test
        warnings.filterwarnings("ignore", message=helpers.RENAMED_CACHE_ARG, category=FutureWarning)
        generate_kv_cache(model, prompt, 4, eos)
    assert "deprecated" not in capfd.readouterr().err
