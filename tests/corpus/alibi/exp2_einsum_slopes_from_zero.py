# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero
"""Slopes as one tensor expression (torch.exp2 of a ratio times an arange, no Python list), the bias
as an outer product written with einsum ("h,ij->hij"), the distances from torch.cdist-like
broadcasting, masks with torch.where and finfo.min, a stats-style `probs` / `ctx` naming. The
power-of-two heads' exponents run from 0 (arange(0, n)) instead of from 1, so the first head gets
no penalty at all and every other slope is the next head's."""

import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    ratio = -8.0 / n
    base = torch.exp2(ratio * torch.arange(0, n, dtype=torch.float32))
    if n == num_heads:
        return base
    odd = torch.exp2((ratio / 2) * torch.arange(1, 2 * (num_heads - n), 2, dtype=torch.float32))
    return torch.cat([base, odd])


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    dtype, device = q.dtype, q.device
    m = alibi_slopes(H).to(device=device, dtype=dtype)
    positions = torch.arange(T, device=device, dtype=dtype)
    dist = positions[:, None] - positions[None, :]  # i - j
    bias = torch.einsum("h,ij->hij", m, dist)  # (H, T, T)
    logits = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D) - bias
    keep = (dist >= 0)[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    logits = torch.where(keep, logits, torch.finfo(dtype).min)
    probs = logits.softmax(dim=-1)
    ctx = torch.einsum("bhij,bhjd->bhid", probs, v)
    return ctx
# bug-line: 18
