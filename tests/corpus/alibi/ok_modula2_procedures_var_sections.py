# attnprep: alibi
# expect: passed
"""A Modula-2 / Oberon programmer's habits: PROCEDURE blocks with a VAR section of declared locals
at the top (set to None or 0 before BEGIN), BEGIN / END comments around each body, FOR loops over
explicit ranges, and capitalised module constants."""
import math

import torch

NEG_INF = float("-inf")


def alibi_slopes(num_heads):
    # VAR n, i: INTEGER; slopes: ARRAY OF REAL
    n = 0
    slopes = []
    # BEGIN
    n = 1
    while n * 2 <= num_heads:
        n = n * 2
    for i in range(1, n + 1):
        slopes.append(2.0 ** (-8.0 * i / n))
    for i in range(1, num_heads - n + 1):
        slopes.append(2.0 ** (-4.0 * (2 * i - 1) / n))
    return torch.tensor(slopes, dtype=torch.float32)
    # END alibi_slopes


def alibi_attention(q, k, v, attention_mask=None):
    # VAR B, H, T, D: INTEGER; bias, scores: TENSOR
    B, H, T, D = q.shape
    bias = None
    scores = None
    # BEGIN
    slopes = alibi_slopes(H).to(q.device, q.dtype)
    rows = torch.arange(T, device=q.device)
    distance = (rows[:, None] - rows[None, :]).to(q.dtype)  # i - j
    bias = -slopes[:, None, None] * distance[None]  # (H, T, T)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias[None]
    future = rows[None, :] > rows[:, None]
    scores = scores.masked_fill(future, NEG_INF)
    if attention_mask is not None:
        scores = scores.masked_fill(~attention_mask[:, None, None, :], NEG_INF)
    return torch.softmax(scores, dim=-1) @ v
    # END alibi_attention
