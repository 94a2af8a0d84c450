# attnprep: mha
# expect: wrong_output
# diagnosis: attn_times_k
"""The projections kept in a plain dict built once in __init__ (`self.project["q"](x)`), a helper
that projects and splits by role name, einops-like shapes in comments, masks as additive -inf."""
import math

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)
        self.project = {
            "q": self.q_proj,
            "k": self.k_proj,
            "v": self.k_proj,
        }

    def split(self, x, role):
        b, t, _ = x.shape
        return self.project[role](x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # b h t d

    def forward(self, x, attention_mask=None, is_causal=False):
        b, t, c = x.shape
        q, k, v = (self.split(x, role) for role in "qkv")
        bias = torch.zeros(b, 1, t, t, device=x.device)  # b 1 t t
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:
            bias = bias + torch.full((t, t), float("-inf"), device=x.device).triu(1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + bias  # b h t t
        weights = self.drop(scores.softmax(dim=-1))
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, c))
# bug-line: 24
