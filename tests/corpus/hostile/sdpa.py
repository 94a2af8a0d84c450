# attnprep: mha
# expect: used_builtin
# diagnosis: used_builtin
"""An MHA that hands the attention to F.scaled_dot_product_attention."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, H, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, D).transpose(1, 2)
        mask = None
        if attention_mask is not None:
            mask = attention_mask[:, None, None, :]
            if is_causal:
                mask = mask & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            is_causal = False  # SDPA refuses attn_mask together with is_causal
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                             dropout_p=self.dropout.p if self.training else 0.0)
        out = out.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
