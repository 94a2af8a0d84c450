# attnprep: alibi
# expect: passed
"""MPT's gen_slopes / build_alibi_bias: slopes 1 / 2^(8·i/n), the non-power-of-two case by interleaving
the slopes of 2n heads and keeping the odd ones first, bias -(i - j) * slope: correct."""

import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.ceil(math.log2(num_heads))
    m = torch.arange(1, n + 1, dtype=torch.float32) * (8.0 / n)
    slopes = 1.0 / torch.pow(2, m)
    if n != num_heads:
        slopes = torch.cat([slopes[1::2], slopes[::2]])[:num_heads]
    return slopes


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    rel = torch.arange(1 - T, 1, device=q.device, dtype=torch.float32)[None, :]  # j - (T-1)
    rel = rel - torch.arange(1 - T, 1, device=q.device, dtype=torch.float32)[:, None]  # j - i
    bias = (rel[None] * alibi_slopes(H).to(q.device)[:, None, None]).to(q.dtype)  # (H, T, T) = -slope·(i - j)
    s = q @ k.transpose(-1, -2) * D ** -0.5 + bias
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    return s.masked_fill(~keep, float("-inf")).softmax(-1) @ v
