# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_unstable + bool_mask_inverted
"""Interview whiteboard code: an assert before and after every step, with a message each."""
import math

import torch


def softmax(x, dim=-1):
    assert x.is_floating_point(), "softmax needs a float tensor"
    e = torch.exp(x)
    z = e.sum(dim=dim, keepdim=True)
    assert z.shape[dim] == 1, "the normaliser keeps the reduced dim"
    return e / z


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    assert query.dim() in (3, 4), f"3-D or 4-D inputs, got {query.dim()}-D"
    assert query.shape[-1] == key.shape[-1], "query and key must share E"
    assert key.shape[-2] == value.shape[-2], "key and value must share S"
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale_factor
    assert scores.shape[-2:] == (L, S), "scores are (..., L, S)"
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    out = softmax(scores, dim=-1) @ value
    assert out.shape[-1] == value.shape[-1], "output width is Ev"
    return out
# bug-line: 12, 31
