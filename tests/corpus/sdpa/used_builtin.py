# attnprep: sdpa
# expect: used_builtin
# diagnosis: used_builtin
"""A hand-written softmax, then F.scaled_dot_product_attention does the attention."""

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
