# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_scale_missing + backward_causal_mask_ignored
"""torch.einsum for every product ("bhld,bhsd->bhls", "bhls,bhld->bhsd", ...), the probabilities
recomputed by their own helper `_probs(q, k, causal)`. Two slips: the helper is called with
causal=False (is_causal is never passed on), and dS is used without the 1/sqrt(D) factor for dq
and dk."""

import math

import torch


def _probs(q, k, causal):
    s = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(q.shape[-1])
    if causal:
        L, S = s.shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        s = torch.where(keep, s, torch.full_like(s, float("-inf")))
    return torch.softmax(s, dim=-1)


def attention_backward(q, k, v, dout, is_causal=False):
    P = _probs(q, k, causal=False)
    dv = torch.einsum("bhls,bhld->bhsd", P, dout)
    dP = torch.einsum("bhld,bhsd->bhls", dout, v)
    dS = P * (dP - torch.einsum("bhls,bhls->bhl", dP, P)[..., None])
    dq = torch.einsum("bhls,bhsd->bhld", dS, k)
    dk = torch.einsum("bhls,bhld->bhsd", dS, q)
    return dq, dk, dv
# bug-line: 24, 28, 29
