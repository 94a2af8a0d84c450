# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""`match` on the head count for the slopes (`case n if n & (n - 1) == 0:` for powers of two, then a
default case), generator expressions for the slope list, the bias as -slope·(i - j) from a
distance matrix. The default case reuses the power-of-two formula with the real head count,
2^(-8i/H), instead of the paper's interleaving; powers of two are right."""

import math

import torch


def alibi_slopes(num_heads):
    match num_heads:
        case n if n & (n - 1) == 0:
            slopes = (2 ** (-8 * i / n) for i in range(1, n + 1))
        case n:
            slopes = (2 ** (-8 * i / n) for i in range(1, n + 1))
    return torch.tensor(list(slopes), dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device)
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    bias = -slopes[:, None, None] * (i - j).to(q.dtype)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    allowed = (j <= i)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 18
