# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""Projections by hand, attention by F.scaled_dot_product_attention with a combined bool mask."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

        mask = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            mask = mask.tril()
        mask = mask[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]  # (B, 1, T, T), True = attend

        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0
        )  # (B, H, T, D)
        out = out.transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(out)
