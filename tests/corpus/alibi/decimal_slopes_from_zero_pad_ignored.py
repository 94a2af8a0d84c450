# attnprep: alibi
# expect: mask_leak
# diagnosis: alibi_slopes_from_zero + padding_mask_ignored
"""decimal.Decimal habits: the slopes are computed in exact decimal arithmetic (Decimal(2) **
exponent) and converted once; the head index ran from 0 (the first slope 1), and the attention
built its causal mask but never read attention_mask."""
import math
from decimal import Decimal, getcontext

import torch

getcontext().prec = 30


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    two = Decimal(2)
    slopes = [two ** (Decimal(-8) * i / n) for i in range(0, n)]
    extra = [two ** (Decimal(-4) * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor([float(s) for s in slopes + extra], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    pos = torch.arange(T, device=q.device)
    dist = (pos[:, None] - pos[None, :]).to(q.dtype)
    s = s - alibi_slopes(H).to(q)[:, None, None] * dist
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    s = s.masked_fill(~keep, float("-inf"))
    return s.softmax(-1) @ v
# bug-line: 18, 30
