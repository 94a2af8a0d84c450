# attnprep: attention_backward
# expect: used_builtin
# diagnosis: used_builtin
"""F.scaled_dot_product_attention for the forward, then a hand-written backward: SDPA is a built-in
everywhere."""
import math

import torch
import torch.nn.functional as F


def attention_backward(q, k, v, dout, is_causal=False):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    scale = 1.0 / math.sqrt(q.size(-1))
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    p = s.softmax(-1)
    ds = p * (dout @ v.transpose(-2, -1) - (dout * out).sum(-1, keepdim=True)) * scale
    return ds @ k, ds.transpose(-2, -1) @ q, p.transpose(-2, -1) @ dout
