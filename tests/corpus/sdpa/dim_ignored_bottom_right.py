# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_dim_ignored + causal_bottom_right
"""softmax always normalises the last dim whatever dim says, and the causal mask is aligned
bottom-right (FlashAttention 2.1's convention): two objects, one mistake each."""

import torch


def softmax(x, dim=-1):
    shifted = x - x.amax(-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(-1, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale = query.size(-1) ** -0.5 if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale
    if is_causal:
        allowed = torch.ones(L, S, dtype=torch.bool, device=query.device).tril(diagonal=S - L)
        scores = scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    return softmax(scores, dim=-1) @ value
