# attnprep: flash
# expect: structure
"""A full softmax run with torch's dispatch modes switched off, so that nothing it allocates can be
measured: the structure check fails for want of a measure."""

import math

import torch
from torch.utils._python_dispatch import _disable_current_modes


def flash_attention(q, k, v, is_causal=False, block_size=64):
    with _disable_current_modes():
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if is_causal:
            scores = scores.masked_fill(torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.softmax(scores, dim=-1) @ v
