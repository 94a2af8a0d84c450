# attnprep: causal
# expect: used_builtin
# diagnosis: used_builtin
"""Builds the masks by hand, then calls F.scaled_dot_product_attention."""

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    T = q.shape[-2]
    if attention_mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    allowed = causal_mask(T, q.device) & attention_mask[:, None, None, :]  # (B, 1, T, T)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
