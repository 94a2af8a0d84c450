# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_reversed
"""alibi_slopes is right, but the attention builds its slopes again with the exponent counting down."""

import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    slopes = [2 ** (-8 * i / n) for i in range(1, n + 1)]
    slopes += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    pos = torch.arange(T, device=q.device)
    distance = (pos[:, None] - pos[None, :]).to(q.dtype)
    n = 2 ** math.floor(math.log2(H))
    own = [2 ** (-8 * i / n) for i in range(1, n + 1)] + [2 ** (-4 * (2 * i - 1) / n) for i in range(1, H - n + 1)]
    slopes = torch.tensor(list(reversed(own)), device=q.device)
    scores = scores - slopes[:, None, None] * distance
    allowed = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    attn = scores.softmax(dim=-1)
    return attn @ v
# bug-line: 25
