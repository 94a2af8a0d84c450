# attnprep: causal
# expect: error
# diagnosis: tensor_without_device
"""Module-level max-length tril cache sliced without .to(device): lives on the CPU whatever device is asked for."""

import math

import torch

_TRIL = torch.tril(torch.ones(256, 256, dtype=torch.bool))


def causal_mask(seq_len, device=None):
    return _TRIL[:seq_len, :seq_len]


def causal_attention(q, k, v, attention_mask=None):
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    allowed = causal_mask(q.shape[-2], q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v
