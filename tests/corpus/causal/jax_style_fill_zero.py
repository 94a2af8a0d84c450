# attnprep: causal
# expect: mask_leak
# diagnosis: mask_fill_zero
"""jax.numpy habits (jnp.where(mask, s, 0)-like): the blocked scores are set to 0 instead of -inf, so the
masked keys still get exp(0) of weight."""

import math

import torch


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[:, None] >= i[None, :]


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    allowed = causal_mask(T, q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :].bool()
    logits = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(D)
    logits = torch.where(allowed, logits, torch.zeros_like(logits))
    weights = torch.softmax(logits, axis=-1)
    return torch.einsum("...qk,...kd->...qd", weights, v)
# bug-line: 23
