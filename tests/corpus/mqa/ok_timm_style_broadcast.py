# attnprep: mqa
# expect: passed
"""timm Attention style (attn = (q @ k.transpose) * self.scale; attn.softmax; x.transpose.reshape), the
single K/V head left to broadcasting: correct."""

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        head_dim = d_model // num_heads
        self.scale = head_dim**-0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, head_dim)
        self.v_proj = nn.Linear(d_model, head_dim)
        self.attn_drop = nn.Dropout(dropout)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, N, C = x.shape
        q = self.q_proj(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        k = self.k_proj(x)[:, None]  # (B, 1, N, hd)
        v = self.v_proj(x)[:, None]
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        if is_causal:
            attn = attn.masked_fill(torch.ones(N, N, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.o_proj(x)
