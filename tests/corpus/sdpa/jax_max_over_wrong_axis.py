# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_max_wrong_dim
"""jax.nn.softmax ported by hand: the stabilising max is taken with axis=0 (a leftover of a 2-D test),
the exp and the sum over `dim`; overflow-safe only by luck."""

import math

import torch


def softmax(x, dim=-1):
    x_max = x.amax(dim=0, keepdim=True)
    unnormalized = torch.exp(x - x_max)
    return unnormalized / unnormalized.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    scale = query.shape[-1] ** -0.5 if scale is None else scale
    logits = torch.einsum("...le,...se->...ls", query, key) * scale
    L, S = logits.shape[-2:]
    if is_causal:
        logits = logits.masked_fill(~torch.ones(L, S, dtype=torch.bool, device=query.device).tril(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            logits = logits.masked_fill(~attn_mask, float("-inf"))
        else:
            logits = logits + attn_mask
    return torch.einsum("...ls,...sv->...lv", softmax(logits, dim=-1), value)
# bug-line: 13
