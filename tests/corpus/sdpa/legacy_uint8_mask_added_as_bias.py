# attnprep: sdpa
# expect: mask_leak
# diagnosis: bool_mask_added
"""PyTorch 0.4-era habits: masks thought of as ByteTensors (`mask.data`, `.type_as(scores)`,
`1 - mask` arithmetic), `torch.max(x, dim)[0]`, `x.size(-1)` everywhere, `math.sqrt` on sizes. A bool
attn_mask is cast to the scores' type and added as if it were a float mask (0 or 1 added, nothing
blocked); float masks and is_causal are right."""

import math

import torch


def softmax(x, dim=-1):
    x_max = torch.max(x, dim, keepdim=True)[0]
    e = torch.exp(x - x_max)
    return e / torch.sum(e, dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    d_k = query.size(-1)
    scale = scale if scale is not None else 1.0 / math.sqrt(d_k)
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        L, S = query.size(-2), key.size(-2)
        keep = torch.ones(L, S, device=query.device).tril().byte()
        scores = scores.masked_fill(keep.data == 0, -float("inf"))
    if attn_mask is not None:
        scores = scores + attn_mask.type_as(scores)
    p_attn = softmax(scores, dim=-1)
    return torch.matmul(p_attn, value)
# bug-line: 29
