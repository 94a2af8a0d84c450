# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero + alibi_bias_sign_flipped
"""Distances by torch.cdist on the positions (p = 1, so |i - j|), which the causal mask then limits
to j <= i; slopes from a geometric sequence built with torch.logspace."""
import math

import torch


def alibi_slopes(num_heads):
    def pow2(n):
        # 2^(-8/n), 2^(-16/n), ...: logspace over the exponents
        return torch.logspace(0, -8 * (n - 1) / n, n, base=2.0, dtype=torch.float64)

    n = 2 ** math.floor(math.log2(num_heads))
    slopes = pow2(n)
    if n < num_heads:
        slopes = torch.cat([slopes, pow2(2 * n)[0::2][: num_heads - n]])
    return slopes.to(torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    pos = torch.arange(T, device=q.device, dtype=torch.float32)[:, None]
    dist = torch.cdist(pos, pos, p=1)                                  # (T, T): |i - j|
    bias = alibi_slopes(H).to(q.device)[:, None, None] * dist          # (H, T, T)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + bias.to(q.dtype)
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 14, 28
