# attnprep: mqa
# expect: mask_leak
# diagnosis: masks_combined_or
"""One combined boolean mask, but causal and padding are combined with | : a key passes if either mask allows it."""

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, self.head_dim)
        self.v_proj = nn.Linear(d_model, self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, D = self.num_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = self.k_proj(x).view(B, 1, T, D).expand(B, H, T, D)  # same K for every head
        v = self.v_proj(x).view(B, 1, T, D).expand(B, H, T, D)

        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # (B, H, T, T)

        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device)
        if is_causal:
            allowed = allowed.tril()
        allowed = allowed.expand(B, 1, T, T)
        if attention_mask is not None:
            allowed = allowed | attention_mask[:, None, None, :]
        scores = scores.masked_fill(~allowed, -1e9)

        attn = self.attn_dropout(scores.softmax(dim=-1))
        out = torch.matmul(attn, v)  # (B, H, T, D)
        out = out.transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
# bug-line: 36
