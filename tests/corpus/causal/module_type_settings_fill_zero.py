# attnprep: causal
# expect: mask_leak
# diagnosis: mask_fill_zero
"""A settings "module" made at run time with types.ModuleType, its attributes set like a config
file's globals and read by the attention; the fill for blocked scores was set to 0.0."""
import math
import types

import torch

settings = types.ModuleType("attention_settings")
settings.FILL = 0.0
settings.SOFTMAX_DIM = -1


def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return idx[None, :] <= idx[:, None]


def causal_attention(q, k, v, attention_mask=None):
    T, D = q.shape[-2:]
    w = q @ k.transpose(-2, -1) / math.sqrt(D)
    keep = causal_mask(T, device=q.device)
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, None, :]
    w = torch.where(keep, w, torch.full_like(w, settings.FILL))
    return torch.softmax(w, dim=settings.SOFTMAX_DIM) @ v
# bug-line: 12
