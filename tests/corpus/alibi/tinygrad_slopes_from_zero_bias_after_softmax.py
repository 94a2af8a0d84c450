# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero + alibi_bias_after_softmax
"""tinygrad-style ALiBi: slopes from a list comprehension turned into a tensor, the distance from
`arange[:, None] - arange[None, :]`, masks with where and -inf, `.softmax(-1)` as a method. Two
slips, one per function: the slopes are 2^(-8i/n) for i = 0 .. n-1 (starting at 1), and the bias is
subtracted from the probabilities after the softmax."""

import math

import torch


def alibi_slopes(num_heads):
    n = 2 ** math.floor(math.log2(num_heads))
    s = [2 ** (-8 * i / n) for i in range(n)]
    s += [2 ** (-4 * (2 * i - 1) / n) for i in range(1, num_heads - n + 1)]
    return torch.tensor(s, dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    i = torch.arange(T, device=q.device)
    dist = (i[:, None] - i[None, :]).to(q.dtype)
    allowed = (i[None, :] <= i[:, None])
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    s = torch.where(allowed, q @ k.transpose(-2, -1) / math.sqrt(D), float("-inf"))
    p = s.softmax(-1) - alibi_slopes(H).to(q.device, q.dtype)[:, None, None] * dist
    return torch.where(allowed, p, 0.0) @ v
# bug-line: 16, 28, 29
