"""ALiBi: attention with linear biases (Press et al., 2022; BLOOM, MPT), as two plain functions.

No position embedding at all: each head h adds -m_h · (i - j) to the score of query i and key j,
a penalty growing linearly with the distance. alibi_slopes gives the per-head slopes m_h, a
geometric sequence; alibi_attention adds the bias to q·kᵀ / sqrt(D) under the causal mask and an
optional key padding mask.
"""

import math

import torch
import torch.nn.functional as F


def alibi_slopes(num_heads: int) -> torch.Tensor:
    """float32 (H,): 2^(-8i/H) for i = 1..H when H is a power of two. Otherwise (the paper's code)
    the slopes of the closest power of two n below H, then every other slope of 2n heads."""
    n = 2 ** math.floor(math.log2(num_heads))  # the closest power of two <= H
    slopes = [2 ** (-8 * i / n) for i in range(1, n + 1)]  # n values, 2^(-8/n) .. 2^(-8)
    if n < num_heads:
        # 2^(-4(2i-1)/n): the odd-numbered slopes of 2n heads, the ones between those above
        slopes += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(slopes, dtype=torch.float32)  # (H,)


def alibi_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q·kᵀ / sqrt(D) - m_h·(i - j) + causal and padding masks)·v for q, k, v (B, H, T, D).

    attention_mask: optional bool (B, T), True = real token; padded keys get zero attention.
    """
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, D) @ (B, H, D, T) -> (B, H, T, T)
    slopes = alibi_slopes(H).to(device=q.device, dtype=q.dtype)  # (H,)
    pos = torch.arange(T, device=q.device)
    distance = (pos[:, None] - pos[None, :]).to(q.dtype)  # (T, T): i - j, >= 0 where j <= i
    scores = scores - slopes[:, None, None] * distance  # (B, H, T, T) - (H, 1, 1) * (T, T)
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()  # (T, T): j <= i
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (T, T) & (B, 1, 1, T) -> (B, 1, T, T)
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = F.softmax(scores, dim=-1)  # (B, H, T, T), each row sums to 1 over the keys j <= i
    return attn @ v  # (B, H, T, T) @ (B, H, T, D) -> (B, H, T, D)
