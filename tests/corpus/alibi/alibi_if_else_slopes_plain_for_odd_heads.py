# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""ALiBi with the slopes from an if / else on the head count, as interview notes write it from
memory: powers of two get 2^(-8i/H); the else branch was meant to interleave the slopes of the
closest power of two but just uses H as well. Right for 4 or 8 heads, wrong for 6."""

import math

import torch


def alibi_slopes(num_heads):
    if num_heads & (num_heads - 1) == 0:
        ratio = 2 ** (-8 / num_heads)
        return torch.tensor([ratio ** (i + 1) for i in range(num_heads)])
    else:
        ratio = 2 ** (-8 / num_heads)
        return torch.tensor([ratio ** (i + 1) for i in range(num_heads)])


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.dtype).to(q.device)
    pos = torch.arange(T, device=q.device)
    distance = (pos[None, :] - pos[:, None]).to(q.dtype)  # j - i, <= 0 on the allowed side
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + slopes[:, None, None] * distance
    allowed = pos[None, :] <= pos[:, None]
    if attention_mask is not None:
        allowed = allowed[None, None] & attention_mask[:, None, None, :].bool()
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v
# bug-line: 18
