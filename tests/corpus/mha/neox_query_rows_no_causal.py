# attnprep: mha
# expect: mask_leak
# diagnosis: padding_mask_on_queries + causal_ignored
"""GPT-NeoX-style fused query_key_value (per-head interleaved): the padding mask masks query rows AND is_causal is never looked at (two mistakes)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_attention_heads = num_heads
        self.head_size = d_model // num_heads
        self.query_key_value = nn.Linear(d_model, 3 * d_model)
        self.dense = nn.Linear(d_model, d_model)
        self.norm_factor = self.head_size ** 0.5

    def forward(self, x, attention_mask=None, is_causal=False):
        b, t, _ = x.shape
        qkv = self.query_key_value(x).view(b, t, self.num_attention_heads, 3 * self.head_size)
        q, k, v = qkv.permute(0, 2, 1, 3).chunk(3, dim=-1)  # (b, nh, t, hs) each
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.norm_factor
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask[:, None, :, None] == 0, torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1)
        ctx = torch.einsum("bhqk,bhkd->bhqd", probs, v)
        ctx = ctx.permute(0, 2, 1, 3).reshape(b, t, -1)
        return self.dense(ctx)
