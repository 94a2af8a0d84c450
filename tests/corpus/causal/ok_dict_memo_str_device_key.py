# attnprep: causal
# expect: passed
"""Correct: masks kept in a module-level dict keyed by (seq_len, str(device)), each made on its device
(str(q.device) is "cuda:0" on a GPU: a device string made at run time is the input's device)."""
import math

import torch

_MASKS = {}


def causal_mask(seq_len, device=None):
    key = (seq_len, str(device))
    if key not in _MASKS:
        _MASKS[key] = torch.ones(seq_len, seq_len, device=device).tril().bool()
    return _MASKS[key]


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    keep = causal_mask(T, q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    return torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ v
