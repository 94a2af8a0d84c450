# attnprep: causal
# expect: mask_leak
# diagnosis: masks_ignored
"""The masks go in as an additive bias to torch.baddbmm, but beta=0 multiplies the bias by 0: both
masks are dropped. No masked_fill result is thrown away here, so this is not masked_fill_discarded."""

import math

import torch
import torch.nn.functional as F


def causal_mask(seq_len, device=None):
    # True where query i may attend key j, i.e. j <= i
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device))


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    allowed = causal_mask(T, q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]  # (B, 1, T, T)
    bias = torch.zeros(B, H, T, T, dtype=q.dtype, device=q.device).masked_fill(~allowed, float("-inf"))
    qf, kf = q.reshape(B * H, T, D), k.reshape(B * H, T, D)
    scores = torch.baddbmm(bias.reshape(B * H, T, T), qf, kf.transpose(1, 2), beta=0, alpha=1 / math.sqrt(D))
    attn = F.softmax(scores.view(B, H, T, T), dim=-1)
    return attn @ v  # (B, H, T, D)
