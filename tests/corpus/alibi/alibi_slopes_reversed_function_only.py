# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""alibi_slopes reversed with torch.flip, but the attention computes its own slopes, right: its outputs match the reference; graded on its own, the slopes function carries the mistake."""

import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    slopes = [2 ** (-8 * i / n) for i in range(1, n + 1)]
    slopes += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.flip(torch.tensor(slopes, dtype=torch.float32), dims=[0])


def _slopes_list(H):
    n = 2 ** math.floor(math.log2(H))
    return [2 ** (-8 * i / n) for i in range(1, n + 1)] + [2 ** (-4 * (2 * i - 1) / n) for i in range(1, H - n + 1)]


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    pos = torch.arange(T, device=q.device)
    distance = (pos[:, None] - pos[None, :]).to(q.dtype)
    slopes = torch.tensor(_slopes_list(H), device=q.device)
    scores = scores - slopes[:, None, None] * distance
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = scores.softmax(dim=-1)
    return attn @ v
