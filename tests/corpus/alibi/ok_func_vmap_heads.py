# attnprep: alibi
# expect: passed
"""Functional style with torch.func.vmap: one head's attention written for (T, D), mapped over the
heads and then over the batch, each head with its own slope."""
import math
import torch
from torch.func import vmap


def alibi_slopes(num_heads):
    n = 1 << (num_heads.bit_length() - 1)
    base = [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
    odd = [2.0 ** (-8.0 * (i + 0.5) / n) for i in range(num_heads - n)]
    return torch.tensor(base + odd, dtype=torch.float32)


def _one_head(q, k, v, slope, keep):
    T, D = q.shape
    idx = torch.arange(T, device=q.device)
    dist = (idx[:, None] - idx[None, :]).to(q.dtype)
    s = q @ k.T / math.sqrt(D) - slope * dist
    s = torch.where((dist >= 0) & keep[None, :], s, torch.full_like(s, -float("inf")))
    return torch.softmax(s, dim=-1) @ v


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    keep = attention_mask if attention_mask is not None else torch.ones(B, T, dtype=torch.bool, device=q.device)
    per_head = vmap(_one_head, in_dims=(0, 0, 0, 0, None))
    return vmap(per_head, in_dims=(0, 0, 0, None, 0))(q, k, v, slopes, keep)
