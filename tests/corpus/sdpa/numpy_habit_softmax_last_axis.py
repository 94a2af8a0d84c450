# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_dim_ignored
"""numpy habits (axis=-1 everywhere, np.where for the masks, keepdims): the softmax helper takes a
dim argument and never uses it. Attention only ever calls it on the last axis, so only a direct call
with another dim shows it."""
import math
import torch


def softmax(x, dim=-1):
    x = x - x.max(axis=-1, keepdim=True).values
    e = torch.exp(x)
    return e / e.sum(axis=-1, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    s = (query @ key.swapaxes(-1, -2)) * scale
    neg = torch.tensor(float("-inf"), dtype=s.dtype, device=s.device)
    if is_causal:
        s = torch.where(torch.ones(L, S, dtype=torch.bool, device=s.device).tril(), s, neg)
    if attn_mask is not None:
        s = torch.where(attn_mask, s, neg) if attn_mask.dtype == torch.bool else s + attn_mask
    return softmax(s, dim=-1) @ value
# bug-line: 12
