# attnprep: causal
# expect: mask_leak
# diagnosis: causal_mask_inverted + padding_mask_ignored
"""Lambdas in a dict for the building blocks (`OPS["tri"]`, `OPS["scores"]`, `OPS["fill"]`), the
two functions one-liners over them. Two slips, one per function: causal_mask returns triu(1), the
positions to block, where the contract wants True = allowed; causal_attention (which calls it and
inverts it back, so its causal part is right) never reads attention_mask."""

import math

import torch

OPS = {
    "tri": lambda T, device: torch.ones(T, T, dtype=torch.bool, device=device).triu(1),
    "scores": lambda q, k: q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]),
    "fill": lambda s, blocked: s.masked_fill(blocked, float("-inf")),
}


def causal_mask(seq_len, device=None):
    return OPS["tri"](seq_len, device)


def causal_attention(q, k, v, attention_mask=None):
    blocked = causal_mask(q.shape[-2], q.device)
    return torch.softmax(OPS["fill"](OPS["scores"](q, k), blocked), dim=-1) @ v
# bug-line: 21, 25
