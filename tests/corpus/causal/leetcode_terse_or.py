# attnprep: causal
# expect: mask_leak
# diagnosis: masks_combined_or
"""LeetCode-style: as few lines and names as it takes, mT and ** .5; the padding mask is OR-ed into
the causal one (only batches with padding show it)."""
import torch


def causal_mask(n, device=None):
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def causal_attention(q, k, v, attention_mask=None):
    s, m = q @ k.mT / q.size(-1) ** .5, causal_mask(q.size(-2), q.device)
    if attention_mask is not None: m = m | attention_mask[:, None, None]
    return s.masked_fill(~m, -1e9).softmax(-1) @ v
# bug-line: 15
