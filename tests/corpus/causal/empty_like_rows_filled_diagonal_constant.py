# attnprep: causal
# expect: mask_leak
# diagnosis: causal_leaks_next
"""The output made with torch.empty_like and filled one batch item at a time (out[b] = ...), the
band's diagonal a module constant; the constant was 1, so each query also sees the next key."""
import math

import torch

BAND_DIAGONAL = 1


def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril(BAND_DIAGONAL)


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    out = torch.empty_like(q)
    allowed = causal_mask(T, q.device)
    for b in range(B):
        ok = allowed if attention_mask is None else allowed & attention_mask[b][None, :]
        s = q[b] @ k[b].transpose(-2, -1) / math.sqrt(D)
        s = s.masked_fill(~ok, float("-inf"))
        out[b] = torch.softmax(s, dim=-1) @ v[b]
    return out
# bug-line: 10
