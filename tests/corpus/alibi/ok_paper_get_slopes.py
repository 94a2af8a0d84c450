# attnprep: alibi
# expect: passed
"""Correct, ofirpress's get_slopes from the paper's repository (a recursion for a head count that is
not a power of two), an einsum and torch.where masks."""

import math

import torch


def get_slopes(n):
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest_power_of_2) + get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]


def alibi_slopes(num_heads):
    return torch.tensor(get_slopes(num_heads), dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    context_position = torch.arange(T, device=q.device)[:, None]
    memory_position = torch.arange(T, device=q.device)[None, :]
    relative_position = memory_position - context_position  # j - i, <= 0 in the past
    bias = alibi_slopes(H).to(q.device)[:, None, None] * relative_position  # (H, T, T)
    scores = scores + bias
    keep = relative_position <= 0
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    scores = torch.where(keep, scores, torch.tensor(float("-inf"), device=q.device))
    weights = scores.softmax(dim=-1)
    return torch.einsum("bhij,bhjd->bhid", weights, v)
