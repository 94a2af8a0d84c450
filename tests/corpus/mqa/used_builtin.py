# attnprep: mqa
# expect: used_builtin
# diagnosis: used_builtin
"""Shared K/V expanded over the heads, then F.scaled_dot_product_attention does the attention."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x)[:, None].expand(B, H, T, D)
        v = self.v_proj(x)[:, None].expand(B, H, T, D)

        mask = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            mask = mask.tril()
        mask = mask[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask[:, None, None, :]
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)  # (B, H, T, D)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
