# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_slopes_from_zero
"""The ALiBi paper's get_slopes (ofirpress/attention_with_linear_biases) written with torch ops: the
power-of-two helper `start ** torch.arange(...)` with start = 2 ** (-2 ** -(log2(n) - 3)), and the
recursion `get_slopes(2 * closest)[0::2][: n - closest]` for other head counts; the bias as
`alibi = slopes[:, None, None] * -(i - j)` clamped to the causal part. The helper's exponents run
0 .. n-1 (the first slope is 1), and the recursion takes the other slopes from the same helper."""

import math

import torch


def _slopes_power_of_2(n):
    start = 2 ** (-(2 ** -(math.log2(n) - 3)))
    return start ** torch.arange(0, n, dtype=torch.float32)


def alibi_slopes(num_heads):
    if math.log2(num_heads).is_integer():
        return _slopes_power_of_2(num_heads)
    closest = 2 ** math.floor(math.log2(num_heads))
    return torch.cat([_slopes_power_of_2(closest), alibi_slopes(2 * closest)[0::2][: num_heads - closest]])


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(device=q.device, dtype=q.dtype)
    i = torch.arange(T, device=q.device).view(T, 1)
    j = torch.arange(T, device=q.device).view(1, T)
    alibi = slopes.view(H, 1, 1) * -(i - j).to(q.dtype)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D) + alibi
    keep = (j <= i).view(1, 1, T, T)
    if attention_mask is not None:
        keep = keep & attention_mask.view(B, 1, 1, T)
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) @ v
# bug-line: 17
