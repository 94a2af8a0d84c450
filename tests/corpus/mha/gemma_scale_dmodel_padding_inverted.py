# attnprep: mha
# expect: mask_leak
# diagnosis: scale_d_model + padding_mask_inverted
"""Gemma-ish query_pre_attn_scalar mistaken for the hidden size (scale 1/sqrt(d_model)), and the
padding mask read as True = pad through torch.where."""

import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hidden_size = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = d_model ** -0.5
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        shape = (B, T, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(shape).transpose(1, 2)
        k = self.k_proj(x).view(shape).transpose(1, 2)
        v = self.v_proj(x).view(shape).transpose(1, 2)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        neg = torch.finfo(w.dtype).min
        if attention_mask is not None:
            w = torch.where(attention_mask[:, None, None, :], neg, w)
        if is_causal:
            w = torch.where(torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), w, neg)
        w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v).transpose(1, 2).reshape(B, T, self.hidden_size)
        return self.o_proj(o)
