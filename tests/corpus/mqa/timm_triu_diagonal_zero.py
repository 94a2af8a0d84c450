# attnprep: mqa
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""timm-style block (self.scale = head_dim ** -0.5, attn.softmax(dim=-1)) with one K/V head; the causal
mask is built with triu(diagonal=0), which also blocks each query's own key."""

import torch
import torch.nn as nn


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        head_dim = d_model // num_heads
        self.head_dim = head_dim
        self.scale = head_dim ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, head_dim)
        self.v_proj = nn.Linear(d_model, head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, N, C = x.shape
        q = self.q_proj(x).reshape(B, N, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.k_proj(x).unsqueeze(1)
        v = self.v_proj(x).unsqueeze(1)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            blocked = torch.triu(torch.ones(N, N, dtype=torch.bool, device=x.device), diagonal=0)
            attn = attn.masked_fill(blocked, float("-inf"))
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.o_proj(x)
# bug-line: 34
