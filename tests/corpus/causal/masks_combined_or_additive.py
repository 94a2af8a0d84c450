# attnprep: causal
# expect: mask_leak
# diagnosis: masks_combined_or
"""arange mask and an additive -inf bias, but the padding mask is OR-ed into the causal one."""

import torch


def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return idx[None, :] <= idx[:, None]  # [i, j] = j <= i


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    q = q * D ** -0.5
    allowed = causal_mask(T, q.device).expand(B, 1, T, T)
    if attention_mask is not None:
        allowed = allowed | attention_mask.view(B, 1, 1, T)
    bias = torch.where(allowed, 0.0, float("-inf")).to(q.dtype)  # additive mask
    attn = torch.softmax(q @ k.transpose(-1, -2) + bias, dim=-1)
    return attn @ v
