# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_not_causal + padding_mask_on_queries
"""A distance matrix d = i - j built once (Portuguese comments), the window tested on it, the padding
mask broadcast from a (B, 1, T, 1) view."""
import math

import torch


def sliding_window_mask(seq_len, window, device=None):
    pos = torch.arange(seq_len, device=device)
    distancia = pos[:, None] - pos[None, :]  # d[i, j] = i - j
    return distancia.abs() < window


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, D = q.shape[-2], q.shape[-1]
    permitido = sliding_window_mask(T, window, q.device)  # (T, T)
    if attention_mask is not None:
        # chaves de padding não recebem atenção
        permitido = permitido & attention_mask[:, None, :, None]
    s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(D)
    s = s.masked_fill(~permitido, float("-inf"))
    return torch.einsum("bhij,bhjd->bhid", s.softmax(dim=-1), v)
# bug-line: 14, 22
