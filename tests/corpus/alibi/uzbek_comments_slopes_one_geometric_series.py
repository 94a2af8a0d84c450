# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""Uzbek comments; the slopes written as one geometric series 2^(-8i/H) over all heads, also when
H is not a power of two (the paper's interleaving rule left out)."""
import math

import torch


def alibi_slopes(num_heads):
    # Har bir bosh uchun qiyalik
    ratio = 2.0 ** (-8.0 / num_heads)
    return torch.tensor([ratio ** (i + 1) for i in range(num_heads)], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    # Masofa jarimasi: -m * (i - j)
    pos = torch.arange(T, device=q.device)
    rel = (pos[None, :] - pos[:, None]).float()  # j - i
    bias = alibi_slopes(H).to(q.device)[:, None, None] * rel
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D) + bias.to(q.dtype)
    # Kelajakni yopish
    scores = scores.masked_fill(pos[None, :] > pos[:, None], float("-inf"))
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
# bug-line: 13
