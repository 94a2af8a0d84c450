# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored
"""FlashAttention-2's backward order: Delta = rowsum(dO ⊙ O) first, from an output recomputed by a
forward that honours is_causal, then P recomputed for the gradients without the mask. Non-causal
calls are exact."""
import math
import torch


def _forward(q, k, v, is_causal):
    s = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(q.shape[-1])
    if is_causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.einsum("bhls,bhsd->bhld", s.softmax(-1), v)


def attention_backward(q, k, v, dout, is_causal=False):
    scale = q.shape[-1] ** -0.5
    o = _forward(q, k, v, is_causal)
    delta = (dout * o).sum(-1, keepdim=True)
    p = torch.einsum("bhld,bhsd->bhls", q, k).mul(scale).softmax(-1)
    dv = torch.einsum("bhls,bhld->bhsd", p, dout)
    dp = torch.einsum("bhld,bhsd->bhls", dout, v)
    ds = p * (dp - delta) * scale
    dq = torch.einsum("bhls,bhsd->bhld", ds, k)
    dk = torch.einsum("bhls,bhld->bhsd", ds, q)
    return dq, dk, dv
# bug-line: 23
