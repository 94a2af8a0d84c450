# attnprep: causal
# expect: passed
"""Correct: mask from torch.heaviside on the (i - j) grid, padding as an additive float bias, nan_to_num guard."""
import torch


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device, dtype=torch.float32)
    diff = i[:, None] - i[None, :]
    return torch.heaviside(diff, torch.tensor(1.0, device=device)).bool()


def causal_attention(q, k, v, attention_mask=None):
    *_, T, D = q.shape
    scores = torch.einsum("...id,...jd->...ij", q, k) * D ** -0.5
    bias = torch.zeros(T, T, dtype=q.dtype, device=q.device).masked_fill(~causal_mask(T, q.device), float("-inf"))
    if attention_mask is not None:
        bias = bias + torch.zeros_like(attention_mask, dtype=q.dtype).masked_fill(~attention_mask, float("-inf"))[:, None, None, :]
    p = torch.softmax(scores + bias, dim=-1)
    return torch.einsum("...ij,...jd->...id", p, v)
