# attnprep: causal
# expect: mask_leak
# diagnosis: mask_fill_zero + padding_mask_on_queries
# terse, minbpe-like: short names, one-liners, no docstrings beyond one line
import torch


def causal_mask(n, device=None):
    """True where j <= i."""
    i = torch.arange(n, device=device)
    return i[None, :] <= i[:, None]


def causal_attention(q, k, v, attention_mask=None):
    """q, k, v: (B, H, T, D)."""
    T, D = q.shape[-2:]
    a = q @ k.mT / D ** 0.5
    ok = causal_mask(T, q.device)
    if attention_mask is not None:
        ok = ok & attention_mask[:, None, :, None]
    a = a.masked_fill(~ok, 0.0)
    return a.softmax(-1) @ v
# bug-line: 20, 21
