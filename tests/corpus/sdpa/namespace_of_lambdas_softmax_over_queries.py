# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_wrong_dim
"""The stages kept as keyword lambdas of one `types.SimpleNamespace(...)` call, read as `ops.bias(...)`,
`ops.scores(...)`, `ops.weights(...)`: a notebook habit of naming each step. The "weights" lambda
normalises over the queries (dim=-2) instead of the keys."""

import math
import types

import torch


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


ops = types.SimpleNamespace(
    bias=lambda L, S, like: torch.zeros(L, S, dtype=like.dtype, device=like.device),
    causal=lambda L, S, dev: torch.ones(L, S, dtype=torch.bool, device=dev).tril(diagonal=0),
    scores=lambda q, k, s: q @ k.transpose(-2, -1) * s,
    weights=lambda a: softmax(a, dim=-2),
)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = ops.bias(L, S, query)
    if is_causal:
        attn_bias = attn_bias.masked_fill(ops.causal(L, S, query.device).logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias = attn_bias.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_bias + attn_mask
    attn_weight = ops.weights(ops.scores(query, key, scale_factor) + attn_bias)
    return attn_weight @ value
# bug-line: 24
