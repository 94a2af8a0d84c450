# attnprep: sdpa
# expect: wrong_output
# diagnosis: softmax_max_wrong_dim + scale_value_dim
"""jax.nn.softmax's signature ported (axis, where, initial): the max is stop-gradient'ed with
.detach(), masked entries excluded through `where`; the attention reads its sizes from the
tensors' last dims."""
import math

import torch


def softmax(x, dim=-1, where=None, initial=float("-inf")):
    if where is not None:
        x = torch.where(where, x, torch.full_like(x, initial))
    x_max = x.amax(-1, keepdim=True).detach()
    x_max = torch.where(torch.isneginf(x_max), torch.zeros_like(x_max), x_max)
    unnormalized = torch.exp(x - x_max)
    return unnormalized / unnormalized.sum(dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    depth = value.shape[-1]
    scale = 1.0 / math.sqrt(depth) if scale is None else scale
    logits = torch.einsum("...qd,...kd->...qk", query, key) * scale
    where = None
    if is_causal:
        where = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
    elif attn_mask is not None and attn_mask.dtype == torch.bool:
        where = attn_mask
    elif attn_mask is not None:
        logits = logits + attn_mask
    weights = softmax(logits, dim=-1, where=where)
    return torch.einsum("...qk,...kd->...qd", weights, value)
# bug-line: 15, 23
