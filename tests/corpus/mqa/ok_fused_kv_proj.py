# attnprep: mqa
# expect: passed
"""Correct, a fused key/value projection: kv_proj = nn.Linear(d, 2 * head_dim) read with
.split(head_dim, dim=-1), Llama's repeat_kv for the one shared head. The grader maps
kv_proj's rows to k_proj and v_proj."""

import math

import torch
import torch.nn as nn


def repeat_kv(hidden, n_rep):
    B, G, T, D = hidden.shape
    if n_rep == 1:
        return hidden
    return hidden[:, :, None, :, :].expand(B, G, n_rep, T, D).reshape(B, G * n_rep, T, D)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        num_kv_heads = 1
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.head_dim)
        self.kv_proj = nn.Linear(d_model, 2 * num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(num_heads * self.head_dim, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        H, G, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, D).transpose(1, 2)
        k, v = self.kv_proj(x).split(G * D, dim=-1)
        k = repeat_kv(k.view(B, T, G, D).transpose(1, 2), H // G)
        v = repeat_kv(v.view(B, T, G, D).transpose(1, 2), H // G)
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        if is_causal:
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~causal, float("-inf"))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        attn = self.attn_dropout(scores.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(out)
