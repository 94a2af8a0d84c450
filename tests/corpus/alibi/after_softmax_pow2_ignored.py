# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored + alibi_bias_after_softmax
"""Slopes 2^(-8i/H) for every head count (the power-of-two rule ignored), and the bias added to the
probabilities after the softmax."""
import math
import torch


def alibi_slopes(num_heads):
    return torch.tensor([2 ** (-8 * i / num_heads) for i in range(1, num_heads + 1)], dtype=torch.float32)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    p = s.masked_fill(~keep, float("-inf")).softmax(-1)
    i = torch.arange(T, device=q.device)
    bias = -alibi_slopes(H).to(q)[:, None, None] * (i[:, None] - i[None, :]).to(q)
    p = torch.where(keep, p + bias, p)
    return p @ v
