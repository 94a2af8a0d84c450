# attnprep: gqa
# expect: mask_leak
# diagnosis: mask_fill_zero
"""Loop over the KV groups; torch.where puts 0.0 at the masked scores instead of -inf."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.group_size = num_heads // num_kv_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        D = self.head_dim
        q = self.q_proj(x).reshape(B, T, self.num_heads, D).permute(0, 2, 1, 3)  # (B, H, T, D)
        k = self.k_proj(x).reshape(B, T, self.num_kv_heads, D).permute(0, 2, 1, 3)  # (B, G, T, D)
        v = self.v_proj(x).reshape(B, T, self.num_kv_heads, D).permute(0, 2, 1, 3)  # (B, G, T, D)

        keep = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            keep = keep & torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        if attention_mask is not None:
            keep = keep & attention_mask[:, None, None, :]

        outs = []
        for g in range(self.num_kv_heads):
            q_g = q[:, g * self.group_size:(g + 1) * self.group_size]  # (B, R, T, D)
            k_g = k[:, g:g + 1]  # (B, 1, T, D), broadcast over the R heads of the group
            v_g = v[:, g:g + 1]
            s = torch.matmul(q_g, k_g.transpose(-2, -1)) / math.sqrt(D)  # (B, R, T, T)
            s = torch.where(keep, s, 0.0)
            p = F.softmax(s, dim=-1)
            p = F.dropout(p, self.dropout, training=self.training)
            outs.append(torch.matmul(p, v_g))  # (B, R, T, D)

        out = torch.cat(outs, dim=1)  # (B, H, T, D)
        out = out.permute(0, 2, 1, 3).reshape(B, T, self.d_model)
        return self.o_proj(out)
