# attnprep: attention_backward
# expect: used_builtin
# diagnosis: used_builtin
"""torch.func.vjp of a hand-written forward: functorch's autograd does the backward."""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False):
    def forward(q, k, v):
        s = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(q.shape[-1])
        if is_causal:
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
        p = torch.exp(s - s.amax(-1, keepdim=True))
        return (p / p.sum(-1, keepdim=True)) @ v

    _, vjp = torch.func.vjp(forward, q, k, v)
    return vjp(dout)
