# attnprep: causal
# expect: passed
"""Dense one-liners: the mask from a broadcast comparison of two aranges, the whole attention in one
return expression with an additive -inf bias built by torch.where: correct."""

import math

import torch


def causal_mask(seq_len, device=None):
    return (r := torch.arange(seq_len, device=device))[None, :] <= r[:, None]


def causal_attention(q, k, v, attention_mask=None):
    ok = causal_mask(q.shape[-2], q.device) & (True if attention_mask is None else attention_mask[:, None, None, :])
    return (torch.where(ok, 0.0, float("-inf")).to(q.dtype) + q @ k.mT / math.sqrt(q.shape[-1])).softmax(-1) @ v
