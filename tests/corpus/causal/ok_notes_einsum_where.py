# attnprep: causal
# expect: passed
"""面经 style: a mask function from arange comparisons, einsum scores, one torch.where for both masks."""

import math

import torch


def causal_mask(seq_len, device=None):
    r = torch.arange(seq_len, device=device)
    return r.unsqueeze(0) <= r.unsqueeze(1)  # [i, j] = j <= i


def causal_attention(q, k, v, attention_mask=None):
    # q, k, v: (B, H, T, D)
    B, H, T, D = q.shape
    s = torch.einsum("bhid,bhjd->bhij", q, k) * (1.0 / math.sqrt(D))
    keep = causal_mask(T, q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        keep = keep & attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
    s = torch.where(keep, s, torch.full_like(s, float("-inf")))
    return torch.einsum("bhij,bhjd->bhid", s.softmax(dim=-1), v)
