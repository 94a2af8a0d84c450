# attnprep: mha_fused
# expect: mask_leak
# diagnosis: causal_ignored
"""Never looks at is_causal; only the padding mask is applied."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.p = dropout
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, H, D) for t in (q, k, v))  # (B, T, H, D)

        scores = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(self.head_dim)

        bias = torch.zeros(B, 1, T, T, device=x.device, dtype=x.dtype)
        if attention_mask is not None:
            bias = torch.where(attention_mask[:, None, None, :], bias, float("-inf"))

        probs = torch.softmax(scores + bias, dim=-1)
        probs = F.dropout(probs, p=self.p, training=self.training)
        out = torch.einsum("bhij,bjhd->bihd", probs, v).reshape(B, T, C)
        return self.o_proj(out)
