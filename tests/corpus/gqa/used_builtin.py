# attnprep: gqa
# expect: used_builtin
# diagnosis: used_builtin
"""GQA that hands the attention to F.scaled_dot_product_attention(..., enable_gqa=True)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, G, T, D)
        v = self.v_proj(x).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)  # (B, G, T, D)

        # SDPA refuses attn_mask together with is_causal=True, so build one boolean mask
        allowed = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]

        out = F.scaled_dot_product_attention(
            q, k, v,
            attn_mask=allowed,
            dropout_p=self.dropout if self.training else 0.0,
            enable_gqa=True,
        )  # (B, H, T, D)
        out = out.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
