# attnprep: causal
# expect: passed
"""Correct: causal_mask decorated with @torch.no_grad(), a function attribute caching the last mask by
(T, device) and returning a clone."""
import math
import torch


@torch.no_grad()
def causal_mask(seq_len, device=None):
    key = (seq_len, str(device))
    cache = causal_mask.__dict__.setdefault("_cache", {})
    if key not in cache:
        cache[key] = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril_()
    return cache[key].clone()


def causal_attention(q, k, v, attention_mask=None):
    T = q.size(-2)
    keep = causal_mask(T, device=q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    return torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ v
