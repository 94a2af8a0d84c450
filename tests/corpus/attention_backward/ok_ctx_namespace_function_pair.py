# attnprep: attention_backward
# expect: passed
"""An autograd.Function written without autograd: a forward(ctx, ...) that saves into a
SimpleNamespace and a backward(ctx, dout) that reads it, the way a custom kernel's pair is laid out."""
import math
from types import SimpleNamespace

import torch


class AttnFn:
    @staticmethod
    def forward(ctx, q, k, v, is_causal):
        scale = 1.0 / math.sqrt(q.shape[-1])
        s = torch.einsum("bhld,bhsd->bhls", q, k) * scale
        if is_causal:
            L, S = s.shape[-2:]
            s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        p = torch.softmax(s, dim=-1)
        ctx.saved = (q, k, v, p)
        ctx.scale = scale
        return p @ v

    @staticmethod
    def backward(ctx, dout):
        q, k, v, p = ctx.saved
        dv = torch.einsum("bhls,bhld->bhsd", p, dout)
        dp = torch.einsum("bhld,bhsd->bhls", dout, v)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * ctx.scale
        dq = torch.einsum("bhls,bhsd->bhld", ds, k)
        dk = torch.einsum("bhls,bhld->bhsd", ds, q)
        return dq, dk, dv


def attention_backward(q, k, v, dout, is_causal=False):
    ctx = SimpleNamespace()
    AttnFn.forward(ctx, q, k, v, is_causal)
    return AttnFn.backward(ctx, dout)
