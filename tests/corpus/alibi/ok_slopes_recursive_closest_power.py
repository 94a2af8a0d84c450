# attnprep: alibi
# expect: passed
"""Correct: slopes by the paper's recursive get_slopes (closest power of two, then every other slope of 2n),
bias built with torch.tril of a negative distance grid, additive."""
import math
import torch


def _power_of_2(n):
    start = 2 ** (-(2 ** -(math.log2(n) - 3)))
    return [start * start ** i for i in range(n)]


def _get(n):
    if math.log2(n).is_integer():
        return _power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return _power_of_2(closest) + _get(2 * closest)[0::2][: n - closest]


def alibi_slopes(num_heads):
    return torch.tensor(_get(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    idx = torch.arange(T, device=q.device)
    rel = (idx[None, :] - idx[:, None]).to(q.dtype)                    # j - i  (<= 0 below the diagonal)
    bias = alibi_slopes(H).to(q.device, q.dtype)[:, None, None] * rel  # -m (i - j)
    s = q @ k.transpose(-1, -2) / math.sqrt(D) + bias
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    return torch.softmax(s.masked_fill(~keep, float("-inf")), -1) @ v
