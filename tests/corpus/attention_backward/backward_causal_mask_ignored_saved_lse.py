# attnprep: attention_backward
# expect: wrong_output
# diagnosis: backward_causal_mask_ignored
"""FlashAttention-2 style: the forward saves out and the log-sum-exp with the causal mask, but the
backward recomputes P = exp(S - lse) without it."""
import math

import torch


def flash_forward(q, k, v, causal):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1, keepdim=True)
    return torch.exp(s - lse) @ v, lse


def attention_backward(q, k, v, dout, is_causal=False):
    o, lse = flash_forward(q, k, v, is_causal)  # saved by the forward kernel
    softmax_scale = 1 / math.sqrt(q.size(-1))
    delta = (o * dout).sum(dim=-1, keepdim=True)
    p = torch.exp(q @ k.transpose(-2, -1) * softmax_scale - lse)
    dv = p.transpose(-2, -1) @ dout
    dp = dout @ v.transpose(-2, -1)
    ds = p * (dp - delta) * softmax_scale
    return ds @ k, ds.transpose(-2, -1) @ q, dv
# bug-line: 23
