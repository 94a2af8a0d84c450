# attnprep: sdpa
# expect: mask_leak
# diagnosis: softmax_global_max + float_mask_multiplied
"""xformers' names: `attn_bias` (a bool or an additive tensor), `memory_efficient_attention`-like
signature adapted to the contract, `_materialize_causal(L, S)`, a hand-written softmax. Two slips,
one per function: softmax subtracts the max of the whole tensor (x.max()) instead of each row's,
and a float attn_bias is multiplied into the scores instead of added."""

import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - x.max())
    return e / e.sum(dim=dim, keepdim=True)


def _materialize_causal(L, S, device):
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    attn = (query @ key.transpose(-2, -1)) * scale
    attn_bias = attn_mask
    if is_causal:
        attn_bias = _materialize_causal(L, S, query.device)
    if attn_bias is not None:
        if attn_bias.dtype == torch.bool:
            attn = attn.masked_fill(~attn_bias, float("-inf"))
        else:
            attn = attn * attn_bias
    return softmax(attn, dim=-1) @ value
# bug-line: 15, 34
