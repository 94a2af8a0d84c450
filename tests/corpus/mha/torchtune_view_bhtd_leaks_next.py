# attnprep: mha
# expect: mask_leak
# diagnosis: split_heads_no_transpose + causal_leaks_next
"""torchtune-ish names; heads split with view(B, H, T, D) straight from (B, T, C) (no transpose), and
the causal mask built with triu(diagonal=2), letting each query see one future key."""

import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.output_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        b, s_x, _ = x.shape
        q = self.q_proj(x).view(b, self.num_heads, s_x, self.head_dim)
        k = self.k_proj(x).view(b, self.num_heads, s_x, self.head_dim)
        v = self.v_proj(x).view(b, self.num_heads, s_x, self.head_dim)
        attn = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            attn = attn.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            future = torch.triu(torch.ones(s_x, s_x, dtype=torch.bool, device=x.device), diagonal=2)
            attn = attn.masked_fill(future, float("-inf"))
        out = attn.softmax(-1) @ v
        out = out.transpose(1, 2).reshape(b, s_x, -1)
        return self.output_proj(out)
