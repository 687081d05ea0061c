"""Proof that a faster loop produces the tokens of the loop it replaces.

Two loops that do the same arithmetic in a different order (a whole sequence against one new
token, another attention kernel) agree to about 1e-6 in float32, and a greedy argmax can still
flip where the two best logits are closer than that: a numerical tie, not a bug. So the check
is: identical tokens, or every differing row diverges first at a tie, which the model
recomputed in float64 confirms (gap between the two chosen tokens' logits below ``tie_tol``).
"""
from __future__ import annotations

import copy

import torch

from .generation import compare_tokens


@torch.no_grad()
def tie_gap(model, prefix: torch.Tensor, token_a: int, token_b: int) -> float:
    """|logit(a) - logit(b)| for the next token after ``prefix`` (1-D ids), in float64."""
    double = copy.deepcopy(model).double()
    logits = double(prefix[None, :], use_cache=False).logits[0, -1]
    return abs(float(logits[token_a] - logits[token_b]))


def check_same_tokens(model, reference, candidate, what="candidate", tie_tol=1e-4, verbose=True,
                      against="the reference"):
    """Return a verdict dict; raise AssertionError unless ``candidate`` matches ``reference``
    exactly or differs only after float32 near-ties (see module docstring). ``against`` names
    the reference in the printed line (e.g. "the naive loop")."""
    result = compare_tokens(reference, candidate)
    result["ties"] = []
    if not result["identical"]:
        if not result["same_shape"]:
            raise AssertionError(f"{what}: shape {result['shapes'][1]} differs from the "
                                 f"reference's {result['shapes'][0]}")
        ref, cand = reference.cpu(), candidate.cpu()
        for row in (ref != cand).any(dim=1).nonzero().flatten().tolist():
            pos = int((ref[row] != cand[row]).int().argmax())
            gap = tie_gap(model, reference[row, :pos], int(ref[row, pos]), int(cand[row, pos]))
            result["ties"].append({"row": row, "position": pos, "fp64_gap": gap})
            if gap >= tie_tol:
                raise AssertionError(
                    f"{what} differs from the reference in row {row} at position {pos}, where "
                    f"float64 logits differ by {gap:.3g} (>= {tie_tol:g}): a real difference")
    if verbose:
        if result["identical"]:
            print(f"{what}: identical to {against} ({result['rows']} rows, "
                  f"{reference.shape[1]} tokens each, prompt included)")
        else:
            worst = max(t["fp64_gap"] for t in result["ties"])
            print(f"{what}: {result['rows_equal']}/{result['rows']} rows identical; the other "
                  f"{len(result['ties'])} diverge at float32 near-ties (largest float64 gap "
                  f"{worst:.2g} < {tie_tol:g})")
    return result
