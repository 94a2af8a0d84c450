# attnprep: causal
# expect: passed
"""Correct: Flax-linen habits ported, `dot_product_attention_weights` / `dot_product_attention` for a
single (T, D) head, lifted over heads and batch with torch.func.vmap the way `nn.vmap` /
`jax.vmap` lift a per-example function, the key padding row passed as a vmapped argument (a row of
ones when there is none); the transform's result is then made contiguous and cast back to q's
dtype, and the mask comes from causal_mask on q's device."""

import math

import torch
from torch.func import vmap


def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return idx[None, :] <= idx[:, None]


def dot_product_attention_weights(query, key, keep):
    logits = query @ key.T / math.sqrt(query.shape[-1])
    return torch.where(keep, logits, float("-inf")).softmax(dim=-1)


def dot_product_attention(query, key, value, pad_row, tri):
    keep = tri & pad_row[None, :]
    return dot_product_attention_weights(query, key, keep) @ value


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    tri = causal_mask(T, q.device)
    pad = attention_mask if attention_mask is not None else torch.ones(B, T, dtype=torch.bool, device=q.device)
    per_head = vmap(dot_product_attention, in_dims=(0, 0, 0, None, None))
    per_sample = vmap(per_head, in_dims=(0, 0, 0, 0, None))
    out = per_sample(q.float(), k.float(), v.float(), pad, tri)
    return out.contiguous().to(q.dtype)
