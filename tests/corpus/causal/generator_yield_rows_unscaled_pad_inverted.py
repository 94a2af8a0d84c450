# attnprep: causal
# expect: mask_leak
# diagnosis: missing_scale + padding_mask_inverted
"""A generator that yields one query row's output at a time (each row its own softmax), the rows put
back together with torch.cat."""
import math

import torch


def causal_mask(seq_len, device=None):
    i = torch.arange(seq_len, device=device)
    return i[None, :] <= i[:, None]


def _rows(q, k, v, allowed):
    T = q.shape[-2]
    for i in range(T):
        s = q[..., i : i + 1, :] @ k.transpose(-1, -2)
        s = s.masked_fill(~allowed[..., i : i + 1, :], float("-inf"))  # (B, H, 1, T)
        yield torch.softmax(s, dim=-1) @ v


def causal_attention(q, k, v, attention_mask=None):
    allowed = causal_mask(q.shape[-2], q.device)  # (T, T)
    if attention_mask is not None:
        allowed = allowed & ~attention_mask[:, None, None, :]
    return torch.cat(list(_rows(q, k, v, allowed)), dim=-2)
# bug-line: 19, 27
