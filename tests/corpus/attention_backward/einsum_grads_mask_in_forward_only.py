# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored
"""Einsum everywhere, explicit subscripts for every gradient; the forward helper kept beside the backward."""
import torch


def _probs(q, k, is_causal):
    s = torch.einsum("bhld,bhsd->bhls", q, k) * q.shape[-1] ** -0.5
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s.softmax(-1)


def attention(q, k, v, is_causal=False):
    return torch.einsum("bhls,bhsd->bhld", _probs(q, k, is_causal), v)


def attention_backward(q, k, v, dout, is_causal=False):
    scale = q.shape[-1] ** -0.5
    p = _probs(q, k, False)  # recomputed
    dv = torch.einsum("bhls,bhld->bhsd", p, dout)
    dp = torch.einsum("bhld,bhsd->bhls", dout, v)
    ds = p * (dp - torch.einsum("bhls,bhls->bhl", dp, p)[..., None])
    dq = torch.einsum("bhls,bhsd->bhld", ds, k) * scale
    dk = torch.einsum("bhls,bhld->bhsd", ds, q) * scale
    return dq, dk, dv
# bug-line: 22
