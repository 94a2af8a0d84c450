# attnprep: alibi
# expect: passed
"""MPT-like: slopes from the BLOOM formula (base ** p), the bias as -slope·(i - j) built from one
arange, torch.where with finfo.min, typed."""

import math
from typing import Optional

import torch
from torch import Tensor


def alibi_slopes(num_heads: int) -> Tensor:
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base ** p for p in range(1, closest + 1)]
    if closest != num_heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        slopes += [extra ** p for p in range(1, 2 * (num_heads - closest), 2)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q: Tensor, k: Tensor, v: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor:
    B, H, T, D = q.shape
    scores = torch.einsum("bhid,bhjd->bhij", q, k) * D ** -0.5
    r = torch.arange(T, device=q.device)
    dist = (r[None, :] - r[:, None]).to(q.dtype)  # j - i, <= 0 where allowed
    scores = scores + alibi_slopes(H).to(q)[:, None, None] * dist
    keep = (r[None, :] <= r[:, None])[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :].bool()
    scores = torch.where(keep, scores, torch.finfo(scores.dtype).min)
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
